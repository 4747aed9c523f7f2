"""A sum's mass is part of the state (``runtime/refresh/incremental/sum_mass.py``): Spark adds a group's values in
the order it reads them, and a partial sum past the type makes a DECIMAL sum NULL (ANSI off) or fails the query
(ANSI on) — even where the total fits. Once the absolute values a sum adds reach its type's bound, a merge cannot
know Spark's answer and the touched groups are recomputed by Spark's query; below it a merge is exact, and a NULL
sum means "no values".

Most tests pin the Spark engine so they check the merge Spark runs; the last ones run where the engine chooses
(the in-process path). The refresh must equal the query in the session (the oracle).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from incremental_testing import assert_matches_oracle, insert_values, qualified, refresh, run
from notebook_settings import session_settings

from mt_magic.vocabulary import RefreshEngine

# DECIMAL(38, 10) holds 28 integer digits: two of these overflow a sum, one does not.
BIG = "6000000000000000000000000000"
SPARK = "WITH ('incremental.engine' = 'spark')"


@pytest.fixture
def src(spark, mt):
    name = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {name} (g STRING, d DECIMAL(38, 10), n DECIMAL(10, 2)) USING iceberg")
    return name


def _sums(spark, mt) -> dict:
    return {r.g: r.s for r in spark.table(qualified(mt, "sums")).collect()}


def test_an_overflowed_sum_stays_null_when_rows_are_appended_to_its_group(spark, mt, src, ansi_off) -> None:
    insert_values(spark, src, f"('a', {BIG}, 1)", f"('a', {BIG}, 1)", "('b', 1, 1)")
    run(mt, f"CREATE MATERIALIZED TABLE sums {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, sum(d) AS s, sum(n) AS sn, count(*) AS c FROM src GROUP BY g")  # fmt: skip
    assert _sums(spark, mt)["a"] is None  # overflowed: Spark's answer is NULL
    insert_values(spark, src, "('a', 1, 1)", "('b', 2, 1)")
    outcome = refresh(mt, "sums")
    assert_matches_oracle(mt, "sums")
    assert _sums(spark, mt)["a"] is None
    assert "recompute the affected groups" in outcome.strategy
    assert "reach its type's bound" in outcome.strategy
    newest = mt.history(qualified(mt, "sums")).records[0]  # what %mt history shows
    assert newest.strategy == outcome.strategy and newest.engine is RefreshEngine.SPARK


def test_a_sum_of_only_nulls_takes_the_appended_values(spark, mt, src, ansi_off) -> None:
    insert_values(spark, src, "('a', NULL, 1)", "('b', 1, 1)")
    run(mt, f"CREATE MATERIALIZED TABLE sums {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, sum(d) AS s FROM src GROUP BY g")  # fmt: skip
    assert _sums(spark, mt)["a"] is None  # no values yet
    insert_values(spark, src, "('a', 5, 1)")
    refresh(mt, "sums")
    assert_matches_oracle(mt, "sums")
    assert _sums(spark, mt)["a"] == 5


def test_a_delta_that_overflows_on_its_own_makes_the_group_null(spark, mt, src, ansi_off) -> None:
    insert_values(spark, src, "('a', 1, 1)")
    run(mt, f"CREATE MATERIALIZED TABLE sums {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, sum(d) AS s FROM src GROUP BY g")  # fmt: skip
    insert_values(spark, src, f"('a', {BIG})".replace(")", ", 1)"), f"('a', {BIG}, 1)")
    refresh(mt, "sums")
    assert_matches_oracle(mt, "sums")
    assert _sums(spark, mt)["a"] is None


def test_an_overflowed_global_sum_recomputes(spark, mt, src, ansi_off) -> None:
    insert_values(spark, src, f"('a', {BIG}, 1)", f"('b', {BIG}, 1)")
    run(mt, f"CREATE MATERIALIZED TABLE total {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT sum(d) AS s, count(*) AS c FROM src")  # fmt: skip
    insert_values(spark, src, "('c', 1, 1)")
    outcome = refresh(mt, "total")
    assert_matches_oracle(mt, "total")
    assert spark.table(qualified(mt, "total")).first().s is None
    assert "full" in outcome.kind.value
    assert "reach its type's bound" in outcome.strategy


def test_sums_of_narrower_decimals_merge_without_a_check(spark, mt, src, ansi_off) -> None:
    """DECIMAL(10, 2) sums to DECIMAL(20, 2): overflowing it takes more than 10^10 rows, so NULL means no values."""
    insert_values(spark, src, "('a', 1, NULL)")
    run(mt, f"CREATE MATERIALIZED TABLE sums {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, sum(n) AS s FROM src GROUP BY g")  # fmt: skip
    insert_values(spark, src, "('a', 1, 3)")
    outcome = refresh(mt, "sums")
    assert_matches_oracle(mt, "sums")
    assert "merge the aggregated delta" in outcome.strategy


# 9 · 10^27: one of these fits DECIMAL(38, 10); two of the same sign do not, one of each sign adds up to 0.
NEAR, FIVE = "9000000000000000000000000000", "5000000000000000000000000000"


@pytest.mark.parametrize("engine", ["spark", "auto"])
def test_a_group_whose_values_cancel_out_is_recomputed_by_spark(spark, mt, src, ansi_off, engine) -> None:
    """The stored sum is 0 (+9·10^27 and -9·10^27); an append of 5·10^27 gives a total that fits, but Spark may add
    it to +9·10^27 first and answer NULL — or not: Iceberg plans the files in parallel, so the same query over the
    same snapshot answers NULL in one run and the total in another. Only the mass (the absolute values added)
    shows the risk, not the stored sum or the delta's; the group is then Spark's own query, one of its answers."""
    insert_values(spark, src, f"('a', {NEAR}, 1)", f"('a', -{NEAR}, 1)", "('b', 1, 1)")
    run(mt, f"CREATE MATERIALIZED TABLE sums WITH ('incremental.engine' = '{engine}') "
        "FRESHNESS = INTERVAL '1' MINUTE AS SELECT g, sum(d) AS s, count(*) AS c FROM src GROUP BY g")  # fmt: skip
    insert_values(spark, src, f"('a', {FIVE}, 1)", "('b', 2, 1)")
    outcome = refresh(mt, "sums")
    assert "reach its type's bound" in outcome.strategy, outcome.strategy
    assert outcome.engine is RefreshEngine.SPARK
    rows = {r.g: (r.s, r.c) for r in spark.table(qualified(mt, "sums")).collect()}
    assert rows["b"] == (3, 2)
    assert rows["a"] in ((None, 3), (Decimal(FIVE), 3))  # NULL: a partial sum overflowed; else the total


def test_small_sums_merge_in_process_and_record_their_mass(spark, mt, src, ansi_off) -> None:
    """Far from the bound the merge runs where the engine chooses (in process here), probing the mass once and then
    adding each delta's: the refresh state carries it (``mt.sum-mass``)."""
    insert_values(spark, src, "('a', 1.5, 1)", "('b', -2, 1)")
    run(mt, "CREATE MATERIALIZED TABLE sums FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, sum(d) AS s, count(*) AS c FROM src GROUP BY g")  # fmt: skip
    masses = []
    for rows in (("('a', 2, 1)",), ("('a', -3, 1)", "('c', 4, 1)")):
        insert_values(spark, src, *rows)
        outcome = refresh(mt, "sums")
        assert_matches_oracle(mt, "sums")
        assert outcome.engine is RefreshEngine.IN_PROCESS, outcome.strategy
        summary = spark.sql(f"SELECT summary FROM {qualified(mt, 'sums')}.snapshots ORDER BY committed_at DESC")
        masses.append(summary.first().summary["mt.sum-mass"])
    assert masses == ['{"s": 5.5}', '{"s": 12.5}']


@pytest.fixture
def ansi_on(spark):
    with session_settings(spark, {"spark.sql.ansi.enabled": "true"}):
        yield


def test_a_merge_that_overflows_recomputes_instead_of_failing(spark, mt, ansi_on, monkeypatch) -> None:
    """ANSI mode: an incremental refresh adds in another order than the query (the delta's partial sum first), so
    it can overflow where the query over all rows does not — found by the differential fuzzer (seed 7: a BIGINT sum
    of a delta MAX + 5 over a stored -MAX; the refresh failed on every try and the table froze). Whether Spark's own
    query overflows there depends on the order it reads the files in, so the overflow is raised here on purpose and
    the recompute runs on real data."""
    from mt_magic.runtime.refresh.incremental import attempt

    name = qualified(mt, "longs")
    spark.sql(f"CREATE TABLE {name} (l BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1)")
    run(mt, f"CREATE MATERIALIZED TABLE total {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT sum(l) AS s, count(*) AS n FROM longs")  # fmt: skip
    spark.sql(f"INSERT INTO {name} VALUES (2), (5)")

    def overflowing(ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("[ARITHMETIC_OVERFLOW] long overflow. Use 'try_add' to tolerate overflow. SQLSTATE: 22003")

    monkeypatch.setattr(attempt, "execute", overflowing)
    outcome = refresh(mt, "total")
    assert outcome.kind.value == "full" and "overflowed a type" in outcome.strategy, outcome.strategy
    assert_matches_oracle(mt, "total")
    assert [tuple(r) for r in spark.table(qualified(mt, "total")).collect()] == [(8, 3)]


def test_a_bigint_sum_near_its_bound_is_recomputed_under_ansi(spark, mt, ansi_on) -> None:
    """ANSI on: a BIGINT sum's partial sums may fail where the total fits (MAX, then +5, then -MAX), so past the
    bound the touched groups are Spark's own query, which fails or answers 5 depending on the order it reads the
    files in (Iceberg plans them in parallel), as the user's query does."""
    name = qualified(mt, "longs")
    spark.sql(f"CREATE TABLE {name} (g STRING, l BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES ('a', 9223372036854775807), ('a', -9223372036854775807), ('b', 1)")
    run(mt, "CREATE MATERIALIZED TABLE total FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, sum(l) AS s FROM longs GROUP BY g")  # fmt: skip
    spark.sql(f"INSERT INTO {name} VALUES ('a', 5), ('b', 2)")
    try:
        outcome = refresh(mt, "total")
    except Exception as exc:  # Spark's own query overflowed in the order it read the files: as it can
        assert "overflow" in str(exc).lower(), exc
        return
    assert "reach its type's bound" in outcome.strategy or "overflowed a type" in outcome.strategy, outcome.strategy
    assert sorted(tuple(r) for r in spark.table(qualified(mt, "total")).collect()) == [("a", 5), ("b", 3)]
