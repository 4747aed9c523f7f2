"""The cost a change preview and the dashboard predict from a table's history, and what explain is given; pure."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mt_magic.api.statements import QUERY_NAME, explained
from mt_magic.errors import MtMagicError
from mt_magic.runtime.inspect.change_preview import ChangePreview
from mt_magic.runtime.inspect.cost_history import (
    FULL_RECOMPUTE,
    HourlyCost,
    estimate,
    hourly_cost,
    refreshes_per_hour,
    strategy_of,
    usual_strategy,
)
from mt_magic.runtime.refresh.incremental.explain import Explanation
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.incremental.shape import plan_query
from mt_magic.runtime.status import RefreshRecord
from mt_magic.sql.ddl.freshness import FreshnessRules
from mt_magic.sql.ddl.statements import AlterFreshness, AlterQuery, AlterResume, CreateMaterializedTable
from mt_magic.sql.errors import SqlError
from mt_magic.sql.names import TableName
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.vocabulary import RefreshKind, RefreshMode, RefreshTrigger

T0 = datetime(2026, 11, 28, 12, tzinfo=timezone.utc)
MERGE = f"incremental: {Strategy.AGGREGATE_MERGE.label} · delta of 1 source"


def record(seconds: float, kind: RefreshKind = RefreshKind.INCREMENTAL, strategy: str = MERGE, **more) -> RefreshRecord:
    trigger = more.pop("trigger", RefreshTrigger.SCHEDULED)
    return RefreshRecord(kind, trigger, T0, timedelta(seconds=seconds), 1, 1, strategy=strategy, **more)


HISTORY = (  # newest first, as service.history answers
    record(2),
    record(9, error="boom"),  # a failed attempt says nothing about how long work takes
    record(0.1, RefreshKind.NOOP, ""),
    record(4),
    record(3),
    record(30, RefreshKind.FULL, "full: fallback — the change is large"),
    record(20, RefreshKind.FULL, "full recompute", trigger=RefreshTrigger.INITIAL),
)


def test_a_refresh_is_predicted_from_the_recent_refreshes_of_its_strategy_with_their_range() -> None:
    assert [strategy_of(r) for r in (HISTORY[0], HISTORY[-2], HISTORY[-1])] == [
        Strategy.AGGREGATE_MERGE.label,
        FULL_RECOMPUTE,
        FULL_RECOMPUTE,
    ]
    merge = estimate(HISTORY, Strategy.AGGREGATE_MERGE.label)
    assert merge is not None and merge.matched
    assert (merge.median, merge.low, merge.high, merge.runs) == (
        timedelta(seconds=3),
        timedelta(seconds=2),
        timedelta(seconds=4),
        3,
    )
    assert str(merge) == "3s (median of the last 3 merge the aggregated delta, range 2s–4s)"
    full = estimate(HISTORY, FULL_RECOMPUTE)
    assert full is not None and (full.median, full.runs) == (timedelta(seconds=25), 2)
    other = estimate(HISTORY, Strategy.APPEND_DELTA.label)  # never ran: every successful refresh, said so
    assert other is not None and not other.matched and other.runs == 5
    assert "none ran append the delta yet" in str(other)
    assert estimate([record(9, error="boom")], FULL_RECOMPUTE) is None
    assert usual_strategy(HISTORY) == Strategy.AGGREGATE_MERGE.label
    assert usual_strategy([HISTORY[-1]]) == FULL_RECOMPUTE and usual_strategy([]) is None


def test_per_hour_is_per_refresh_times_the_schedules_rate() -> None:
    assert refreshes_per_hour(RefreshMode.CONTINUOUS, timedelta(minutes=1), "", T0) == 60
    assert refreshes_per_hour(RefreshMode.FULL, timedelta(days=1), "0 0 * * *", T0) == pytest.approx(1 / 24)
    assert refreshes_per_hour(RefreshMode.FULL, timedelta(hours=1), "", T0) == 1  # FULL without a cron: interval
    cost = hourly_cost(HISTORY, Strategy.AGGREGATE_MERGE.label, 60)
    assert cost is not None and cost.per_hour == timedelta(minutes=3)
    assert str(cost) == (
        "up to 3m 00s of refresh time an hour (range 2m 00s–4m 00s): 60 refresh(es) an hour × 3s, "
        "when every refresh has changes to apply"
    )
    assert hourly_cost([], FULL_RECOMPUTE, 60) is None


def test_a_preview_without_history_says_so() -> None:
    explanation = Explanation(
        "mt.default.t", RefreshMode.CONTINUOUS, False, plan_query(analyze_query("SELECT k FROM src")), ()
    )
    preview = ChangePreview(
        "ALTER MATERIALIZED TABLE mt.default.t SET FRESHNESS = INTERVAL '5' MINUTE",
        "mt.default.t",
        True,
        "keeps its rows",
        (("schedule", "CONTINUOUS, every 1 minute → CONTINUOUS, every 5 minutes"),),
        "nothing to do (no source changed)",
        None,
        None,
        Strategy.APPEND_DELTA.label,
        explanation,
    )
    text = str(preview)
    assert text.splitlines()[0].endswith("SET FRESHNESS = INTERVAL '5' MINUTE: a preview (nothing changed)")
    assert "  cost:               no history yet (no refresh has committed), so no prediction" in text
    assert "  mt.default.t: CONTINUOUS" in text
    with_cost = ChangePreview(
        *(preview.statement, preview.table, True, "keeps its rows", preview.changes, preview.next_refresh),
        estimate(HISTORY, Strategy.APPEND_DELTA.label),
        HourlyCost(estimate(HISTORY, Strategy.APPEND_DELTA.label), 12),  # type: ignore[arg-type]
        Strategy.APPEND_DELTA.label,
        explanation,
    )
    assert "  per hour:           up to " in str(with_cost) and "that refresh:" not in str(with_cost)


RULES = FreshnessRules()


def test_explain_takes_a_name_a_query_a_create_or_a_change_and_refuses_the_rest_with_a_fix() -> None:
    assert explained("ns.`my table`", RULES) == TableName("my table", "ns")
    query = explained("SELECT k FROM src", RULES)
    assert isinstance(query, CreateMaterializedTable) and query.name == QUERY_NAME
    assert isinstance(explained("ALTER MATERIALIZED TABLE t AS SELECT k FROM src", RULES), AlterQuery)
    assert isinstance(
        explained("ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '5' MINUTE", RULES), AlterFreshness
    )
    assert isinstance(
        explained("ALTER MATERIALIZED TABLE t RESUME WITH ('spark.sql.shuffle.partitions' = '8')", RULES), AlterResume
    )
    create_or_alter = explained("CREATE OR ALTER MATERIALIZED TABLE t AS SELECT k FROM src", RULES)
    assert isinstance(create_or_alter, CreateMaterializedTable) and create_or_alter.or_alter
    with pytest.raises(
        MtMagicError, match=r"^%mt explain takes a table name, a query, or one CREATE MATERIALIZED"
    ) as e:
        explained("ALTER MATERIALIZED TABLE t SUSPEND", RULES)
    assert "got ALTER MATERIALIZED TABLE t" in str(e.value) and e.value.fix_line().startswith("Fix: explain the table")
    with pytest.raises(MtMagicError, match="needs a table name or a statement") as e:
        explained("  ", RULES, "mt_magic.explain")
    assert "Fix: name the table, e.g. mt_magic.explain daily_orders" in str(e.value)
    with pytest.raises(SqlError, match=r"line 2, column \d+"):
        explained("ALTER MATERIALIZED TABLE t\nSET FRESHNESS = INTERVAL '5' FORTNIGHT", RULES)


def test_a_refresh_that_will_run_on_spark_is_not_priced_by_in_process_runs_without_saying_so() -> None:
    from mt_magic.vocabulary import RefreshEngine

    append = f"incremental: {Strategy.APPEND_DELTA.label}"
    history = [
        record(0.1, strategy=append, engine=RefreshEngine.IN_PROCESS),
        record(1.2, strategy=append, engine=RefreshEngine.SPARK),
        record(0.2, strategy=append, engine=RefreshEngine.IN_PROCESS),
    ]
    spark = estimate(history, Strategy.APPEND_DELTA.label, RefreshEngine.SPARK)
    assert spark is not None and (spark.median, spark.runs, spark.elsewhere) == (timedelta(seconds=1.2), 1, None)
    only_in_process = history[::2]
    guess = estimate(only_in_process, Strategy.APPEND_DELTA.label, RefreshEngine.SPARK)
    assert guess is not None and guess.runs == 2 and guess.elsewhere is RefreshEngine.IN_PROCESS
    assert str(guess).endswith("; they ran in process (DuckDB), the new definition runs on Spark)")
    either = estimate(history, Strategy.APPEND_DELTA.label)
    assert either is not None and either.runs == 3 and either.elsewhere is None
