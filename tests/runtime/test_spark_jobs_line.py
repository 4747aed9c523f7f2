"""``%mt explain``'s Spark jobs line and the history's cost text: what each kind of refresh ran, newest first."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mt_magic.runtime.refresh.incremental.explain import spark_jobs_line
from mt_magic.runtime.status import Decision, Measured, RefreshRecord
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshTrigger
from mt_magic.widgets.static_views import decision_text


def _record(strategy: str, jobs: int | None, engine: RefreshEngine = RefreshEngine.SPARK) -> RefreshRecord:
    kind = RefreshKind.FULL if strategy.startswith("full") else RefreshKind.INCREMENTAL
    decision = Decision(kind, strategy, measured=Measured(spark_task_s=1.0 if jobs else 0.0, spark_jobs=jobs))
    now = datetime.now(timezone.utc)
    return RefreshRecord(kind, RefreshTrigger.SCHEDULED, now, timedelta(1), 0, 1, strategy=strategy, engine=engine,
                         decision=decision)  # fmt: skip


def test_the_newest_measured_refresh_of_each_strategy_and_engine_is_named() -> None:
    records = [
        _record("incremental: apply inserts and deletes · scope", 4),
        _record("full: fallback — a full recompute is cheaper …", 2),
        _record("incremental: apply inserts and deletes", 7),  # older: the newest one counts
        _record("incremental: merge the signed delta · in process (DuckDB), no Spark job", 0, RefreshEngine.IN_PROCESS),
        _record("full recompute", None),  # another process's: not measured here
    ]
    assert spark_jobs_line(records) == (
        "incremental: apply inserts and deletes 4 · full 2 · incremental: merge the signed delta, in process 0"
    )
    assert spark_jobs_line([_record("full recompute", None)]) == ""


def test_the_history_says_how_many_spark_jobs_a_refresh_ran() -> None:
    on_spark, in_process = _record("full recompute", 3), _record("incremental: x", 0, RefreshEngine.IN_PROCESS)
    assert on_spark.decision is not None and in_process.decision is not None
    assert "Spark tasks 1.00s in 3 job(s)" in decision_text(on_spark.decision)
    assert "no Spark job" in decision_text(in_process.decision)
