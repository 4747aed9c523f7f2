"""The boundary between the RefreshManager (when to refresh) and the engine (how to refresh).

The manager schedules and never touches Spark or the catalog itself; it calls a :class:`RefreshBackend`.
The real backend (``mt_magic.runtime.refresh.engine``) runs Spark jobs and reads the catalog; unit tests use a
fake one with an injected clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol

from mt_magic.runtime.status import JobProgress, ManagedTable, RefreshOutcome, RefreshRecord, RefreshRequest


class RefreshBackend(Protocol):
    """What the manager needs from the engine. Every method may be called from the manager's threads."""

    def discover(self, reuse: Collection[str] = frozenset()) -> Sequence[ManagedTable]:
        """All materialized tables in the catalog, with their definitions and last refresh time.

        Args:
            reuse: tables the manager checked recently enough for their freshness: their last answer may be given
                again without asking the catalog about each (the listing still says which tables exist).

        Raises:
            CatalogUnavailableError: the catalog cannot be reached.
        """
        ...

    def refresh(self, request: RefreshRequest) -> RefreshOutcome:
        """Run one refresh to completion: one atomic commit, or nothing at all.

        Runs Spark jobs under ``request.job_group`` so :meth:`cancel` can stop them.

        Raises:
            RefreshCancelledError: :meth:`cancel` was called for this job group; nothing was committed.
            CatalogUnavailableError: the catalog cannot be reached.
            Exception: any other failure; the previous snapshot stays current.
        """
        ...

    def cancel(self, job_group: str) -> None:
        """Cancel the Spark jobs of a running refresh; its refresh() raises RefreshCancelledError."""
        ...

    def wait_stopped(self, table: str, timeout: float) -> bool:
        """Wait until no job of ``table``'s refreshes runs any more (after :meth:`cancel`); ``False`` on timeout."""
        ...

    def pending_since(self, table: str) -> datetime | None:
        """Commit time of the oldest source change the table does not reflect yet; ``None`` when caught up."""
        ...

    def progress(self, job_group: str) -> JobProgress | None:
        """Spark's task progress for a running job group, ``None`` when nothing runs."""
        ...

    def history(self, table: str, limit: int = 50) -> Sequence[RefreshRecord]:
        """The table's past refreshes, newest first, read from the catalog (survives restarts)."""
        ...
