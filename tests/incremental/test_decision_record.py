"""Every refresh records its decision (issue 39): the change it saw, each candidate's estimate, the choice and
why, and what it cost — in the commit's summary, in ``%mt history`` and in ``table(…).history()``; a no-op too."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from incremental_testing import COW, assert_matches_oracle, qualified, run

from mt_magic.api.handle import HISTORY_COLUMNS, MaterializedTable
from mt_magic.runtime.refresh.decision_summary import DECISION_KEY
from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.runtime.status import Decision, RefreshOutcome, RefreshRequest
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshTrigger
from mt_magic.widgets.static_views import HistoryView

pytestmark = pytest.mark.spark

QUERY = "AS SELECT g, count(*) AS n, sum(k) AS s FROM src GROUP BY g"


def append(spark, start: int, rows: int) -> None:
    new = spark.range(start, start + rows).selectExpr("CAST(id AS INT) AS k", "CAST(id % 10 AS INT) AS g")
    new.writeTo("src").append()


def refresh(mt, table: str, group: str) -> RefreshOutcome:
    request = RefreshRequest(
        qualified(mt, table), RefreshTrigger.SCHEDULED, datetime.now(timezone.utc), job_group=group
    )
    return mt.engine.refresh(request)


def decision_of(outcome: RefreshOutcome) -> Decision:
    assert outcome.decision is not None, outcome
    return outcome.decision


def test_spark_in_process_full_and_no_op_refreshes_record_their_decisions(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, g INT) USING iceberg {COW}")
    append(spark, 0, 1_000)
    run(
        mt,
        f"""CREATE MATERIALIZED TABLE on_spark WITH ('incremental.engine' = 'spark',
        'incremental.max-change-fraction' = '0.3') FRESHNESS = INTERVAL '1' MINUTE {QUERY};
        CREATE MATERIALIZED TABLE local FRESHNESS = INTERVAL '1' MINUTE {QUERY}""",
    )
    append(spark, 1_000, 50)
    spark_run, local_run = refresh(mt, "on_spark", "decision-spark"), refresh(mt, "local", "decision-local")
    assert spark_run.engine is RefreshEngine.SPARK and local_run.strategy.endswith(IN_PROCESS)
    for outcome in (spark_run, local_run):
        decision = decision_of(outcome)
        assert decision.chosen is RefreshKind.INCREMENTAL and decision.reason == outcome.strategy
        assert decision.change is not None and decision.change.rows == 50
        assert decision.change.changed_source_rows == 1_050 and decision.change.ratio == pytest.approx(50 / 1_050)
        (delta,) = decision.change.sources
        assert (delta.name, delta.rows_added, delta.rows_removed) == (qualified(mt, "src"), 50, 0)
        assert delta.files_added >= 1 and delta.files_removed == 0
        estimates = decision.estimates
        assert estimates is not None and estimates.basis == "priors × the table's speed (1 recorded)"  # CREATE's
        assert estimates.incremental_s is not None and estimates.full_s is not None
        assert decision.measured.wall_s is not None and decision.measured.wall_s > 0
        assert decision.measured.bytes_written is not None and decision.measured.bytes_written > 0
    on_spark = decision_of(spark_run).measured  # Spark's status store, by the run's job group
    assert on_spark.spark_task_s is not None and on_spark.bytes_read is not None and on_spark.bytes_read > 0
    assert on_spark.spark_jobs is not None and on_spark.spark_jobs >= 1
    local = decision_of(local_run).measured
    assert local.spark_task_s == 0.0 and local.bytes_read is None  # no Spark job; pyiceberg's reads not counted
    assert local.spark_jobs == 0
    for table in ("on_spark", "local"):
        assert_matches_oracle(mt, table)

    # the summary holds the record beside the untouched refresh state
    summary = mt.workspace.catalog.load(qualified(mt, "on_spark")).snapshots[-1].summary
    record = json.loads(summary[DECISION_KEY])
    assert record["chosen"] == "incremental" and record["change"]["rows"] == 50
    assert set(record["estimates"]) == {"incremental-s", "full-s", "basis"}
    assert "mt.refresh-state" in summary or "refresh-state" in summary

    # no source changed: a no-op, nothing committed, its decision on the outcome
    noop = refresh(mt, "on_spark", "decision-noop")
    assert noop.kind is RefreshKind.NOOP
    decision = decision_of(noop)
    assert decision.chosen is RefreshKind.NOOP and decision.change is not None and decision.change.rows == 0
    assert decision.estimates is None and decision.measured.spark_task_s == 0.0

    # a change past the table's fraction (kept whatever the model says): a recompute, both estimates, the reason
    append(spark, 2_000, 200_000)
    full = refresh(mt, "on_spark", "decision-full")
    decision = decision_of(full)
    assert decision.chosen is RefreshKind.FULL and FallbackReason.CHEAPER_TO_RECOMPUTE.sentence in decision.reason
    assert decision.estimates is not None and decision.estimates.full_s is not None
    assert decision.estimates.incremental_s is not None  # the candidate it weighed
    assert_matches_oracle(mt, "on_spark")

    # history: the catalog's records carry the decision, this process's Spark cost added
    records = mt.engine.history(qualified(mt, "on_spark"))
    chosen = [r.decision.chosen for r in records if r.decision]
    assert chosen == [RefreshKind.FULL, RefreshKind.INCREMENTAL, RefreshKind.FULL]  # the last: CREATE's
    assert records[0].decision is not None and records[0].decision.measured.spark_task_s is not None
    text = repr(HistoryView("on_spark", records))
    assert text.count("    why: saw ") == 3 and "→ full" in text and "→ incremental" in text

    frame = MaterializedTable(qualified(mt, "on_spark"), mt).history()
    assert list(frame.columns) == list(HISTORY_COLUMNS)
    newest = frame.iloc[0]
    assert newest["chosen"] == "full" and newest["change_rows"] == 200_000
    assert newest["est_full_s"] > 0 and newest["est_incremental_s"] > 0 and newest["bytes_written"] > 0


def test_a_refresh_kept_incremental_against_its_estimates_says_why(mt, spark) -> None:
    """The quickstart's case before its upsert retracted: a two-row source whose upsert the priors estimate dearer
    than a recompute. ADAPTIVE
    keeps it incremental (under its row floor either refresh is about one Spark job) and the record says so,
    where it read as a wrong choice before."""
    spark.sql(f"CREATE TABLE src (k INT, g INT) USING iceberg {COW}")
    spark.sql("INSERT INTO src VALUES (1, 1), (2, 2)")
    average = "AS SELECT g, avg(k) AS a FROM src GROUP BY g"  # its touched groups are recomputed: a dear prior
    run(mt, f"CREATE MATERIALIZED TABLE tiny FRESHNESS = INTERVAL '1' MINUTE {average}")
    spark.sql("MERGE INTO src t USING (SELECT 1 AS k, 2 AS g) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET g = s.g")
    outcome = refresh(mt, "tiny", "decision-kept")
    decision = decision_of(outcome)
    assert decision.chosen is RefreshKind.INCREMENTAL and decision.estimates is not None
    assert decision.estimates.favour_full, decision.estimates
    assert decision.reason.startswith(outcome.strategy)
    assert "incremental although estimated dearer: the changed sources hold 2 rows, under 100,000" in decision.reason
    assert_matches_oracle(mt, "tiny")
