"""ADAPTIVE's cost model (no Spark): without records the fixed fraction decides, the table's recorded refreshes move
the crossover, a first Spark incremental refresh is tried only where its prior expects it to pay, the user's fraction
still wins, and the decision record survives the snapshot summary."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mt_magic.catalog.definitions import RefreshState, SourceState
from mt_magic.catalog.tables import SnapshotInfo, TableInfo
from mt_magic.runtime.refresh.cost_model import (
    PRIOR_FULL,
    PRIOR_INCREMENTAL,
    PRIOR_INCREMENTAL_SPARK,
    RECENT_RECORDS,
    SPARK_INCREMENTAL_JOBS,
    CostRecord,
    cost_model,
    recorded_costs,
)
from mt_magic.runtime.refresh.decision_summary import DECISION_KEY, decision_summary, observed_change, recorded_decision
from mt_magic.runtime.refresh.incremental.changes import ChangeKind, SourceChange
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan, cheaper_to_recompute, static_plan
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.runtime.status import Change, Decision, Estimates, SourceDelta
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshTrigger

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
SOURCE = "c.db.src"
ROWS = 1_000_000
INC, FULL = RefreshKind.INCREMENTAL, RefreshKind.FULL


def source(rows: int = ROWS, snapshot_id: int = 2) -> TableInfo:
    snaps = tuple(
        SnapshotInfo(i, i - 1 or None, T0, "append", {"total-records": str(rows), "added-records": "1"}, 0)
        for i in range(1, snapshot_id + 1)
    )
    return TableInfo(SOURCE, "u-1", snapshot_id, snaps, {}, (), (), (), 0, frozenset(s.snapshot_id for s in snaps))


def aggregate_plan(changed_rows: int) -> RefreshPlan:
    """A GROUP BY's aggregate merge over ``changed_rows`` appended rows (the strategy ADAPTIVE weighs)."""
    query = static_plan(f"SELECT g, count(*) AS n FROM {SOURCE} GROUP BY g")
    change = SourceChange(SOURCE, ChangeKind.APPENDS, 1, 2, changes=1, rows=changed_rows)
    plan = RefreshPlan(query.strategy_for(ChangeKind.APPENDS, [SOURCE]), query, (change,), 10)  # type: ignore[arg-type]
    return plan


SPARK, IN_PROCESS = RefreshEngine.SPARK, RefreshEngine.IN_PROCESS


def records(
    choice: RefreshKind, points: dict[int, float], engine: RefreshEngine = SPARK, replaces_rows: bool = False
) -> list[CostRecord]:
    return [CostRecord(choice, engine, rows, seconds, replaces_rows) for rows, seconds in points.items()]


def distinct_plan(changed_rows: int) -> RefreshPlan:
    """A COUNT(DISTINCT)'s touched groups recomputed over ``changed_rows`` appended rows (a strategy that replaces
    rows: on Spark it starts from Spark's prior)."""
    query = static_plan(f"SELECT g, count(DISTINCT k) AS n FROM {SOURCE} GROUP BY g")
    change = SourceChange(SOURCE, ChangeKind.APPENDS, 1, 2, changes=1, rows=changed_rows)
    plan = RefreshPlan(query.strategy_for(ChangeKind.APPENDS, [SOURCE]), query, (change,), 10)  # type: ignore[arg-type]
    assert plan.strategy.replaces_rows
    return plan


def chooses_full(
    fraction: float,
    history: list[CostRecord],
    max_fraction: float | None = None,
    engine: RefreshEngine = SPARK,
    rows: int = ROWS,
    replaces_rows: bool = False,
) -> bool:
    # the append grows the source: ``fraction`` of its pinned rows are new, as ADAPTIVE counts them
    changed = int(rows * fraction)
    plan = distinct_plan(changed) if replaces_rows else aggregate_plan(changed)
    model = cost_model(history, engine, plan.strategy.replaces_rows)
    return cheaper_to_recompute(plan, [source(rows)], max_fraction, model) is not None


def crossover(
    history: list[CostRecord], engine: RefreshEngine = SPARK, rows: int = ROWS, replaces_rows: bool = False
) -> float:
    """The smallest fraction (in 1 % steps) at which ADAPTIVE recomputes (past 1: never)."""
    return next(
        (f / 100 for f in range(1, 101) if chooses_full(f / 100, history, None, engine, rows, replaces_rows)), 1.01
    )


def test_without_history_the_fixed_fraction_decides() -> None:
    for engine, replaces in ((SPARK, True), (SPARK, False), (IN_PROCESS, True)):
        model = cost_model([], engine, replaces)
        assert not model.learned and not model.decides and model.basis == "priors"
        for fraction in (0.01, 0.1, 0.29, 0.3, 0.31, 0.5, 0.9):
            assert chooses_full(fraction, [], engine=engine, replaces_rows=replaces) == (fraction > 0.3)
    for fraction in (0.01, 0.3, 0.31):
        without_model = cheaper_to_recompute(aggregate_plan(int(ROWS * fraction)), [source()], None)
        assert (without_model is not None) == (fraction > 0.3)
    estimates = cost_model([], SPARK).estimates(int(0.3 * ROWS), ROWS, ROWS, incremental=True)
    assert estimates.incremental_s == pytest.approx(estimates.full_s)  # these priors cross at 30 %
    spark = cost_model([], SPARK, replaces_rows=True).estimates(int(0.3 * ROWS), ROWS, ROWS, incremental=True)
    assert spark.incremental_s == pytest.approx(estimates.incremental_s + (SPARK_INCREMENTAL_JOBS - 1) * 0.5)


def test_a_first_spark_refresh_that_replaces_rows_is_tried_only_where_its_prior_expects_it_to_pay() -> None:
    """The creation's recompute measured, no incremental record: on Spark a strategy that replaces rows reads its
    prior (several jobs) against the measured recompute — a small change recomputes a 1 M-row table (the jobs cost
    more than reading it) and is applied to a 20 M-row one; in process, or an aggregate merge, the fraction still
    decides."""
    for rows in (ROWS, 20 * ROWS):
        created = records(FULL, {rows: 3 * PRIOR_FULL.at(rows)})  # a machine three times slower than the priors
        model = cost_model(created, SPARK, replaces_rows=True)
        assert model.decides and not model.learned
        assert model.incremental == PRIOR_INCREMENTAL_SPARK.scaled(3)
        assert "Spark's incremental prior" in model.basis
        assert chooses_full(0.001, created, rows=rows, replaces_rows=True) is (rows == ROWS)
        assert crossover(created, IN_PROCESS, rows, replaces_rows=True) == 0.31
        assert crossover(created, SPARK, rows) == 0.31
        assert not cost_model(created, SPARK).decides
    big = 20 * ROWS
    assert 0.01 < crossover(records(FULL, {big: PRIOR_FULL.at(big)}), SPARK, big, replaces_rows=True) < 0.31
    small = cost_model(records(FULL, {ROWS: PRIOR_FULL.at(ROWS)}), SPARK, replaces_rows=True)
    fallback = cheaper_to_recompute(distinct_plan(1_000), [source()], None, small)
    assert fallback is not None and "to recompute against" in fallback.detail


def test_history_of_dear_incremental_refreshes_moves_the_crossover_down() -> None:
    # incremental measured at 3× its prior; recomputes as the prior says
    dear = records(INC, {n: 3 * PRIOR_INCREMENTAL.at(n) for n in (10_000, 50_000, 100_000, 200_000)})
    full = records(FULL, {ROWS + i: PRIOR_FULL.at(ROWS) for i in range(4)})
    assert crossover([]) == 0.31
    assert crossover(dear + full) < 0.15
    model = cost_model(dear + full)
    assert model.learned and model.basis == "fit over 4 incremental, 4 full refreshes"


def test_history_of_cheap_incremental_refreshes_moves_the_crossover_up() -> None:
    cheap = records(INC, {n: 0.5 + 0.4e-6 * n for n in (10_000, 100_000, 300_000, 500_000)})
    full = records(FULL, {ROWS: 1.5, ROWS + 1: 1.6, ROWS + 2: 1.4, ROWS + 3: 1.5})
    assert crossover(cheap + full) > 0.9


def test_a_strategy_without_records_keeps_its_prior_scaled_by_the_tables_speed() -> None:
    slow_machine = records(INC, {10_000: 2 * PRIOR_INCREMENTAL.at(10_000)}, IN_PROCESS)
    model = cost_model(slow_machine, IN_PROCESS)
    assert not model.learned and not model.decides
    assert model.full.at(ROWS) == pytest.approx(2 * PRIOR_FULL.at(ROWS))
    assert crossover(slow_machine, IN_PROCESS) == crossover([])  # the same speed on both lines: today's crossing
    replaced = records(INC, {10_000: 2 * PRIOR_INCREMENTAL_SPARK.at(10_000)}, replaces_rows=True)
    spark = cost_model(replaced, SPARK, replaces_rows=True)
    assert spark.full.at(ROWS) == pytest.approx(2 * PRIOR_FULL.at(ROWS)) and not spark.decides


def test_the_tables_own_fraction_wins_over_the_model() -> None:
    dear = records(INC, {n: 10 * PRIOR_INCREMENTAL.at(n) for n in (10_000, 50_000, 100_000, 200_000)})
    dear += records(FULL, {ROWS + i: PRIOR_FULL.at(ROWS) for i in range(4)})
    assert chooses_full(0.1, dear)
    assert not chooses_full(0.1, dear, max_fraction=0.3)
    assert chooses_full(0.35, dear, max_fraction=0.3)


def test_the_model_explains_its_recompute() -> None:
    dear = records(INC, {n: 3 * PRIOR_INCREMENTAL.at(n) for n in (10_000, 50_000, 100_000, 200_000)})
    dear += records(FULL, {ROWS + i: PRIOR_FULL.at(ROWS) for i in range(4)})
    fallback = cheaper_to_recompute(aggregate_plan(200_000), [source()], None, cost_model(dear))
    assert fallback is not None and fallback.reason is FallbackReason.CHEAPER_TO_RECOMPUTE
    assert "to recompute against" in fallback.detail and "fit over 4 incremental, 4 full" in fallback.detail


def test_in_process_records_do_not_teach_the_spark_line() -> None:
    fast = [CostRecord(INC, RefreshEngine.IN_PROCESS, n, 0.05) for n in (1_000, 10_000, 50_000, 100_000)]
    created = records(FULL, {ROWS: 1.0})  # the creation's recompute
    assert not cost_model(fast + created, RefreshEngine.SPARK).learned
    assert cost_model(fast + created, RefreshEngine.IN_PROCESS).learned


def test_one_record_of_each_strategy_scales_its_line() -> None:
    # the creation's recompute as the prior says, then one incremental refresh 5× dearer than its prior
    history = records(FULL, {ROWS: PRIOR_FULL.at(ROWS)}) + records(INC, {20_000: 5 * PRIOR_INCREMENTAL.at(20_000)})
    model = cost_model(history)
    assert model.learned and model.full == PRIOR_FULL
    assert model.incremental.at(20_000) == pytest.approx(5 * PRIOR_INCREMENTAL.at(20_000))
    assert crossover(history) < 0.05
    in_process = records(FULL, {ROWS: PRIOR_FULL.at(ROWS)}) + records(
        INC, {20_000: 5 * PRIOR_INCREMENTAL.at(20_000)}, IN_PROCESS
    )
    assert cost_model(in_process, IN_PROCESS).incremental == PRIOR_INCREMENTAL.scaled(5)


def test_a_strategy_not_chosen_for_long_returns_to_its_prior_and_is_tried_again() -> None:
    dear = records(INC, {20_000: 5 * PRIOR_INCREMENTAL.at(20_000)}, IN_PROCESS)
    recomputes = [CostRecord(FULL, SPARK, ROWS, PRIOR_FULL.at(ROWS)) for _ in range(RECENT_RECORDS)]
    assert cost_model(dear + recomputes[:10], IN_PROCESS).learned
    assert not cost_model(dear + recomputes, IN_PROCESS).learned  # the dear record left the window: today's rule
    assert crossover(dear + recomputes, IN_PROCESS) == crossover([])
    # on Spark the line returns to Spark's prior, read against the measured recomputes
    spark = records(INC, {20_000: 5 * PRIOR_INCREMENTAL_SPARK.at(20_000)}, replaces_rows=True) + recomputes
    assert cost_model(spark, SPARK, replaces_rows=True).incremental == PRIOR_INCREMENTAL_SPARK


def refresh_snapshot(snapshot_id: int, decision: Decision, seconds: float, engine: RefreshEngine) -> SnapshotInfo:
    state = RefreshState(
        (SourceState(("db",), "src", "u-1", 1, "c"),),
        T0,
        decision.chosen,
        RefreshTrigger.SCHEDULED,
        T0,
        strategy=decision.reason,
        engine=engine,
    )
    summary = {**state.to_summary(), **decision_summary(decision), "added-files-size": "2048", "added-records": "7"}
    return SnapshotInfo(snapshot_id, None, T0 + timedelta(seconds=seconds), "append", summary, 0)


def test_the_decision_record_round_trips_through_the_summary_and_feeds_the_model() -> None:
    change = Change((SourceDelta(SOURCE, 300, 20, 2, 1),), 10_000, 50_000)
    decision = Decision(INC, "incremental: merge the aggregated delta", change, Estimates(0.7, 1.2, "priors"))
    snapshot = refresh_snapshot(5, decision, 0.8, RefreshEngine.SPARK)
    assert DECISION_KEY in snapshot.summary and len(snapshot.summary[DECISION_KEY]) < 400
    state = snapshot.refresh_state
    assert state is not None
    read = recorded_decision(snapshot, state)
    assert read is not None
    assert (read.chosen, read.reason, read.change, read.estimates) == (
        decision.chosen,
        decision.reason,
        change,
        decision.estimates,
    )
    assert read.change is not None and read.change.rows == 320 and read.change.ratio == pytest.approx(0.032)
    assert read.measured.wall_s == pytest.approx(0.8) and read.measured.bytes_written == 2048
    assert read.measured.rows_written == 7 and read.measured.spark_task_s is None  # counted after the commit
    info = TableInfo("c.db.t", "u-2", 5, (snapshot,), {}, (), (), (), 0)
    assert recorded_costs(info) == [CostRecord(INC, RefreshEngine.SPARK, 320, pytest.approx(0.8))]  # type: ignore[list-item]
    in_process = refresh_snapshot(6, decision, 0.1, RefreshEngine.IN_PROCESS)
    assert recorded_decision(in_process, in_process.refresh_state).measured.spark_task_s == 0.0  # type: ignore[arg-type, union-attr]


def test_the_change_seen_counts_rows_and_files_since_the_consumed_snapshot() -> None:
    def snap(i: int, **summary: str) -> SnapshotInfo:
        return SnapshotInfo(i, i - 1 or None, T0, "append" if i < 3 else "overwrite", summary, 0)

    src = TableInfo(
        SOURCE,
        "u-1",
        3,
        (
            snap(1, **{"added-records": "100", "total-records": "100"}),
            snap(2, **{"added-records": "10", "added-data-files": "1", "total-records": "110"}),
            snap(
                3, **{"added-records": "4", "deleted-records": "5", "deleted-data-files": "1", "total-records": "109"}
            ),
        ),
        {},
        (),
        (),
        (),
        0,
    )
    first = observed_change(TableInfo("c.db.t", "u-2", None, (), {}, (), (), (), 0), [src])
    assert first is not None and first.rows == 119  # the first refresh sees every row ever added and removed
    done = refresh_snapshot(9, Decision(FULL, "full recompute"), 1.0, RefreshEngine.SPARK)  # consumed snapshot 1
    later = observed_change(TableInfo("c.db.t", "u-2", 9, (done,), {}, (), (), (), 0), [src])
    assert later == Change((SourceDelta(SOURCE, 14, 5, 1, 1, rows_read=19),), 109, 109)  # the rewritten file read
    assert later.ratio == pytest.approx(19 / 109)


def test_an_appends_records_do_not_teach_the_line_of_a_refresh_that_replaces_rows() -> None:
    """The replay's wrong choice: a filter whose appends ran cheaply on Spark (a delta appended) chose to apply an
    80 % update in place (48 s against 2.6 s for a recompute). Appending costs less per row than replacing rows, so
    each kind reads its own records; without any of its own, its prior against the measured recomputes."""
    cheap_appends = records(INC, {n: 0.5 + 0.2e-6 * n for n in (10_000, 60_000, 150_000, 300_000)})
    recomputes = records(FULL, {ROWS + i: PRIOR_FULL.at(ROWS) for i in range(4)})
    history = cheap_appends + recomputes
    assert crossover(history) > 0.9  # appends: cheap, stay incremental
    replace_model = cost_model(history, SPARK, replaces_rows=True)
    assert replace_model.incremental_points == 0
    assert replace_model.incremental.at(10_000) == pytest.approx(PRIOR_INCREMENTAL_SPARK.at(10_000))
    assert chooses_full(0.8, history, replaces_rows=True) and chooses_full(0.01, history, replaces_rows=True)
    dear_replaces = records(INC, {n: 3 * PRIOR_INCREMENTAL_SPARK.at(n) for n in (1_000, 5_000)}, replaces_rows=True)
    assert cost_model(history + dear_replaces, SPARK, replaces_rows=True).incremental_points == 2
    assert cost_model(history + dear_replaces, SPARK).incremental_points == 4
