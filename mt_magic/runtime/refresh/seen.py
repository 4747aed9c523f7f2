"""THE builder of decision records: what a refresh saw when it started, turned into its :class:`Decision` at the
point it chose (commit or no-op), whichever engine then writes.

:func:`seen_at_start` reads the change and the table's recorded costs from the metadata the refresh loaded
anyway (no catalog call, no Spark job); :meth:`Seen.decided` is called by the full, partition and incremental
paths and by the no-op alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.commit import Committed
from mt_magic.runtime.refresh.cost_model import CostModel, CostRecord, cost_model, recorded_costs
from mt_magic.runtime.refresh.decision_summary import observed_change, recorded_decision
from mt_magic.runtime.status import Change, Decision, Estimates, Measured
from mt_magic.vocabulary import RefreshEngine, RefreshKind


@dataclass(frozen=True)
class Seen:
    """What a refresh knew when it started: the sources' change and the table's recorded costs."""

    change: Change | None
    records: tuple[CostRecord, ...] = ()

    def model(self, engine: RefreshEngine = RefreshEngine.SPARK, replaces_rows: bool = False) -> CostModel:
        """The cost model for an incremental refresh on ``engine`` (one that ``replaces_rows`` or not), corrected by
        the recorded costs."""
        return cost_model(self.records, engine, replaces_rows)

    def estimates(
        self, incremental: bool, engine: RefreshEngine = RefreshEngine.SPARK, replaces_rows: bool = False
    ) -> Estimates | None:
        """Each candidate's seconds (``incremental`` False: a recompute is the only candidate); ``None`` when
        the change could not be read."""
        change = self.change
        if change is None:
            return None
        model = self.model(engine, replaces_rows)
        return model.estimates(change.rows_read, change.changed_source_rows, change.source_rows, incremental)

    def decided(
        self, chosen: RefreshKind, reason: str, estimates: Estimates | None = None, measured: Measured | None = None
    ) -> Decision:
        """The record of choosing ``chosen`` for ``reason`` (the strategy line); without ``estimates``, a
        recompute's alone."""
        if estimates is None and chosen is not RefreshKind.NOOP:
            estimates = self.estimates(incremental=False)
        return Decision(chosen, reason, self.change, estimates, measured or Measured())


def seen_at_start(info: TableInfo, sources: Sequence[TableInfo]) -> Seen:
    """What a refresh of ``info`` over its pinned ``sources`` sees (metadata only)."""
    definition = info.definition
    version = definition.definition_version if definition is not None else None
    return Seen(observed_change(info, sources), tuple(recorded_costs(info, version)))


def as_committed(decision: Decision, done: Committed) -> Decision:
    """``decision`` with what its commit cost as the committed snapshot's summary tells (the same reading as
    history's), or as built when the read-back does not hold the snapshot."""
    info = done.table
    for snapshot in info.snapshots if info is not None else ():
        state = snapshot.refresh_state
        if snapshot.snapshot_id == done.snapshot_id and state is not None:
            return recorded_decision(snapshot, state) or decision
    return decision
