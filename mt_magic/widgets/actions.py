"""What a card's buttons do, behind one small interface: the widgets call it, the runtime does the work.

:class:`ServiceActions` goes through the service, so a button does exactly what the equivalent statement does
(persisted in the catalog, then the manager told). Every method returns the one-line message to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from mt_magic.runtime.spark.preview import Preview
from mt_magic.sql.ddl.statements import Freshness

if TYPE_CHECKING:
    from mt_magic.runtime.service import MaterializedTables

Partition = tuple[tuple[str, str], ...]


class TableActions(Protocol):
    """The controls of one materialized table."""

    def refresh(self, name: str, partition: Partition = (), cascade: bool = False) -> str:
        """Refresh now (a backfill with ``partition``), optionally cascading downstream; returns at once."""
        ...

    def suspend(self, name: str) -> str: ...

    def resume(self, name: str) -> str: ...

    def cancel(self, name: str) -> str:
        """Cancel the running refresh (nothing commits; the schedule goes on)."""
        ...

    def set_freshness(self, name: str, freshness: Freshness) -> str:
        """Persist a new freshness (and schedule) for ``name``."""
        ...

    def preview(self, name: str, limit: int) -> Preview:
        """The newest ``limit`` rows (runs Spark: never call it on the manager's thread)."""
        ...


class ServiceActions:
    """The controls, through the statement service (the same code paths as the SQL statements)."""

    def __init__(self, service: MaterializedTables) -> None:
        self.service = service

    def refresh(self, name: str, partition: Partition = (), cascade: bool = False) -> str:
        return self.service.refresh(name, partition, cascade).message

    def suspend(self, name: str) -> str:
        return self.service.suspend(name).message

    def resume(self, name: str) -> str:
        return self.service.resume(name).message

    def cancel(self, name: str) -> str:
        return self.service.cancel(name).message

    def set_freshness(self, name: str, freshness: Freshness) -> str:
        return self.service.set_freshness(name, freshness).message

    def preview(self, name: str, limit: int) -> Preview:
        return self.service.preview(name, limit)
