"""A touched DECIMAL value that Spark returns at another scale (the 3.5 chain soak's seed 135: b16_t5 and b16_c2_8
each lost a row keyed by -9999999999999999999999999999).

PySpark pickles a collected decimal with ``BigDecimal.toEngineeringString``, so 1E-10 of a DECIMAL(38, 10)
reaches Python as ``Decimal('1.00E-10')`` (scale 12). A slice filter built with ``F.lit`` of it was a
DECIMAL(12, 12) literal, and ``IN`` compared the column with the listed values in their common type,
DECIMAL(38, 12). That type holds 26 integer digits, so a touched value with 28 became NULL (ANSI off) and matched
nothing. The affected-slice recompute then dropped its rows: the recomputed group, and a keyed join's restricted
source. The SQL filters were right because they cast to the column's type. The Column filters cast too now.

The tables pin the Spark engine: slices are Spark's.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from incremental_testing import insert_values, qualified, refresh, run

pytestmark = pytest.mark.spark

WIDE = "-9999999999999999999999999999"  # 28 integer digits: the most a DECIMAL(38, 10) holds
TINY = "0.0000000001"  # comes back from Spark as Decimal('1.00E-10')
SPARK = "WITH ('incremental' = 'always', 'incremental.engine' = 'spark')"
DISTINCT = "SELECT DISTINCT g, d FROM {src}"


def test_a_slice_filter_matches_every_touched_decimal(spark, ansi_off) -> None:
    from mt_magic.runtime.refresh.incremental.slices import collect_slices

    df = spark.sql(f"SELECT CAST(v AS DECIMAL(38, 10)) AS d FROM VALUES ('{TINY}'), ('{WIDE}'), ('1.5') AS t(v)")
    values = collect_slices(df, {"d": "decimal(38,10)"}).found["d"]
    assert sorted(values.values) == sorted(Decimal(v) for v in (TINY, WIDE, "1.5"))
    assert df.where(values.member()).count() == 3
    assert df.where(values.overwrite_condition()).count() == 3


@pytest.fixture
def src(spark, mt):
    name = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {name} (g STRING, d DECIMAL(38, 10), u INT) USING iceberg")
    return name


def _assert_equals_its_query(spark, mt, table: str, query: str, rows: int) -> None:
    stored = spark.table(qualified(mt, table)).select(*spark.sql(query).columns)
    answer = spark.sql(query)
    assert stored.exceptAll(answer).count() == 0 and answer.exceptAll(stored).count() == 0
    assert stored.count() == rows


def test_a_touched_group_of_a_wide_decimal_is_recomputed_not_dropped(spark, mt, src, ansi_off) -> None:
    insert_values(spark, src, "('a', 1, 1)")
    run(mt, f"CREATE MATERIALIZED TABLE groups {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS {DISTINCT.format(src='src')}")
    insert_values(spark, src, f"('a', {TINY}, 2)", f"('b', {WIDE}, 3)")
    spark.sql(f"DELETE FROM {src} WHERE u = 1")  # a row-level change: the touched groups are recomputed
    outcome = refresh(mt, "groups")
    assert "recompute the affected groups" in outcome.strategy
    _assert_equals_its_query(spark, mt, "groups", DISTINCT.format(src=src), 2)


def test_a_touched_join_key_of_a_wide_decimal_is_recomputed_not_dropped(spark, mt, src, ansi_off) -> None:
    dim = qualified(mt, "dim")
    spark.sql(f"CREATE TABLE {dim} (d DECIMAL(10, 2), n INT) USING iceberg")
    insert_values(spark, src, "('a', 1, 1)")
    insert_values(spark, dim, "(1, 10)")
    query = "SELECT f.g, f.u, d.n FROM {src} f LEFT JOIN {dim} d ON f.d = d.d"
    run(mt, f"CREATE MATERIALIZED TABLE keyed {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        f"{query.format(src='src', dim='dim')}")  # fmt: skip
    insert_values(spark, src, f"('b', {TINY}, 2)", f"('c', {WIDE}, 3)")
    insert_values(spark, dim, "(2, 20)")  # the dimension changed too: the touched join keys are recomputed
    outcome = refresh(mt, "keyed")
    assert "recompute the affected join keys" in outcome.strategy
    _assert_equals_its_query(spark, mt, "keyed", query.format(src=src, dim=dim), 3)
