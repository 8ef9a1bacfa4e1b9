"""The project's state: the only place with SQL on it.

:class:`Store` works on any engine SQLAlchemy compiles for: a SQLite file (the default) or a
PostgreSQL database (``[store] url``). Its typed methods (returning plain Python objects and
DataFrames with documented columns) are the whole interface the rest of the package uses,
grouped by concern: ``collection`` (meta, queries, candidates, clips), ``batches`` (batches,
pairs, the batch state machine, verdicts, the sort cache), ``hits`` (what each crowd holds and
its price), ``answers`` and ``reviews``; a crowd with state of its own keeps its role, tables
and migrations beside its adapter and names them in its entry of the crowd platforms'
registry (:data:`crowdprefs.registry.PLATFORMS`): the store takes them from there, over the
same connection and transaction, and imports no crowd. Nothing outside the store learns which
engine it runs on.
"""

from crowdprefs.campaign.store.base import copy_state, now
from crowdprefs.campaign.store.location import Location

__all__ = ["SCHEMA_VERSION", "Location", "Store", "copy_state", "now"]


def __getattr__(name: str) -> object:
    """:class:`~crowdprefs.campaign.store.store.Store` and :data:`SCHEMA_VERSION` (its schema's
    version), imported on first use: the store takes the crowds' store roles, which import the
    store's base, so importing a role first (say :mod:`crowdprefs.crowds.web.sql`) must not
    import the roles back half-made."""
    if name not in ("Store", "SCHEMA_VERSION"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from crowdprefs.campaign.store.store import Store

    return Store if name == "Store" else len(Store.HISTORY)
