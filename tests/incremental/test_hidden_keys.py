"""Hidden key columns on a real Spark and catalog: outer, semi and anti joins whose SELECT list leaves out the join
key, and windows whose partition it leaves out, refresh incrementally (affected join keys / window partitions,
found by the hidden ``__mt_key_0``), each refresh equal to the full recompute, and users never see the column
(DESCRIBE, SHOW CREATE, previews, rows, the Iceberg view).

Random appends, deletes and updates (NULL keys included) on two copy-on-write sources, each alone and both
together; after EVERY refresh the storage table (hidden column included) equals the storage query at the
snapshots its refresh state records, what users read equals the query they wrote, and the strategy that ran is
the expected one (a silent fallback fails).
"""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from incremental_testing import (
    SourceWriter,
    assert_matches_oracle,
    changed_since_last_refresh,
    multiset,
    qualified,
    refresh,
    run,
)
from shared_catalog import CATALOG

from mt_magic.errors import DefinitionError
from mt_magic.runtime.refresh.incremental import Strategy, explain
from mt_magic.sql.errors import ColumnError
from mt_magic.sql.query.rewrite import pin_sources
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark

ROUNDS = int(os.environ.get("MT_DIFFERENTIAL_ROUNDS", "2"))
SEED_SHIFT = int(os.environ.get("MT_DIFFERENTIAL_SEED", "0"))
KEYS, WINDOWS = Strategy.AFFECTED_KEYS, Strategy.AFFECTED_WINDOWS
APPEND, APPLY = Strategy.APPEND_DELTA, Strategy.APPLY_CHANGES
BOTH = ("src", "dim")

CASES = {
    # table: (query, its sources, the tables whose change alone is delta terms, the slice strategy)
    "lj": ("SELECT s.g, s.v, d.g AS dg FROM src s LEFT JOIN dim d ON s.k = d.k", BOTH, {"src"}, KEYS),
    "fj": ("SELECT d.k, s.g, d.v AS dv FROM src s FULL OUTER JOIN dim d ON s.k = d.k", BOTH, set(), KEYS),
    "semi": ("SELECT s.g, s.v FROM src s WHERE s.k IN (SELECT k FROM dim WHERE v > 5)", BOTH, {"src"}, KEYS),
    "anti": (
        "SELECT g, v FROM src s WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.k = s.k AND d.v > s.v)",
        BOTH,
        {"src"},
        KEYS,
    ),
    "top1": (
        "SELECT k, v FROM (SELECT g, k, v, row_number() OVER (PARTITION BY g ORDER BY v, k, ds) AS rn FROM src) t "
        "WHERE rn = 1",
        ("src",),
        set(),
        WINDOWS,
    ),
}


def assert_users_see_their_query(mt, table: str) -> None:
    """What users read (``rows``: no hidden column) equals the query they wrote, at the recorded snapshots."""
    spark = mt.workspace.spark
    info, definition = mt.workspace.catalog.load_materialized(qualified(mt, table))
    _, state = info.last_refresh()
    pinned = {s.qualified_name: s.snapshot_id for s in state.source_states}
    query = CASES[table][0].replace("src", qualified(mt, "src")).replace("dim", qualified(mt, "dim"))
    expected = multiset(spark.sql(pin_sources(query, pinned)))
    shown = mt.rows(qualified(mt, table))
    assert not [c for c in shown.columns if c.startswith("__mt_key_")], shown.columns
    assert multiset(shown) == expected, (table, multiset(shown) - expected, expected - multiset(shown))


def _check(mt, table: str) -> None:
    changed, row_level = changed_since_last_refresh(mt, table, CASES[table][1])
    outcome = refresh(mt, table)
    if outcome.kind is RefreshKind.NOOP:
        assert not changed, (table, outcome)
        return
    assert outcome.kind is RefreshKind.INCREMENTAL, (table, outcome)
    _, _, linear, sliced = CASES[table]
    expected = (APPLY if row_level else APPEND) if changed <= linear else sliced
    labels = (expected.label, Strategy.NO_LOGICAL_CHANGE.label)
    assert any(outcome.strategy.startswith(f"incremental: {label}") for label in labels), (table, outcome)
    assert_matches_oracle(mt, table)  # the storage table, hidden key included, equals the storage query


def test_joins_and_windows_whose_key_is_not_shown_refresh_by_a_hidden_key_equal_to_a_full_recompute(mt, spark) -> None:
    rng = random.Random(41 + SEED_SHIFT)
    src, dim = SourceWriter(spark, "src", rng), SourceWriter(spark, "dim", rng)
    src.append(14)
    dim.append(8)
    run(
        mt,
        ";".join(
            f"CREATE MATERIALIZED TABLE {t} FRESHNESS = INTERVAL '1' MINUTE AS {q}" for t, (q, *_) in CASES.items()
        ),
    )
    for table in CASES:
        info = mt.workspace.catalog.load(qualified(mt, table))
        assert info.columns[-1][0] == "__mt_key_0", info.columns
        explained = explain(mt.workspace, qualified(mt, table))
        label = "join key shown by:" if CASES[table][3] is KEYS else "window partitions:"
        assert f"{label:<20}__mt_key_0 (hidden: users do not see it)" in str(explained), (table, str(explained))
        # appends to a LEFT JOIN's FROM table alone append the storage query's delta term, hidden key included, and
        # the gate accepts it (no subquery, a join on columns): in process; every other case's strategies are Spark's
        expected = "appends to src in process" if table == "lj" else "Spark"
        assert explained.engine.startswith(expected), (table, explained.engine)
        assert_matches_oracle(mt, table)
    schedule = [[src], [src, dim], [dim]]
    for round_ in range(ROUNDS):
        writers = schedule[round_] if round_ < len(schedule) else rng.sample([src, dim], rng.randint(1, 2))
        for writer in writers:
            writer.random_change(row_level=round_ > 0)
        for table in CASES:
            _check(mt, table)
    for table in CASES:
        assert_users_see_their_query(mt, table)


def test_users_never_see_the_hidden_key_and_cannot_name_one(mt, spark) -> None:
    spark.sql("CREATE TABLE facts (id INT, k INT, v INT) USING iceberg")
    spark.sql("CREATE TABLE dims (k INT, name STRING) USING iceberg")
    spark.sql("INSERT INTO facts VALUES (1, 1, 10), (2, 2, 20), (3, NULL, 30)")
    spark.sql("INSERT INTO dims VALUES (1, 'one'), (4, 'four')")
    query = "SELECT f.id, f.v, d.name FROM facts f LEFT JOIN dims d ON f.k = d.k"
    run(mt, f"CREATE MATERIALIZED TABLE shown FRESHNESS = INTERVAL '1' MINUTE AS {query}")
    name = qualified(mt, "shown")

    described = [row[0] for row in run(mt, "DESCRIBE MATERIALIZED TABLE shown")[0].listing.rows]
    assert described[:4] == ["id", "v", "name", ""], described
    assert not any("__mt_key" in str(row) for row in described)
    assert "__mt_key" not in run(mt, "SHOW CREATE MATERIALIZED TABLE shown")[0].listing.text
    preview = mt.preview(name, 10)
    assert preview.columns == ("id", "v", "name") and all(len(r) == 3 for r in preview.rows), preview
    assert mt.rows(name).columns == ["id", "v", "name"]
    # the Iceberg view: its SQL and schema show the user's columns; SELECT * through it runs the user's query
    view = f"{CATALOG}.{mt.workspace.default_namespace}.shown__mv"
    assert spark.table(view).columns == ["id", "v", "name"]
    assert multiset(spark.table(view)) == Counter({(1, 10, "one"): 1, (2, 20, None): 1, (3, 30, None): 1})
    # engines reading the storage table directly see the hidden column (README: "What is incremental")
    assert spark.table(name).columns == ["id", "v", "name", "__mt_key_0"]

    with pytest.raises(DefinitionError, match=r"'__mt_key_1' starts with '__mt_key_'.*Nothing changed; rename it"):
        run(mt, "CREATE MATERIALIZED TABLE bad FRESHNESS = INTERVAL '1' MINUTE AS SELECT id AS __mt_key_1 FROM facts")
    with pytest.raises(DefinitionError, match="reserves for the hidden key columns.*its Iceberg view"):
        run(mt, "CREATE MATERIALIZED TABLE reads_storage FRESHNESS = INTERVAL '1' MINUTE AS SELECT * FROM shown")
    with pytest.raises(ColumnError, match="__MT_KEY_0"):
        run(
            mt,
            "CREATE MATERIALIZED TABLE bad2 (__MT_KEY_0 INT) FRESHNESS = INTERVAL '1' MINUTE AS SELECT id FROM facts",
        )
    assert not spark.catalog.tableExists(qualified(mt, "bad")) and not spark.catalog.tableExists(
        qualified(mt, "reads_storage")
    )


def test_alter_keeps_the_hidden_key_appends_one_and_refuses_to_drop_one(mt, spark) -> None:
    spark.sql("CREATE TABLE facts (id INT, k INT, v INT) USING iceberg")
    spark.sql("CREATE TABLE dims (k INT, name STRING) USING iceberg")
    spark.sql("INSERT INTO facts VALUES (1, 1, 10), (2, 2, 20)")
    spark.sql("INSERT INTO dims VALUES (1, 'one'), (2, 'two')")
    run(
        mt,
        "CREATE MATERIALIZED TABLE plain FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT f.id, f.k, d.name FROM facts f LEFT JOIN dims d ON f.k = d.k",
    )
    name = qualified(mt, "plain")
    assert [c for c, _, _ in mt.workspace.catalog.load(name).columns] == ["id", "k", "name"]  # the key is shown

    # the new query computes k instead of showing the key: the hidden key is appended (a nullable column last),
    # and the ALTER's definition version makes the next refresh a full one, which fills it
    run(
        mt,
        "ALTER MATERIALIZED TABLE plain AS "
        "SELECT f.id, f.k * 1 AS k, d.name FROM facts f LEFT JOIN dims d ON f.k = d.k",
    )
    assert [c for c, _, _ in mt.workspace.catalog.load(name).columns] == ["id", "k", "name", "__mt_key_0"]
    assert refresh(mt, "plain").kind is RefreshKind.FULL
    assert_matches_oracle(mt, "plain")
    run(
        mt,
        "CREATE MATERIALIZED TABLE hid FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT f.id, d.name FROM facts f LEFT JOIN dims d ON f.k = d.k",
    )
    hid = qualified(mt, "hid")
    run(mt, "ALTER MATERIALIZED TABLE hid AS SELECT f.id, d.name, f.v FROM facts f LEFT JOIN dims d ON f.k = d.k")
    assert [c for c, _, _ in mt.workspace.catalog.load(hid).columns] == ["id", "name", "__mt_key_0", "v"]
    assert refresh(mt, "hid").kind is RefreshKind.FULL  # the ALTER's definition version: one full refresh
    spark.sql("INSERT INTO dims VALUES (1, 'uno')")
    assert refresh(mt, "hid").strategy.startswith(f"incremental: {KEYS.label}")
    assert_matches_oracle(mt, "hid")
    # the key shown now: the hidden key stays (the layout only appends)
    run(mt, "ALTER MATERIALIZED TABLE hid AS SELECT f.id, d.name, f.v, f.k FROM facts f LEFT JOIN dims d ON f.k = d.k")
    assert [c for c, _, _ in mt.workspace.catalog.load(hid).columns] == ["id", "name", "__mt_key_0", "v", "k"]
    before = mt.workspace.catalog.load(hid).properties
    with pytest.raises(DefinitionError, match="hidden key column __mt_key_0 .* would be removed"):
        run(mt, "ALTER MATERIALIZED TABLE hid AS SELECT id, v, k FROM facts")
    assert mt.workspace.catalog.load(hid).properties == before
