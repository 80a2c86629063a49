"""Where a host keeps sessions, turns and lineage: `MemoryStore`, `SqliteStore`, `PostgresStore`.

One way down: ``_records`` and ``_trace_records`` (what a store keeps, and the records made
from records) import nothing of host_sim; every other module here builds on them, and the
package imports no other folder of host_sim (tests/test_import_cycles.py holds it to that).
"""

from typing import TYPE_CHECKING

from ._errors import StoreError as StoreError
from ._errors import StoreLockedError as StoreLockedError
from ._memory import MemoryStore as MemoryStore
from ._postgres import PostgresStore as PostgresStore
from ._protocol import INDEX_VERSION as INDEX_VERSION
from ._protocol import IntegratorStore as IntegratorStore
from ._protocol import Store as Store
from ._records import Invocation as Invocation
from ._records import JobRecord as JobRecord
from ._records import SessionRecord as SessionRecord
from ._records import StoredState as StoredState
from ._records import TurnRecord as TurnRecord
from ._renamed import RENAMED as _RENAMED
from ._renamed import warn_renamed as _warn_renamed
from ._sqlite import SCHEMA_VERSION as SCHEMA_VERSION
from ._sqlite import SqliteStore as SqliteStore

if TYPE_CHECKING:
    LogStore = IntegratorStore  # renamed: the old name answers for one release, with a DeprecationWarning
else:

    def __getattr__(name: str) -> object:
        """A name renamed in this release (``LogStore``): the new one, with a `DeprecationWarning`."""
        new = _RENAMED.get(name)
        if new is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        _warn_renamed(f"host_sim.stores.{name}", new)
        return globals()[new]


__all__ = [
    "INDEX_VERSION",
    "SCHEMA_VERSION",
    "IntegratorStore",
    "Invocation",
    "JobRecord",
    "MemoryStore",
    "PostgresStore",
    "SessionRecord",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreLockedError",
    "StoredState",
    "TurnRecord",
]
