"""A join whose one table receives appends while the other stays as it was (facts arriving against a dimension)
appends its delta term in process: the delta of the appended table joined, in DuckDB, with the other table read
whole at its pinned snapshot. Anything else about a join (the other table changed, a merge of its groups, a join
kind or condition the gate has not proven) runs on Spark. Each refresh is compared with a recompute."""

from __future__ import annotations

import random

import pytest
from incremental_testing import assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS

pytestmark = pytest.mark.spark

JOINS = {
    "inner": "SELECT f.id, f.amount, d.name FROM facts f JOIN dims d ON f.k = d.k",
    "left": "SELECT f.id, f.amount, d.name, d.tier FROM facts f LEFT JOIN dims d ON f.k = d.k WHERE f.amount > 0",
    "left_on_more": (
        "SELECT f.id, d.name FROM facts f LEFT OUTER JOIN dims d ON f.k = d.k AND d.tier <> 'gold' AND f.amount < 50"
    ),
    "null_safe": "SELECT f.id, d.tier FROM facts f INNER JOIN dims d ON f.k <=> d.k",
}


@pytest.fixture
def sources(spark, mt):
    facts, dims = qualified(mt, "facts"), qualified(mt, "dims")
    spark.sql(f"CREATE TABLE {facts} (id BIGINT, k INT, amount DECIMAL(10, 2)) USING iceberg")
    spark.sql(f"CREATE TABLE {dims} (k INT, name STRING, tier STRING) USING iceberg")
    insert_values(spark, dims, "(1, 'one', 'gold')", "(2, 'two', 'silver')", "(2, 'deux', NULL)", "(NULL, 'none', 'x')")
    insert_values(spark, facts, "(1, 1, 10.00)", "(2, 2, 20.50)", "(3, NULL, 5.00)", "(4, 9, -1.00)")
    return facts, dims


def _facts(rng: random.Random, start: int, count: int) -> list[str]:
    def k() -> str:
        return "NULL" if rng.random() < 0.15 else str(rng.randint(0, 3))

    return [f"({i}, {k()}, {rng.randint(-3000, 9000) / 100:.2f})" for i in range(start, start + count)]


def test_appended_facts_join_the_dimension_in_process_and_equal_a_recompute(spark, mt, sources) -> None:
    from mt_magic.runtime.refresh.incremental.explain import explain

    facts, dims = sources
    cells = (f"CREATE MATERIALIZED TABLE j_{n} FRESHNESS = INTERVAL '1' MINUTE AS {q}" for n, q in JOINS.items())
    run(mt, ";".join(cells))
    for name in JOINS:
        line = explain(mt.workspace, qualified(mt, f"j_{name}")).engine
        assert line.startswith("appends") and "in process" in line and "the other table" in line, f"{name}: {line}"
    rng = random.Random(3)
    for round_ in range(3):
        insert_values(spark, facts, *_facts(rng, 100 * (round_ + 1), rng.randint(1, 20)))
        for name in JOINS:
            outcome = refresh(mt, f"j_{name}")
            text = outcome.strategy
            assert text.startswith("incremental: append the delta") and text.endswith(IN_PROCESS), f"{name}: {text}"
            assert_matches_oracle(mt, f"j_{name}")


def test_a_changed_dimension_or_appends_to_both_run_on_spark(spark, mt, sources) -> None:
    facts, dims = sources
    run(mt, f"CREATE MATERIALIZED TABLE j_dim FRESHNESS = INTERVAL '1' MINUTE AS {JOINS['left']}")
    insert_values(spark, dims, "(3, 'three', 'gold')")
    insert_values(spark, facts, "(50, 3, 7.00)")
    outcome = refresh(mt, "j_dim")
    assert IN_PROCESS not in outcome.strategy, outcome.strategy
    assert_matches_oracle(mt, "j_dim")
    insert_values(spark, dims, "(4, 'four', 'bronze')")  # appends to the dimension alone: a LEFT JOIN's other side
    outcome = refresh(mt, "j_dim")
    assert IN_PROCESS not in outcome.strategy, outcome.strategy
    assert_matches_oracle(mt, "j_dim")
    spark.sql(f"UPDATE {dims} SET name = 'uno' WHERE k = 1")
    insert_values(spark, facts, "(51, 1, 8.00)")
    assert IN_PROCESS not in refresh(mt, "j_dim").strategy
    assert_matches_oracle(mt, "j_dim")
    insert_values(spark, facts, "(52, 1, 9.00)")  # the dimension as it was again: in process once more
    assert refresh(mt, "j_dim").strategy.endswith(IN_PROCESS)
    assert_matches_oracle(mt, "j_dim")


def test_an_inner_join_appends_to_either_side_in_process(spark, mt, sources) -> None:
    facts, dims = sources
    run(mt, f"CREATE MATERIALIZED TABLE j_either FRESHNESS = INTERVAL '1' MINUTE AS {JOINS['inner']}")
    insert_values(spark, dims, "(9, 'nine', 'gold')", "(1, 'ein', 'gold')")  # joins facts that were there
    outcome = refresh(mt, "j_either")
    assert outcome.strategy.endswith(IN_PROCESS) and outcome.rows_written == 2, outcome
    assert_matches_oracle(mt, "j_either")


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("SELECT f.id, d.name FROM facts f FULL JOIN dims d ON f.k = d.k", "recompute the affected join keys"),
        ("SELECT f.id, d.name FROM facts f JOIN dims d ON CAST(f.k AS STRING) = d.name", "Cast"),
        ("SELECT d.name, count(*) AS n FROM facts f JOIN dims d ON f.k = d.k GROUP BY d.name", "a join maintained"),
    ],
)
def test_joins_not_proven_equal_name_spark(spark, mt, sources, query: str, why: str) -> None:
    from mt_magic.runtime.refresh.incremental.explain import explain

    run(mt, f"CREATE MATERIALIZED TABLE j_spark FRESHNESS = INTERVAL '1' MINUTE AS {query}")
    line = explain(mt.workspace, qualified(mt, "j_spark")).engine
    assert line.startswith("Spark (") and why in line, line
    insert_values(spark, sources[0], "(60, 1, 1.00)")
    assert IN_PROCESS not in refresh(mt, "j_spark").strategy
    assert_matches_oracle(mt, "j_spark")
