"""One refresh's inputs, named once: made right after the refresh's one load of its table and sources, and passed
whole to every path (the full and partition recompute in :mod:`.run`, the incremental attempt in
:mod:`.incremental.attempt`, in process or on Spark), which all commit through :meth:`Refresh.commit`.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from mt_magic.catalog.definitions import MaterializedTableDefinition, RefreshState, SourceState
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.audit import kept
from mt_magic.runtime.refresh.commit import Committed, RowsWrite, Write, commit
from mt_magic.runtime.refresh.context import RefreshContext
from mt_magic.runtime.refresh.retention import expire_after
from mt_magic.runtime.refresh.seen import Seen, as_committed
from mt_magic.runtime.status import Decision, RefreshOutcome, RefreshRequest
from mt_magic.vocabulary import RefreshEngine, RefreshKind


@dataclass(frozen=True)
class Refresh:
    """What one refresh works from: what was asked, the table and its sources as loaded at its start (the sources'
    current snapshots are the pinned ones), when it started and what it saw then (the change, the recorded costs)."""

    ctx: RefreshContext
    request: RefreshRequest
    info: TableInfo
    definition: MaterializedTableDefinition
    sources: tuple[TableInfo, ...]
    """Every source's metadata, in ``definition.upstream`` order."""
    states: tuple[SourceState, ...]
    """The pinned source states the commit records (one per source)."""
    started: datetime
    seen: Seen

    @property
    def table(self) -> str:
        return self.request.table

    def with_definition(self, definition: MaterializedTableDefinition) -> Refresh:
        return dataclasses.replace(self, definition=definition)

    def commit(
        self,
        write: Write | RowsWrite,
        kind: RefreshKind,
        strategy: str,
        decision: Decision,
        *,
        partition: Mapping[str, str] | None = None,
        read_snapshot: int | None = None,
    ) -> RefreshOutcome:
        """Commit ``write`` with this refresh's state in the same snapshot, unless it was cancelled meanwhile; then
        the table's housekeeping (snapshot retention).

        Args:
            read_snapshot: the table's snapshot the write was computed against (default: the one loaded at the
                start); another writer's commit since then makes the commit fail and write nothing.
        """
        engine = RefreshEngine.IN_PROCESS if isinstance(write, RowsWrite) else RefreshEngine.SPARK
        if isinstance(write, Write):  # Spark computed the rows without the DROP ROW filter: the commit applies it
            write = dataclasses.replace(write, kept=kept(self.definition.expectations))
        state = RefreshState(
            self.states,
            self.started,
            kind,
            self.request.trigger,
            self.request.scheduled_time,
            self.definition.definition_version,
            dict(partition or {}),
            strategy,
            engine=engine,
        )
        self.ctx.jobs.check_cancelled(self.request.job_group)
        snapshot = self.info.current_snapshot_id if read_snapshot is None else read_snapshot
        done: Committed = commit(self.ctx.catalog, self.table, write, state, uuid.uuid4().hex, snapshot, decision)
        expire_after(self.ctx, self.request, done)
        return RefreshOutcome(
            kind,
            done.snapshot_id,
            done.rows_written,
            done.committed_at,
            strategy,
            engine=engine,
            decision=as_committed(decision, done),
        )
