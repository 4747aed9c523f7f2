"""Differential tests for the operators beyond projections and GROUP BY: outer, semi and anti joins — also
written as IN and [NOT] EXISTS subqueries — (affected join keys), partitioned windows and top-N (affected
window partitions), UNION ALL (delta terms per branch) and UNION (DISTINCT over them).

Random appends, deletes and updates (NULL keys included) on two copy-on-write sources, each alone (a change to
a keyed join's preserved table alone is a sum of delta terms) and both together; after EVERY refresh
the table equals the query run at the source snapshots its new refresh state records, and the strategy that
ran is the expected one (a silent fallback fails). Tables share the sources, as in ``test_differential``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import pytest
from incremental_testing import SourceWriter, assert_matches_oracle, changed_since_last_refresh, refresh, run

from mt_magic.runtime.refresh.incremental import Strategy
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark

ROUNDS = int(os.environ.get("MT_DIFFERENTIAL_ROUNDS", "4"))
SEED_SHIFT = int(os.environ.get("MT_DIFFERENTIAL_SEED", "0"))


@dataclass(frozen=True)
class Case:
    table: str
    head: str
    query: str
    strategy: Strategy
    sources: tuple[str, ...] = ("src", "dim")
    on_changes: Strategy | None = None
    """The strategy of a refresh over row-level changes, when it differs from ``strategy``."""
    preserved: tuple[str, ...] = ()
    """A keyed join's preserved tables: a change to these alone appends the delta or applies the changes."""

    @property
    def ddl(self) -> str:
        return f"CREATE MATERIALIZED TABLE {self.table} {self.head} FRESHNESS = INTERVAL '1' MINUTE AS {self.query}"


KEYS = Strategy.AFFECTED_KEYS
SRC, DIM = ("src",), ("dim",)
WINDOWS = Strategy.AFFECTED_WINDOWS
CASES = [
    Case("lj", "", "SELECT s.k, s.g, s.v, d.v AS dv FROM src s LEFT JOIN dim d ON s.k = d.k", KEYS, preserved=SRC),
    Case("rj", "", "SELECT d.k, s.v, d.g FROM src s RIGHT JOIN dim d ON s.k = d.k AND s.v > 3", KEYS, preserved=DIM),
    Case("fj", "", "SELECT s.k AS sk, d.k AS dk, s.g, d.v AS dv FROM src s FULL JOIN dim d ON s.k = d.k", KEYS),
    Case(
        "fj_using",
        "",
        "SELECT k, s.g, d.v AS dv FROM src s FULL OUTER JOIN dim d USING (k) WHERE s.v IS NULL OR s.v > 0",
        KEYS,
    ),
    Case("anti", "", "SELECT s.k, s.g, s.ds FROM src s LEFT ANTI JOIN dim d ON d.k = s.k", KEYS, preserved=SRC),
    Case(
        "in_sub",
        "",
        "SELECT s.k, s.v FROM src s WHERE s.k IN (SELECT d.k FROM dim d WHERE d.v > 5)",
        KEYS,
        preserved=SRC,
    ),
    Case(
        "not_exists",
        "",
        "SELECT s.k, s.g, s.v FROM src s WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.k = s.k AND d.v > s.v)",
        KEYS,
        preserved=SRC,
    ),
    Case(
        "ranked",
        "",
        "SELECT g, k, v, row_number() OVER (PARTITION BY g ORDER BY v, k, ds) AS rn, "
        "sum(v) OVER (PARTITION BY g) AS total FROM src WHERE k IS NULL OR k <> 3",
        WINDOWS,
        ("src",),
    ),
    Case(
        "top2",
        "",
        "SELECT g, k, v FROM (SELECT g, k, v, row_number() OVER (PARTITION BY g ORDER BY v DESC, k, ds) AS rn "
        "FROM src) t WHERE rn <= 2",
        WINDOWS,
        ("src",),
    ),
    Case(
        "top1_part",
        "PARTITIONED BY (ds)",
        "SELECT ds, g, v FROM (SELECT *, rank() OVER (PARTITION BY ds, g ORDER BY v DESC) AS r FROM src) x WHERE r = 1",
        WINDOWS,
        ("src",),
    ),
    Case(
        "union_all",
        "",
        "SELECT k, g, v FROM src WHERE v > 2 UNION ALL SELECT k, g, v * 10 FROM dim",
        Strategy.APPEND_DELTA,
        on_changes=Strategy.APPLY_CHANGES,
    ),
    Case(
        "union",
        "",
        "SELECT k, g FROM src UNION SELECT k, g FROM dim WHERE v IS NOT NULL",
        Strategy.AGGREGATE_MERGE,
        on_changes=Strategy.AFFECTED_GROUPS,
    ),
]


def _expected(c: Case, changed: set[str], row_level: bool) -> Strategy:
    if c.preserved and changed <= set(c.preserved):
        return Strategy.APPLY_CHANGES if row_level else Strategy.APPEND_DELTA
    return c.on_changes if row_level and c.on_changes else c.strategy


def _check(mt, c: Case) -> None:
    changed, row_level = changed_since_last_refresh(mt, c.table, c.sources)
    outcome = refresh(mt, c.table)
    if outcome.kind is RefreshKind.NOOP:
        assert not changed, (c.table, outcome)
        return
    assert outcome.kind is RefreshKind.INCREMENTAL, (c.table, outcome)
    expected = _expected(c, changed, row_level)
    # an UPDATE or DELETE matching no row still commits a snapshot: its changelog is empty
    labels = (expected.label, Strategy.NO_LOGICAL_CHANGE.label)
    assert any(outcome.strategy.startswith(f"incremental: {label}") for label in labels), (c.table, outcome)
    assert_matches_oracle(mt, c.table)


def test_outer_joins_and_windows_match_a_full_recompute_under_random_changes(mt, spark) -> None:
    rng = random.Random(23 + SEED_SHIFT)
    src, dim = SourceWriter(spark, "src", rng), SourceWriter(spark, "dim", rng)
    src.append(14)
    dim.append(8)
    run(mt, ";".join(c.ddl for c in CASES))
    for c in CASES:
        assert_matches_oracle(mt, c.table)
    # each side alone (a change to preserved tables alone is delta terms), then both, then at random
    schedule = [[src], [src], [dim], [src, dim]]
    for round_ in range(ROUNDS):
        writers = schedule[round_] if round_ < len(schedule) else rng.sample([src, dim], rng.randint(1, 2))
        for writer in writers:
            writer.random_change(row_level=round_ > 0)
        for c in CASES:
            _check(mt, c)
