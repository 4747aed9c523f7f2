"""Differential tests: random appends, deletes and updates on copy-on-write sources; after EVERY refresh the
table equals the query run at the source snapshots its new refresh state records, and the strategy that ran
is the one expected for the change (so a silent fallback fails the test).

Several tables share one source so each random change is checked against every strategy at once.
Seeds are fixed; for a longer soak raise ``MT_DIFFERENTIAL_ROUNDS`` and shift ``MT_DIFFERENTIAL_SEED``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import pytest
from incremental_testing import SourceWriter, assert_matches_oracle, qualified, refresh, run

from mt_magic.runtime.refresh.incremental import FallbackReason, Strategy
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark

ROUNDS = int(os.environ.get("MT_DIFFERENTIAL_ROUNDS", "5"))
APPEND_ONLY_ROUNDS = 2
SEED_SHIFT = int(os.environ.get("MT_DIFFERENTIAL_SEED", "0"))
FALLBACK = "fallback"


@dataclass(frozen=True)
class Case:
    """One materialized table over the shared source, and what each kind of change must run."""

    table: str
    ddl: str
    on_appends: frozenset[Strategy | str]
    on_changes: frozenset[Strategy | str]


def case(table: str, head: str, query: str, appends: set, changes: set) -> Case:
    return Case(
        table,
        f"CREATE MATERIALIZED TABLE {table} {head} FRESHNESS = INTERVAL '1' MINUTE AS {query}",
        frozenset(appends),
        frozenset(changes),
    )


NULLABLE_CASES = [
    case(
        "proj",
        "",
        "SELECT k, g, v * 2 AS v2, ds FROM src WHERE v IS NULL OR v % 3 <> 0",
        {Strategy.APPEND_DELTA},
        {Strategy.APPLY_CHANGES},
    ),
    case(
        "proj_part",
        "PARTITIONED BY (ds)",
        "SELECT ds, k, v FROM src WHERE k IS NULL OR k < 5",
        {Strategy.APPEND_DELTA},
        {Strategy.APPLY_CHANGES},
    ),
    case(
        "agg",
        "",
        "SELECT g, k, count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM src GROUP BY g, k",
        {Strategy.AGGREGATE_MERGE},
        {Strategy.AGGREGATE_RETRACT},
    ),
    case(
        "agg_part",
        "PARTITIONED BY (ds)",
        "SELECT ds, g, count(*) AS n, sum(v) FILTER (WHERE v > 0) AS pos, max(v) AS hi FROM src GROUP BY ds, g",
        {Strategy.AGGREGATE_MERGE},
        {Strategy.AGGREGATE_RETRACT},
    ),
    case(
        "groups",
        "",
        "SELECT g, count(DISTINCT v) AS dv, avg(v) AS av, min(k) AS lo FROM src GROUP BY g HAVING count(*) > 1",
        {Strategy.AFFECTED_GROUPS},
        {Strategy.AFFECTED_GROUPS},
    ),
    case(
        "sets",
        "",
        "SELECT g, k, count(*) AS n, sum(v) AS s FROM src GROUP BY GROUPING SETS ((g), (g, k))",
        {Strategy.AFFECTED_GROUPS},
        {Strategy.AFFECTED_GROUPS},
    ),
    case(
        "total", "", "SELECT count(*) AS n, sum(v) AS s, max(v) AS hi FROM src", {Strategy.AGGREGATE_MERGE}, {FALLBACK}
    ),
    case("dist", "", "SELECT DISTINCT g, ds FROM src", {Strategy.AGGREGATE_MERGE}, {Strategy.AFFECTED_GROUPS}),
]
NON_NULL_CASES = [
    case(
        "sets_nn",
        "",
        "SELECT g, k, count(*) AS n, sum(v) AS s, min(v) AS lo FROM src GROUP BY GROUPING SETS ((g), (g, k))",
        {Strategy.AGGREGATE_MERGE},
        {Strategy.AFFECTED_GROUPS},
    ),
    case(
        "rollup_nn",
        "",
        "SELECT g, k, count(*) AS n, max(v) AS hi FROM src GROUP BY ROLLUP (g, k)",
        {Strategy.AGGREGATE_MERGE},
        {FALLBACK},
    ),
]


def _row_level_since_last_refresh(mt, source: str, table: str) -> bool:
    """Read independently of the planner: did an overwrite/delete snapshot land after the consumed one?"""
    catalog = mt.workspace.catalog
    _, state = catalog.load(qualified(mt, table)).last_refresh()
    consumed = state.snapshot_of(qualified(mt, source))
    after = catalog.load(qualified(mt, source)).snapshots_after(consumed)
    return any(s.operation in ("overwrite", "delete") for s in after)


def _check(mt, source: str, c: Case) -> None:
    row_level = _row_level_since_last_refresh(mt, source, c.table)
    outcome = refresh(mt, c.table)
    # an UPDATE or DELETE matching no row still commits a snapshot: its changelog is empty
    expected = c.on_changes | {Strategy.NO_LOGICAL_CHANGE} if row_level else c.on_appends
    if outcome.kind is RefreshKind.NOOP:
        assert Strategy.NO_LOGICAL_CHANGE in expected or not row_level, (c.table, outcome)
        return
    if FALLBACK in expected:
        assert outcome.kind is RefreshKind.FULL, (c.table, outcome)
        assert (
            outcome.strategy == f"full: fallback — {FallbackReason.GROUPS_NOT_LOCATABLE.sentence} "
            f"({'row-level' if row_level else 'appends'} changes)"
        ), outcome.strategy
    else:
        assert outcome.kind is RefreshKind.INCREMENTAL, (c.table, outcome)
        assert any(outcome.strategy.startswith(f"incremental: {s.label}") for s in expected), (c.table, outcome)
    assert_matches_oracle(mt, c.table)


def _differential(mt, spark, cases: list[Case], seed: int, not_null: bool) -> None:
    rng = random.Random(seed + SEED_SHIFT)
    writer = SourceWriter(spark, "src", rng, not_null=not_null)
    writer.append(12)
    run(mt, ";".join(c.ddl for c in cases))
    for c in cases:
        assert_matches_oracle(mt, c.table)
    for round_ in range(ROUNDS):
        for _ in range(rng.randint(1, 2)):
            writer.random_change(row_level=round_ >= APPEND_ONLY_ROUNDS)
        for c in cases:
            _check(mt, "src", c)


def test_every_strategy_matches_a_full_recompute_under_random_changes(mt, spark) -> None:
    _differential(mt, spark, NULLABLE_CASES, seed=7, not_null=False)


def test_grouping_sets_merge_with_non_null_keys_matches_a_full_recompute(mt, spark) -> None:
    _differential(mt, spark, NON_NULL_CASES, seed=11, not_null=True)
