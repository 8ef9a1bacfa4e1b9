"""The project state on any engine: every change in one transaction.

:class:`Store` combines the store's concerns, each a mixin in its own module over the shared
connection of :class:`~crowdprefs.campaign.store.base.StoreBase`: the core's here, and the role
of each crowd that keeps state of its own, taken from the crowd platforms' registry
(:func:`crowdprefs.registry.state_parts`, each a :class:`~.schema.StatePart` beside its
adapter) when this module is first imported, that is when the first store of the process is
used. The store names no crowd: their roles become bases of :class:`Store`, their migrations
steps of its one schema history (:func:`~.schema.history`), their tables are on the one
``metadata``.
"""

from __future__ import annotations

import importlib

from crowdprefs import registry
from crowdprefs.campaign.store.answers import Answers
from crowdprefs.campaign.store.batches import Batches
from crowdprefs.campaign.store.collection import Collection
from crowdprefs.campaign.store.hits import Hits
from crowdprefs.campaign.store.reviews import Reviews
from crowdprefs.campaign.store.schema import StatePart, history


def state_part(address: str) -> StatePart:
    """The :class:`~.schema.StatePart` at ``address`` (``module:NAME``), imported."""
    module, _, name = address.partition(":")
    part = getattr(importlib.import_module(module), name)
    if not isinstance(part, StatePart):
        raise TypeError(f"{address} is not a StatePart of the project's store")
    return part


PARTS = tuple(state_part(address) for address in registry.state_parts())
"""The crowds' state parts, in registry order."""


class Store(Collection, Batches, Hits, Answers, Reviews, *(part.role for part in PARTS)):
    """A project's state, in a SQLite file or a PostgreSQL database: the collection, batches
    and pairs, HITs, answers, reviews, and the state of the crowds that keep their own (the web
    crowd's judges and assignments, the Prolific study).

    Open it with ``Store(path_or_address)`` (``create=True`` for a new one); its first change
    takes the project lock, held until :meth:`close` (``lock=False``: never, for a web server).
    """

    HISTORY = history(part.migrations for part in PARTS)
