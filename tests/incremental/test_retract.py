"""A GROUP BY with ``count(*)`` after updates and deletes subtracts what was removed (``merge the signed delta``):
each edge the retraction cannot decide from the groups alone is recomputed by group, and each step equals the
query recomputed (the oracle), on copy-on-write and merge-on-read sources.

The edges: a deleted value that was its group's MAX or MIN (recomputed); a group whose every non-NULL summed value
is deleted (its SUM becomes NULL: recomputed, as only the group's rows tell); a group left with no rows (dropped);
the NULL group key; a delete of NULL values only (the sum is unchanged); an update inside a group.
"""

from __future__ import annotations

import pytest
from incremental_testing import COW, MOR, assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.incremental.strategies import retract_sql

pytestmark = [pytest.mark.spark, pytest.mark.differential]

QUERY = "SELECT g, count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM src GROUP BY g"
STEPS = [
    ("an update inside a group", "UPDATE src SET v = v + 1 WHERE g = 'a' AND v = 4", False),
    ("a group's max deleted", "DELETE FROM src WHERE g = 'b' AND v = 9", True),
    ("a group's min deleted", "DELETE FROM src WHERE g = 'c' AND v = 1", True),
    ("NULL values only", "DELETE FROM src WHERE g = 'a' AND v IS NULL", False),
    ("every non-NULL value of a group", "DELETE FROM src WHERE g = 'd' AND v IS NOT NULL", True),
    ("a whole group", "DELETE FROM src WHERE g IS NULL", False),
    ("a group moved to another", "UPDATE src SET g = 'e' WHERE g = 'c'", False),
]


@pytest.mark.parametrize("layout", ["copy-on-write", "merge-on-read"])
def test_removed_rows_are_subtracted_and_undecidable_groups_recomputed(spark, mt, ansi_off, layout: str) -> None:
    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (g STRING, v BIGINT) USING iceberg {COW if layout == 'copy-on-write' else MOR}")
    insert_values(
        spark,
        src,
        "('a', 2)", "('a', NULL)", "('a', 4)", "('a', 5)",
        "('b', 9)", "('b', 3)", "('b', 4)",
        "('c', 1)", "('c', 6)",
        "('d', 7)", "('d', NULL)",
        "(NULL, 8)", "(NULL, 1)",
    )  # fmt: skip
    run(mt, f"CREATE MATERIALIZED TABLE agg WITH ('incremental' = 'always') FRESHNESS = INTERVAL '1' MINUTE AS {QUERY}")
    for what, change, recomputes in STEPS:
        spark.sql(change.replace("src", src))
        outcome = refresh(mt, "agg")
        assert outcome.strategy.startswith(f"incremental: {Strategy.AGGREGATE_RETRACT.label}"), (what, outcome)
        assert ("recomputed" in outcome.strategy) is recomputes, (what, outcome.strategy)
        assert_matches_oracle(mt, "agg")


def test_the_retraction_sql_drops_empty_groups_and_flags_lost_extremes(spark) -> None:
    """Pure SQL over hand-made sides (0 stored, 1 added, 2 removed): no catalog, no refresh."""
    spark.sql(
        "SELECT * FROM VALUES "
        "('kept', 3L, 30L, 9L, 0), ('kept', 1L, 5L, 5L, 1), ('kept', 1L, 4L, 4L, 2), "  # max 9 stays
        "('lost', 2L, 10L, 9L, 0), ('lost', 1L, 9L, 9L, 2), "  # its max left: recompute
        "('reached', 2L, 10L, 9L, 0), ('reached', 1L, 9L, 9L, 2), ('reached', 1L, 9L, 9L, 1), "  # updated in place
        "('passed', 2L, 10L, 9L, 0), ('passed', 1L, 9L, 9L, 2), ('passed', 1L, 12L, 12L, 1), "  # a new max
        "('short', 2L, 10L, 9L, 0), ('short', 1L, 9L, 9L, 2), ('short', 1L, 8L, 8L, 1), "  # below it: recompute
        "('gone', 1L, 3L, 3L, 0), ('gone', 1L, 3L, 3L, 2), "  # no row left
        "('new', 1L, 2L, 2L, 1) "
        "AS t(g, n, s, hi, __mt_from)"
    ).createOrReplaceTempView("sides")
    sql = retract_sql("sides", ["g"], [("n", "rows"), ("s", "sum"), ("hi", "max")], non_null={"s"})
    rows = {r["g"]: r for r in spark.sql(sql).collect()}
    assert (rows["kept"]["n"], rows["kept"]["s"], rows["kept"]["hi"]) == (3, 31, 9)
    assert not rows["kept"]["__mt_unsafe"] and not rows["kept"]["__mt_gone"]
    assert rows["lost"]["__mt_unsafe"] and rows["gone"]["__mt_gone"]
    # an added row at or past the removed extreme is the group's extreme: no recompute
    assert not rows["reached"]["__mt_unsafe"] and rows["reached"]["hi"] == 9
    assert not rows["passed"]["__mt_unsafe"] and rows["passed"]["hi"] == 12
    assert rows["short"]["__mt_unsafe"]
    assert (rows["new"]["n"], rows["new"]["s"], rows["new"]["hi"]) == (1, 2, 2)


def test_a_sum_over_a_column_no_file_holds_a_null_in_subtracts_deletes(spark, mt, ansi_off) -> None:
    """A nullable column whose data files count no NULL (Iceberg's ``null_value_counts``): deleting a group's
    non-extreme values subtracts them, with no recompute; once a NULL arrives, the same delete recomputes."""
    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (g STRING, v BIGINT, w BIGINT) USING iceberg {MOR}")
    insert_values(spark, src, "('a', 1, 9)", "('a', 2, 5)", "('a', 3, 4)", "('b', 4, 1)", "('b', 5, 2)")
    query = "SELECT g, count(*) AS n, sum(v) AS s, max(w) AS hi, sum(v) FILTER (WHERE v > 2) AS big FROM src GROUP BY g"
    run(mt, f"CREATE MATERIALIZED TABLE sums FRESHNESS = INTERVAL '1' MINUTE AS {query}")
    spark.sql(f"DELETE FROM {src} WHERE g = 'a' AND w = 5")
    outcome = refresh(mt, "sums")
    assert outcome.strategy == f"incremental: {Strategy.AGGREGATE_RETRACT.label}", outcome.strategy
    assert_matches_oracle(mt, "sums")
    # a filtered sum is NULL once no row passes its filter, however non-NULL the column: group a's only v > 2 goes
    # (not an extreme of w: only the filtered sum asks for the recompute)
    spark.sql(f"DELETE FROM {src} WHERE g = 'a' AND v = 3")
    outcome = refresh(mt, "sums")
    assert "recomputed" in outcome.strategy, outcome.strategy
    assert_matches_oracle(mt, "sums")
    insert_values(spark, src, "('b', NULL, 0)")
    refresh(mt, "sums")
    spark.sql(f"DELETE FROM {src} WHERE g = 'b' AND v = 4")  # a NULL in some file now: the group is recomputed
    outcome = refresh(mt, "sums")
    assert outcome.strategy.startswith(f"incremental: {Strategy.AGGREGATE_RETRACT.label}")
    assert "recomputed" in outcome.strategy, outcome.strategy
    assert_matches_oracle(mt, "sums")
