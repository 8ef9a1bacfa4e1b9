"""The project's state: the only place with SQL on it.

:class:`Store` works on any engine SQLAlchemy compiles for: a SQLite file (the default) or a
PostgreSQL database (``[store] url``). Its typed methods (returning plain Python objects and
DataFrames with documented columns) are the whole interface the rest of the package uses,
grouped by concern: ``collection`` (meta, queries, candidates, clips), ``batches`` (batches,
pairs, the batch state machine, verdicts, the sort cache), ``hits`` (what each crowd holds and
its price), ``answers``, ``reviews``, ``web`` (the web crowd's judges, hand-outs and the
server's shared state) and ``prolific``. Nothing outside the store learns which engine it runs
on.
"""

from crowdprefs.campaign.store.base import copy_state, now
from crowdprefs.campaign.store.location import Location
from crowdprefs.campaign.store.schema import SCHEMA_VERSION
from crowdprefs.campaign.store.store import Store

__all__ = ["SCHEMA_VERSION", "Location", "Store", "copy_state", "now"]
