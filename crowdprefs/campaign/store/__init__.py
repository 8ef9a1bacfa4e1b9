"""The project's state: the only place with SQL on it.

:class:`Store` is the SQLite implementation; its typed methods (returning plain Python objects
and DataFrames with documented columns) are the whole interface the rest of the package uses,
grouped by concern: ``collection`` (meta, queries, candidates, clips), ``batches`` (batches,
pairs, the batch state machine, verdicts, the sort cache), ``hits`` (what each crowd holds and
its price), ``answers`` and ``reviews``. Another database can implement the same methods.
"""

from crowdprefs.campaign.store.base import now
from crowdprefs.campaign.store.schema import MIGRATIONS, SCHEMA_VERSION
from crowdprefs.campaign.store.sqlite import Store

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Store", "now"]
