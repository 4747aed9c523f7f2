"""Touched values that have no exact literal: a string that is not valid UTF-8 reaches Python with U+FFFD in place
of its bytes, so a slice filter listing it would match nothing. Such a column is not listed (a coarser slice, or
a recompute that says why), never a filter that silently misses the rows (the seed-7 soak's b20_t15: a group keyed
by such a string vanished from the table on every refresh). A merge into a table identity-partitioned by such a
string recomputes: Iceberg reads the partition value back with U+FFFD, so the table's rows match no change's rows.

The incremental tables pin the Spark engine: slices are Spark's (the in-process path never recomputes slices).
"""

from __future__ import annotations

import pytest
from incremental_testing import insert_values, qualified, refresh, run

BIG = "6000000000000000000000000000"  # two of these overflow a DECIMAL(38, 10) sum
SPARK = "WITH ('incremental.engine' = 'spark')"
BAD = "CAST(unhex('C328') AS STRING)"  # 0xC3 0x28: not UTF-8; Java decodes it as U+FFFD '('
SUMS = "SELECT g, sum(d) AS s, count(*) AS c FROM {src} GROUP BY g"
USERS = "SELECT g, count(DISTINCT u) AS users FROM {src} GROUP BY g"


@pytest.fixture
def src(spark, mt):
    name = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {name} (g STRING, d DECIMAL(38, 10), u INT) USING iceberg")
    return name


def _assert_equals_its_query(spark, mt, table: str, query: str) -> None:
    """Compared inside Spark: a Spark Connect client cannot collect a string that is not UTF-8."""
    stored, answer = spark.table(qualified(mt, table)), spark.sql(query.format(src=qualified(mt, "src")))
    assert stored.exceptAll(answer).count() == 0 and answer.exceptAll(stored).count() == 0
    assert stored.count() == 2


def test_touched_groups_keyed_by_invalid_utf8_are_recomputed_exactly(spark, mt, src, ansi_off) -> None:
    insert_values(spark, src, f"({BAD}, NULL, 1)", f"({BAD}, {BIG}, 2)", "('ok', 1, 3)")
    run(mt, f"CREATE MATERIALIZED TABLE sums {SPARK} FRESHNESS = INTERVAL '1' MINUTE AS {SUMS.format(src='src')}")
    insert_values(spark, src, f"({BAD}, {BIG}, 4)", "('ok', 2, 5)")  # the group's sum now overflows: recompute it
    outcome = refresh(mt, "sums")
    _assert_equals_its_query(spark, mt, "sums", SUMS)
    assert "not valid UTF-8" in outcome.strategy


APPEND = f"INSERT INTO {{src}} VALUES ({BAD}, 1, 9), ('ok', 1, 3)"
DELETE = "DELETE FROM {src} WHERE u = 2"


@pytest.mark.parametrize(
    ("query", "change"),
    [(USERS, APPEND), (SUMS, APPEND), ("SELECT g, u FROM {src}", DELETE)],
    ids=["count-distinct", "sum-merge", "apply-changes"],
)
def test_a_partition_of_invalid_utf8_is_replaced_not_kept_beside_its_new_rows(
    spark, mt, src, ansi_off, query, change
) -> None:
    """Iceberg keeps an identity partition's value as text, so the table reads back U+FFFD where the source has
    the bytes 0xC3: the oracle is the same table refreshed in full, which Iceberg stores the same way."""
    insert_values(spark, src, f"({BAD}, 1, 1)", f"({BAD}, 1, 2)", "('ok', 1, 3)")
    for name, option in (("inc", SPARK), ("full", "WITH ('incremental' = 'never')")):
        run(mt, f"CREATE MATERIALIZED TABLE {name} PARTITIONED BY (g) {option} FRESHNESS = INTERVAL '1' MINUTE AS "
            f"{query.format(src='src')}")  # fmt: skip
    spark.sql(change.format(src=src))
    refresh(mt, "inc")
    refresh(mt, "full")
    stored, full = spark.table(qualified(mt, "inc")), spark.table(qualified(mt, "full"))
    assert stored.exceptAll(full).count() == 0 and full.exceptAll(stored).count() == 0
    assert stored.count() == 2
