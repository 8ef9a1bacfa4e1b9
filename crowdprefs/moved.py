"""Public names that moved keep answering at their old address, with a ``DeprecationWarning``
naming the new one, for a release: a user's script breaks loudly later, not silently now."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping


def moved_names(old: str, moves: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of module ``old``: each name of ``moves`` answers from its new
    home, ``"module"`` (the same name) or ``"module:name"`` (renamed), with a warning; any other
    name is the usual ``AttributeError``."""

    def __getattr__(name: str) -> object:
        if name not in moves:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        module, _, new = moves[name].partition(":")
        new = new or name
        warnings.warn(
            f"{old}.{name} moved to {module}.{new}: import it from there (the old name goes in "
            "the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), new)

    return __getattr__
