"""The CLI's consoles: tables and results on stdout, errors beside the progress on stderr;
``escape`` makes untrusted text (names, worker text) safe to print."""

from __future__ import annotations

from rich.console import Console

from crowdprefs.progress import escape
from crowdprefs.progress import stderr as err_console

console = Console()

__all__ = ["console", "err_console", "escape"]
