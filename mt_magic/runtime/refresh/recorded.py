"""A table's refreshes as its snapshots record them: the one reader ``%mt history`` (:meth:`.engine.Engine.history`)
and ADAPTIVE's cost model (:func:`.cost_model.recorded_costs`) share.

Each refresh commit carries its refresh state (kind, trigger, start, strategy, engine, definition version) and its
decision record (:mod:`.decision_summary`) in the snapshot summary, so a table's history survives restarts and
any process reads the same. Pure: reads the metadata it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.audit import COUNTS_OF_KEY, Audit
from mt_magic.runtime.refresh.decision_summary import recorded_decision
from mt_magic.runtime.status import ExpectationCount, RefreshRecord


def refresh_records(info: TableInfo, limit: int | None = None) -> list[RefreshRecord]:
    """The newest ``limit`` (``None``: every) refresh commits of ``info``, newest first; snapshots without a refresh
    state (a compaction, another writer's commit) are not refreshes."""
    records: list[RefreshRecord] = []
    counts = {  # a refresh with expectations: its counts follow it in a snapshot of their own (.audit_write)
        int(s.summary[COUNTS_OF_KEY]): s.summary for s in info.snapshots if COUNTS_OF_KEY in s.summary
    }
    for snap in reversed(info.snapshots):
        if limit is not None and len(records) >= limit:
            break
        state = snap.refresh_state
        if state is None or COUNTS_OF_KEY in snap.summary:  # a refresh's counts, after its own snapshot
            continue
        records.append(
            RefreshRecord(
                kind=state.kind,
                trigger=state.trigger,
                started_at=state.refresh_start,
                duration=max(snap.committed_at - state.refresh_start, timedelta(0)),
                rows_written=int(snap.summary.get("added-records", "0")),
                snapshot_id=snap.snapshot_id,
                strategy=state.strategy,
                engine=state.engine,
                decision=recorded_decision(snap, state),
                definition_version=state.definition_version,
                expectations=expectation_counts(counts.get(snap.snapshot_id, snap.summary)),
            )
        )
    return records


def expectation_counts(summary: Mapping[str, str]) -> tuple[ExpectationCount, ...]:
    """Passed, dropped and failed rows per expectation as the refresh's commit recorded them (:mod:`.audit`)."""
    counted = Audit.from_summary(summary)
    return () if counted is None else tuple(c.recorded() for c in counted.counts)
