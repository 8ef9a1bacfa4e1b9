"""The project state on any engine: every change in one transaction.

:class:`Store` combines the store's concerns, each a mixin in its own module over the shared
connection of :class:`~crowdprefs.campaign.store.base.StoreBase`: the core's here, and the roles
of the crowds that keep state of their own beside their adapters (``crowds/<name>/store.py``;
a new one is one more base below). The tables and their migrations are in
:mod:`crowdprefs.campaign.store.schema`.
"""

from __future__ import annotations

from crowdprefs.campaign.store.answers import Answers
from crowdprefs.campaign.store.batches import Batches
from crowdprefs.campaign.store.collection import Collection
from crowdprefs.campaign.store.hits import Hits
from crowdprefs.campaign.store.reviews import Reviews
from crowdprefs.crowds.prolific.store import ProlificStore
from crowdprefs.crowds.web.store import WebStore


class Store(Collection, Batches, Hits, Answers, Reviews, WebStore, ProlificStore):
    """A project's state, in a SQLite file or a PostgreSQL database: the collection, batches
    and pairs, HITs, answers, reviews, the web crowd's judges and assignments, and the Prolific
    study.

    Open it with ``Store(path_or_address)`` (``create=True`` for a new one); its first change
    takes the project lock, held until :meth:`close` (``lock=False``: never, for a web server).
    """
