"""The project's state: the only place with SQL on it.

:class:`Store` is the SQLite implementation; its methods are the whole interface the rest of
the package uses (typed, returning plain Python or pandas objects), so another database can
implement the same methods.
"""

from crowdprefs.campaign.store.schema import MIGRATIONS, SCHEMA_VERSION
from crowdprefs.campaign.store.sqlite import (
    ANSWER_COLUMNS,
    CLIP_JOINS,
    LISTEN_SECONDS,
    Store,
    now,
)

__all__ = [
    "ANSWER_COLUMNS",
    "CLIP_JOINS",
    "LISTEN_SECONDS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Store",
    "now",
]
