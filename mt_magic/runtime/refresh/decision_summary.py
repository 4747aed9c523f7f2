"""The decision record's storage: how a commit writes a :class:`~mt_magic.runtime.status.Decision` into its
snapshot summary and how history reads it back, and the change a refresh sees (metadata only). The record is
built once per refresh by :mod:`.seen`, for every writer and for a no-op.

The commit carries it in its snapshot summary as one compact JSON value, :data:`DECISION_KEY`, beside (never
inside) ``refresh-state``. What a commit can only know after it landed is read back from Iceberg's own summary of
that snapshot (bytes and rows written, removed), and the wall time from the commit's time minus the refresh's
start; Spark's task time and bytes read are counted after the refresh from Spark's status store
(:mod:`.spark_metrics`), so they reach the outcome and this process's history (:class:`SparkCostsSeen`) but not
the summary, which was written before the last task ended. What nobody measured stays ``None`` and reads "not measured".
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from mt_magic.catalog.definitions import RefreshState
from mt_magic.catalog.tables import SnapshotInfo, TableInfo
from mt_magic.runtime.refresh.change_size import source_change
from mt_magic.runtime.status import Change, Decision, Estimates, Measured, RefreshOutcome, SourceDelta
from mt_magic.vocabulary import RefreshEngine, RefreshKind

DECISION_KEY = "mt.decision"
"""Snapshot-summary key of a refresh commit's decision record (JSON, see :func:`decision_json`)."""


def decision_summary(decision: Decision) -> dict[str, str]:
    """The snapshot-summary entry a commit writes (what it cost is Iceberg's own summary of the snapshot)."""
    return {DECISION_KEY: decision_json(decision)}


def decision_json(decision: Decision) -> str:
    """Compact JSON: ``{"chosen", "reason", "change": {"rows", "ratio", "changed-source-rows", "source-rows",
    "sources": [{"name", "rows-added", "rows-removed", "files-added", "files-removed", "rows-read"}]},
    "estimates":
    {"incremental-s", "full-s", "basis"}}``; ``chosen`` is a :class:`RefreshKind` value."""
    record: dict[str, object] = {"chosen": decision.chosen.value, "reason": decision.reason}
    change = decision.change
    if change is not None:
        record["change"] = {
            "rows": change.rows,
            "ratio": None if change.ratio is None else round(change.ratio, 6),
            "changed-source-rows": change.changed_source_rows,
            "source-rows": change.source_rows,
            "sources": [
                {
                    "name": s.name,
                    "rows-added": s.rows_added,
                    "rows-removed": s.rows_removed,
                    "files-added": s.files_added,
                    "files-removed": s.files_removed,
                    "rows-read": s.rows_read,
                }
                for s in change.sources
            ],
        }
    if decision.estimates is not None:
        record["estimates"] = {
            "incremental-s": _rounded(decision.estimates.incremental_s),
            "full-s": _rounded(decision.estimates.full_s),
            "basis": decision.estimates.basis,
        }
    return json.dumps(record, separators=(",", ":"))


def recorded_decision(snapshot: SnapshotInfo, state: RefreshState) -> Decision | None:
    """The record a refresh commit wrote, with what it cost as Iceberg's summary and the commit's times tell
    (``None``: a commit written before decisions were recorded, or a record this version cannot read)."""
    raw = snapshot.summary.get(DECISION_KEY)
    if raw is None:
        return None
    try:
        decision = _decoded(json.loads(raw))
    except (ValueError, KeyError, TypeError):
        return None
    measured = Measured(
        wall_s=max((snapshot.committed_at - state.refresh_start).total_seconds(), 0.0),
        spark_task_s=0.0 if state.engine is not RefreshEngine.SPARK else None,
        spark_jobs=0 if state.engine is not RefreshEngine.SPARK else None,
        bytes_written=_said(snapshot, "added-files-size"),
        bytes_removed=_said(snapshot, "removed-files-size"),
        rows_written=_said(snapshot, "added-records"),
        rows_removed=_said(snapshot, "deleted-records"),
    )
    return replace(decision, measured=measured)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 4)


def _said(snapshot: SnapshotInfo, key: str) -> int | None:
    """The summary's count under ``key``, ``None`` where it keeps none (an old commit's summary may not count)."""
    return snapshot.count(key) if key in snapshot.summary else None


def _decoded(record: Mapping[str, object]) -> Decision:
    change = None
    raw_change = record.get("change")
    if isinstance(raw_change, dict):
        change = Change(
            tuple(
                SourceDelta(
                    s["name"],
                    s["rows-added"],
                    s["rows-removed"],
                    s["files-added"],
                    s["files-removed"],
                    s.get("rows-read", 0),
                )
                for s in raw_change["sources"]
            ),
            raw_change.get("changed-source-rows"),
            raw_change.get("source-rows"),
        )
    estimates = None
    raw_estimates = record.get("estimates")
    if isinstance(raw_estimates, dict):
        estimates = Estimates(
            raw_estimates.get("incremental-s"), raw_estimates.get("full-s"), raw_estimates.get("basis", "")
        )
    return Decision(RefreshKind(record["chosen"]), str(record["reason"]), change, estimates)


def _rows(info: TableInfo) -> int | None:
    """Rows of the source's pinned snapshot, from its summary (``None`` when it does not say)."""
    if not info.snapshots:
        return 0
    return _said(info.snapshots[-1], "total-records")


def source_delta(source: TableInfo, consumed: int | None) -> SourceDelta | None:
    """``source``'s change after ``consumed`` up to its pinned snapshot (``None``: it cannot be known from its
    snapshots any more — expired or rewritten history)."""
    after = source.snapshots_after(consumed)
    if after is None:
        return None
    return source_change(source.name, [s for s in after if s.changes_data], after[-1] if after else None)


def observed_change(info: TableInfo, sources: Sequence[TableInfo]) -> Change | None:
    """The change a refresh of ``info`` sees in its pinned ``sources`` since the snapshots its last refresh
    consumed (everything, at the first refresh); metadata only. ``None`` when a source's history since then is
    gone."""
    last = info.last_refresh()
    deltas = []
    for source in sources:
        consumed = last[1].snapshot_of(source.name, source.uuid) if last is not None else None
        delta = source_delta(source, consumed)
        if delta is None:
            return None
        deltas.append(delta)
    sizes = [_rows(s) for s in sources]
    changed = [n for n, d in zip(sizes, deltas, strict=True) if d.rows_added or d.rows_removed]
    return Change(
        tuple(deltas),
        None if None in changed else sum(n for n in changed if n is not None),
        None if None in sizes else sum(n for n in sizes if n is not None),
    )


KEPT_SPARK_COSTS = 1_000
"""Commits whose Spark cost a process remembers (a few dozen bytes each)."""


class SparkCostsSeen:
    """The Spark task time and bytes read of this process's refresh commits, by snapshot id: counted after the
    commit (:mod:`.spark_metrics`), so its summary cannot hold them, yet ``%mt history`` in the same process
    shows them. Thread-safe (refresh workers add, readers read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._costs: OrderedDict[int, Measured] = OrderedDict()

    def keep(self, outcome: RefreshOutcome) -> None:
        """Remember what ``outcome``'s commit cost in Spark (nothing for a no-op or an unmeasured run)."""
        decision = outcome.decision
        if outcome.snapshot_id is None or decision is None or decision.measured.spark_task_s is None:
            return
        with self._lock:
            self._costs[outcome.snapshot_id] = decision.measured
            while len(self._costs) > KEPT_SPARK_COSTS:
                self._costs.popitem(last=False)

    def added(self, decision: Decision | None, snapshot_id: int | None) -> Decision | None:
        """``decision`` (read from the commit) with its Spark jobs, task time and bytes read, where this process ran
        it."""
        with self._lock:
            seen = self._costs.get(snapshot_id) if snapshot_id is not None else None
        if decision is None or seen is None or decision.measured.spark_task_s is not None:
            return decision
        measured = replace(
            decision.measured, spark_task_s=seen.spark_task_s, spark_jobs=seen.spark_jobs, bytes_read=seen.bytes_read
        )
        return replace(decision, measured=measured)
