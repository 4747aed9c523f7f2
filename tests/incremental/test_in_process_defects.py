"""Fixed cases: each defect the in-process path had (issue 24) or the differential fuzzer found — the gate refuses
what it has not proven, data the engines do not hold alike runs on Spark, and the table keeps Spark's answer."""

from __future__ import annotations

import pytest
from incremental_testing import assert_matches_oracle, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.in_process.eligibility import settings_reason, spark_reason
from mt_magic.sql.query.in_process_gate import iceberg_type, unsupported
from mt_magic.vocabulary import RefreshEngine

SOURCE = [("i", "int"), ("d", "decimal(10, 2)"), ("d38", "decimal(38, 10)"), ("b", "boolean"), ("s", "string")]


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("SELECT i FROM src WHERE i IS TRUE", "IS TRUE/FALSE on int"),
        ("SELECT i FROM src WHERE NOT (d IS NOT FALSE)", "IS TRUE/FALSE on decimal(10, 2)"),
        ("SELECT i FROM src WHERE d38 = 1.2655110134975178E16", "a DOUBLE in Spark"),
        ("SELECT i FROM src WHERE d38 NOT IN (1.5, 0.0000000000000000000000000000001)", "passes 38 digits"),
        ("SELECT i FROM src WHERE i = 1.5D", "TryCast"),
        ("SELECT i FROM src WHERE s = 1", "across types"),
        ("SELECT i FROM src WHERE i IN ()", "empty IN"),
    ],
)
def test_the_gate_refuses_what_the_engines_answer_differently(query: str, why: str) -> None:
    reason = unsupported(query, SOURCE)
    assert reason is not None and why in reason, reason


@pytest.mark.parametrize(
    "query",
    [
        "SELECT i FROM src WHERE b IS NOT TRUE",
        "SELECT i FROM src WHERE d38 IN (1.5, 0.0000000001) AND d BETWEEN -1 AND 99999999.99",
        "SELECT i, b, s FROM src WHERE i <=> 2147483648",
    ],
)
def test_the_gate_accepts_what_it_proved(query: str) -> None:
    assert unsupported(query, SOURCE) is None


def test_select_star_reads_every_column_so_a_float_column_runs_on_spark() -> None:
    assert unsupported("SELECT * FROM src", SOURCE) is None
    assert "f is float" in (unsupported("SELECT * FROM src", [*SOURCE, ("f", "float")]) or "")


def test_a_result_the_table_stores_as_another_type_runs_on_spark() -> None:
    table = [("i", iceberg_type("long"))]  # CREATE … (i BIGINT) AS SELECT i (an INT): Spark converts it
    assert "the query gives int" in (unsupported("SELECT i FROM src", SOURCE, table) or "")
    assert unsupported("SELECT i FROM src", SOURCE, [("i", iceberg_type("int"))]) is None


def test_settings_not_honoured_run_on_spark() -> None:
    assert (
        settings_reason({"spark.sql.session.timeZone": "America/Los_Angeles", "spark.sql.ansi.enabled": "true"}) is None
    )
    assert "doubleQuotedIdentifiers = true" in (
        settings_reason({"spark.sql.ansi.doubleQuotedIdentifiers": "true"}) or ""
    )
    assert "not honoured" in (settings_reason({"spark.sql.some.new.setting": "x"}) or "")


def _engine(mt, table: str) -> RefreshEngine:
    outcome = refresh(mt, table)
    assert outcome.strategy.startswith("incremental"), outcome.strategy
    return outcome.engine


def test_is_true_on_an_int_keeps_sparks_rows(spark, mt, ansi_off) -> None:
    """ANSI off (PySpark 4's default is on, where Spark refuses ``i IS TRUE`` on an INT at CREATE)."""
    spark.sql(f"CREATE TABLE {qualified(mt, 'src')} (i INT, b BOOLEAN) USING iceberg")
    spark.sql(f"INSERT INTO {qualified(mt, 'src')} VALUES (1, true)")
    run(mt, "CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' MINUTE AS SELECT i FROM src WHERE i IS TRUE")
    spark.sql(f"INSERT INTO {qualified(mt, 'src')} VALUES (0, false), (1, true), (2, true), (-1, NULL)")
    assert _engine(mt, "t") is RefreshEngine.SPARK
    assert_matches_oracle(mt, "t")  # in process, DuckDB kept 2 and -1 too


def test_a_decimal_sum_past_its_precision_runs_on_spark_and_later_refreshes_work(spark, mt, ansi_off) -> None:
    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (g STRING, d DECIMAL(38, 10)) USING iceberg")
    spark.sql(f"INSERT INTO {src} VALUES ('a', 1), ('b', 1)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE sums FRESHNESS = INTERVAL '1' MINUTE AS SELECT g, sum(d) AS s FROM src GROUP BY g",
    )
    big = "6666666666666666666666666666.6666666666"  # two make 39 digits, within DuckDB's HUGEINT
    spark.sql(f"INSERT INTO {src} VALUES ('a', {big}), ('a', {big})")
    assert _engine(mt, "sums") is RefreshEngine.SPARK  # was: 'Cannot serialize value, precision … 39', every time
    assert_matches_oracle(mt, "sums")
    spark.sql(f"INSERT INTO {src} VALUES ('b', 2)")
    refresh(mt, "sums")
    assert_matches_oracle(mt, "sums")


def test_an_integral_sum_beyond_bigint_runs_on_spark(spark, mt, ansi_off) -> None:
    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (g STRING, v BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {src} VALUES ('a', 1)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE lsum FRESHNESS = INTERVAL '1' MINUTE AS SELECT g, sum(v) AS s FROM src GROUP BY g",
    )
    spark.sql(f"INSERT INTO {src} VALUES ('a', {2**63 - 1}), ('a', {2**63 - 1})")
    assert _engine(mt, "lsum") is RefreshEngine.SPARK  # Spark wraps with ANSI off; DuckDB's HUGEINT would not
    assert_matches_oracle(mt, "lsum")


def test_text_that_is_not_utf8_runs_on_spark_then_valid_appends_run_in_process(spark, mt) -> None:
    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (k INT, s STRING) USING iceberg")
    spark.sql(f"INSERT INTO {src} VALUES (1, 'a')")
    run(mt, "CREATE MATERIALIZED TABLE texts FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, s FROM src")
    spark.sql(f"INSERT INTO {src} VALUES (2, CAST(unhex('FF') AS STRING))")
    assert _engine(mt, "texts") is RefreshEngine.SPARK  # was: "'utf-8' codec can't decode byte 0xff"
    spark.sql(f"INSERT INTO {src} VALUES (3, 'é')")
    assert _engine(mt, "texts") is RefreshEngine.IN_PROCESS
    assert spark.table(qualified(mt, "texts")).count() == 3


def test_explain_names_spark_for_an_orc_source_and_its_refreshes_run_there(spark, mt) -> None:
    from mt_magic.runtime.refresh.incremental.explain import explain

    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (k INT) USING iceberg TBLPROPERTIES ('write.format.default' = 'orc')")
    spark.sql(f"INSERT INTO {src} VALUES (1)")
    run(mt, "CREATE MATERIALIZED TABLE orc_rows FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    line = explain(mt.workspace, qualified(mt, "orc_rows")).engine
    assert line.startswith("Spark (") and "ORC" in line, line
    spark.sql(f"INSERT INTO {src} VALUES (2)")
    assert _engine(mt, "orc_rows") is RefreshEngine.SPARK
    info = mt.workspace.catalog.load(src)
    assert spark_reason({}, _plan("SELECT k FROM src"), None, None, "SELECT k FROM src", [info]) is not None


def _plan(query: str):
    from mt_magic.runtime.refresh.incremental.shape import plan_query
    from mt_magic.sql.query.analysis import analyze_query

    return plan_query(analyze_query(query))


def test_explain_names_spark_for_declared_column_types_the_query_does_not_give(spark, mt) -> None:
    from mt_magic.runtime.refresh.incremental.explain import explain

    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (k INT) USING iceberg")
    spark.sql(f"INSERT INTO {src} VALUES (1)")
    run(mt, "CREATE MATERIALIZED TABLE widened (k BIGINT) FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    line = explain(mt.workspace, qualified(mt, "widened")).engine
    assert line.startswith("Spark ("), line  # the CREATE's conversion wraps the query: not run in process
    spark.sql(f"INSERT INTO {src} VALUES (2)")
    assert _engine(mt, "widened") is RefreshEngine.SPARK
    assert_matches_oracle(mt, "widened")


def test_every_captured_setting_has_a_decision() -> None:
    """Found by the fuzzer on PySpark 4.1: settings captured there only (bangEqualsNot, codingErrorAction, …) were
    unknown to the in-process path, so no refresh ran in process at all (explain agreed: "Spark (…)")."""
    from mt_magic.runtime.refresh.incremental.in_process.eligibility import HONOURED_SETTINGS
    from mt_magic.runtime.spark.semantics import ANSWER_SETTINGS

    assert set(ANSWER_SETTINGS) <= set(HONOURED_SETTINGS)
