"""MkDocs hook: the docstrings' Sphinx roles (``:func:`name```) shown as plain code spans.

The docstrings are written for the reader of the source and cite other objects with roles;
mkdocstrings renders the role's target as code and would leave the role's name before it.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|obj|exc):(<code>)~?")


def on_page_content(html: str, **_: object) -> str:
    return ROLE.sub(r"\1", html)
