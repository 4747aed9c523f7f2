"""What a refresh will cost, per candidate: ADAPTIVE's cost model, corrected by the table's own record.

Two straight lines: an incremental refresh costs ``fixed + per_row × rows changed``, a recompute ``fixed +
per_row × rows read``. The priors put the lines where today's rule decides: the same fixed cost, and an
incremental row :data:`~mt_magic.options.DEFAULT_MAX_CHANGE` (0.3) times dearer than a recomputed one, so the
lines cross where the change is 30 % of the sources (``bench_incremental.py --parts crossover``). The table's
recorded refreshes (:mod:`.decision_summary`, in its snapshot summaries: seconds from start to commit, rows)
correct them:

- a strategy with :data:`MIN_POINTS` records of its own gets its own line by least squares over its last
  :data:`LAST_RECORDS` when their sizes spread (the largest at least twice the smallest); with fewer, or sizes
  that do not spread (a recompute reads about the same rows every time), its prior scaled by the median of actual
  over prior of its records — one is enough (the creation's recompute is the first full record);
- a strategy without records keeps its prior scaled by the table's speed (the median of actual over prior over
  every record), so the lines keep today's crossing until both strategies have been measured;
- only the table's newest :data:`RECENT_RECORDS` refreshes count: a strategy the model stopped choosing drops
  out after that many refreshes, its line returns to the prior, and ADAPTIVE tries it again (the only way a line
  judged too dear can be corrected).

On Spark an incremental refresh that replaces the table's touched rows (``Strategy.replaces_rows``: inserts and
deletes applied, a retraction, groups, partitions, keys or windows recomputed) runs several jobs where a recompute
runs one: its prior starts at :data:`SPARK_INCREMENTAL_JOBS` fixed costs, so a table whose recompute is measured
(its creation's) tries its first such refresh only where the change is small against a large source
(:attr:`CostModel.decides`).
Elsewhere (in process, an aggregate merge, an append) the priors still cross at the fraction.

A model that :attr:`~CostModel.decides` False leaves the choice to today's rule exactly
(:func:`~mt_magic.runtime.refresh.incremental.planner.cheaper_to_recompute`). Pure: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from mt_magic.catalog.tables import TableInfo
from mt_magic.options import DEFAULT_MAX_CHANGE
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.recorded import refresh_records
from mt_magic.runtime.status import Estimates
from mt_magic.vocabulary import RefreshEngine, RefreshKind

PRIOR_FIXED_S = 0.5
"""A Spark job plus an Iceberg commit on 2 cores (``bench_incremental.py``'s commit floor, 0.3–0.6 s)."""
PRIOR_FULL_PER_ROW_S = 0.5e-6
"""A recompute of a simple query over 2 M rows takes about 1–1.5 s on 2 cores (``--parts crossover``)."""
PRIOR_INCREMENTAL_PER_ROW_S = PRIOR_FULL_PER_ROW_S / DEFAULT_MAX_CHANGE
"""Dearer per row than a recompute by the crossover fraction: the lines cross where today's rule does."""
SPARK_INCREMENTAL_JOBS = 4
"""A Spark incremental refresh's fixed cost in recomputes' fixed costs (jobs and commits): measured, a row-level change
of 0.1 % under an aggregate, a filter and a partitioned distinct count over 300,000 rows took 6.1–7.5 s on Spark
against 1.5–3.7 s for a recompute (``bench_adaptive.py``), a keyed join's 10 items of 2 M facts 3.4 s against
1.6 s (``bench_incremental.py --parts dimension``)."""
PRIOR_INCREMENTAL_SPARK_FIXED_S = SPARK_INCREMENTAL_JOBS * PRIOR_FIXED_S
MIN_POINTS = 4
"""Records a strategy needs before its line is fitted (fewer: its prior scaled to them)."""
LAST_RECORDS = 20
"""The newest records of each strategy that count (the table's data and the machine drift)."""
RECENT_RECORDS = 50
"""The table's newest recorded refreshes the model reads (both strategies together)."""


@dataclass(frozen=True)
class Line:
    """Seconds as ``fixed + per_row × rows``."""

    fixed: float
    per_row: float

    def at(self, rows: int) -> float:
        return self.fixed + self.per_row * rows

    def scaled(self, factor: float) -> Line:
        return Line(self.fixed * factor, self.per_row * factor)


PRIOR_INCREMENTAL = Line(PRIOR_FIXED_S, PRIOR_INCREMENTAL_PER_ROW_S)
"""An incremental refresh: the recompute's fixed cost (its line crosses a recompute's at the fraction)."""
PRIOR_INCREMENTAL_SPARK = Line(PRIOR_INCREMENTAL_SPARK_FIXED_S, PRIOR_INCREMENTAL_PER_ROW_S)
"""One that replaces rows on Spark: :data:`SPARK_INCREMENTAL_JOBS` fixed costs, the same cost per changed row."""
PRIOR_FULL = Line(PRIOR_FIXED_S, PRIOR_FULL_PER_ROW_S)


def incremental_prior(engine: RefreshEngine, replaces_rows: bool) -> Line:
    """The incremental line before the table has records of its own on ``engine``."""
    return PRIOR_INCREMENTAL_SPARK if engine is RefreshEngine.SPARK and replaces_rows else PRIOR_INCREMENTAL


@dataclass(frozen=True)
class CostRecord:
    """One recorded refresh as the model reads it: its strategy, the rows that drive its cost, its seconds."""

    choice: RefreshKind
    engine: RefreshEngine
    rows: int
    """Rows changed (incremental) or rows of every source (full)."""
    seconds: float
    replaces_rows: bool = False
    """An incremental refresh on Spark whose strategy replaces the table's touched rows (``Strategy.replaces_rows``):
    its cost per row is another line's than an append's or an aggregate merge's. In process a retraction reads the
    change and the table and rewrites it as a merge does: one line with the appends."""


def recorded_costs(info: TableInfo, definition_version: int | None = None) -> list[CostRecord]:
    """The table's refreshes that recorded a decision, oldest first (full and incremental; partition refreshes,
    no-ops and refreshes of an empty change are left out: their cost says nothing about either line), of
    ``definition_version`` only when given (an ALTER … AS changes what a refresh computes)."""
    records = []
    for record in reversed(refresh_records(info)):
        decision = record.decision
        if decision is None or decision.change is None or decision.measured.wall_s is None or record.engine is None:
            continue  # engine None: only a failed attempt's record, which a commit never is
        if definition_version is not None and record.definition_version != definition_version:
            continue
        if decision.chosen is RefreshKind.INCREMENTAL and decision.change.rows_read > 0:
            strategy = Strategy.of_line(record.strategy)
            replaces = strategy is not None and strategy.replaces_rows and record.engine is RefreshEngine.SPARK
            records.append(
                CostRecord(
                    RefreshKind.INCREMENTAL,
                    record.engine,
                    decision.change.rows_read,
                    decision.measured.wall_s,
                    replaces,
                )
            )
        elif decision.chosen is RefreshKind.FULL and decision.change.source_rows is not None:
            records.append(
                CostRecord(RefreshKind.FULL, record.engine, decision.change.source_rows, decision.measured.wall_s)
            )
    return records


def _fit(points: Sequence[CostRecord], prior: Line) -> Line:
    """The line through ``points``: least squares when there are enough and their sizes spread, else the prior
    scaled to them."""
    xs = [p.rows for p in points]
    ys = [p.seconds for p in points]
    if len(points) >= MIN_POINTS and min(xs) > 0 and max(xs) >= 2 * min(xs):
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        spread = sum((x - mean_x) ** 2 for x in xs)
        per_row = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
        fixed = mean_y - per_row * mean_x
        if per_row >= 0 and fixed >= 0:
            return Line(fixed, per_row)
    return prior.scaled(_speed(points, prior))


def _speed(points: Sequence[CostRecord], prior: Line) -> float:
    return statistics.median(p.seconds / prior.at(p.rows) for p in points)


@dataclass(frozen=True)
class CostModel:
    """One table's two lines and where they come from."""

    incremental: Line
    full: Line
    incremental_points: int = 0
    """Records behind the incremental line (0: its prior, scaled by the table's speed)."""
    full_points: int = 0
    spark_prior: bool = False
    """The incremental prior is :data:`PRIOR_INCREMENTAL_SPARK` (a refresh that replaces rows, on Spark)."""

    @property
    def learned(self) -> bool:
        """Whether both lines are the table's own."""
        return bool(self.incremental_points and self.full_points)

    @property
    def decides(self) -> bool:
        """Whether the estimates decide rather than today's fraction: both lines are the table's own, or the
        refresh would run on Spark and the table's recompute is measured (the Spark prior is then read against
        it: a first Spark incremental refresh is tried where it is expected to pay). Otherwise the lines cross
        where the fraction does, and the fraction decides."""
        return self.learned or (self.spark_prior and self.full_points > 0)

    @property
    def basis(self) -> str:
        """Where the lines come from, for the decision record."""
        if self.learned:
            return f"fit over {self.incremental_points} incremental, {self.full_points} full refreshes"
        measured = self.incremental_points or self.full_points
        if self.decides:
            return (
                f"Spark's incremental prior ({SPARK_INCREMENTAL_JOBS} jobs) against {self.full_points} measured "
                "recompute(s)"
            )
        return f"priors × the table's speed ({measured} recorded)" if measured else "priors"

    def estimates(
        self, change_rows: int | None, changed_source_rows: int | None, source_rows: int | None, incremental: bool
    ) -> Estimates:
        """Seconds of each candidate; ``incremental`` False: a recompute is the only candidate.

        A prior recompute line is read at the changed sources' rows, where today's rule puts the crossing; a
        recompute line of the table's own at the rows of every source, which its records measured.
        """
        full_rows = source_rows if self.full_points else changed_source_rows
        full = self.full.at(full_rows) if full_rows is not None else None
        inc = self.incremental.at(change_rows) if incremental and change_rows is not None else None
        return Estimates(inc, full, self.basis)


def cost_model(
    records: Sequence[CostRecord], engine: RefreshEngine = RefreshEngine.SPARK, replaces_rows: bool = False
) -> CostModel:
    """The model for a table with these records, for an incremental refresh on ``engine`` that ``replaces_rows``
    or not: the incremental line reads only records of that engine and kind (in process a refresh costs a tenth
    of a Spark job; appending a delta costs less per row than replacing rows, so an append's records would make a
    large update look cheap), else its prior (:func:`incremental_prior`)."""
    recent = records[-RECENT_RECORDS:]
    incremental = [
        r
        for r in recent
        if r.choice is RefreshKind.INCREMENTAL and r.engine is engine and r.replaces_rows is replaces_rows
    ][-LAST_RECORDS:]
    full = [r for r in recent if r.choice is RefreshKind.FULL][-LAST_RECORDS:]
    prior = incremental_prior(engine, replaces_rows)
    every = [*((r, prior) for r in incremental), *((r, PRIOR_FULL) for r in full)]
    speed = statistics.median(r.seconds / line.at(r.rows) for r, line in every) if every else 1.0
    return CostModel(
        _fit(incremental, prior) if incremental else prior.scaled(speed),
        _fit(full, PRIOR_FULL) if full else PRIOR_FULL.scaled(speed),
        len(incremental),
        len(full),
        prior is PRIOR_INCREMENTAL_SPARK,
    )
