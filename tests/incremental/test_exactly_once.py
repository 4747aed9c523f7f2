"""Exactly once: an incremental refresh is one commit carrying its refresh state. A crash before the commit
changes nothing and the next refresh produces the right result; a crash after it repeats nothing. Each test
runs on both engines: in process (the default for this small merge) and on Spark."""

from __future__ import annotations

import pytest
from incremental_testing import COW, assert_matches_oracle, multiset, qualified, refresh, run

from mt_magic.errors import RefreshError
from mt_magic.runtime.refresh import commit as commit_module
from mt_magic.runtime.refresh import inputs
from mt_magic.runtime.refresh.incremental import Strategy
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark


class InjectedCrash(Exception):
    """Stands for the kernel dying at the injection point."""


def _crash(*_args, **_kwargs):
    raise InjectedCrash("injected crash")


ENGINES = {"in process": "", "on Spark": "WITH ('incremental.engine' = 'spark') "}


@pytest.fixture(params=list(ENGINES))
def sums(mt, spark, request) -> str:
    """A merge-strategy table (re-applying its delta would double-count) with one pending append."""
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    spark.sql("INSERT INTO src VALUES (1, 10), (2, 20)")
    run(
        mt,
        f"CREATE MATERIALIZED TABLE sums {ENGINES[request.param]}FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k",
    )
    spark.sql("INSERT INTO src VALUES (1, 5), (3, 30)")
    return "sums"


def test_a_crash_right_before_the_commit_leaves_everything_unchanged(mt, spark, sums, monkeypatch) -> None:
    name = qualified(mt, sums)
    before = mt.workspace.catalog.load(name)
    rows_before = multiset(spark.table(name))
    monkeypatch.setattr(inputs, "commit", _crash)

    with pytest.raises(RefreshError, match="injected crash") as raised:
        refresh(mt, sums)
    assert isinstance(raised.value.__cause__, InjectedCrash)

    after = mt.workspace.catalog.load(name)
    assert after.current_snapshot_id == before.current_snapshot_id
    assert multiset(spark.table(name)) == rows_before
    monkeypatch.undo()
    outcome = refresh(mt, sums)
    assert outcome.strategy.startswith(f"incremental: {Strategy.AGGREGATE_MERGE.label}")
    assert_matches_oracle(mt, sums)
    assert refresh(mt, sums).kind is RefreshKind.NOOP


def test_a_crash_right_after_the_commit_repeats_nothing(mt, spark, sums, monkeypatch) -> None:
    name = qualified(mt, sums)
    monkeypatch.setattr(commit_module, "_tagged", _crash)  # the data commit has landed: reading it back crashes

    with pytest.raises(RefreshError, match="injected crash") as raised:
        refresh(mt, sums)
    assert isinstance(raised.value.__cause__, InjectedCrash)

    monkeypatch.undo()
    assert_matches_oracle(mt, sums)
    rows = multiset(spark.table(name))
    assert refresh(mt, sums).kind is RefreshKind.NOOP
    assert multiset(spark.table(name)) == rows
    assert rows[(1, 2, 15)] == 1  # merged once: (1,10) + (1,5)


def test_a_concurrent_write_to_the_table_aborts_the_commit(mt, spark, sums, monkeypatch) -> None:
    name = qualified(mt, sums)
    real_commit = inputs.commit

    def write_first(*args, **kwargs):
        spark.sql(f"INSERT INTO {name} VALUES (9, 1, 1)")  # another writer lands between read and commit
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(inputs, "commit", write_first)
    with pytest.raises(RefreshError, match=r"sums changed during the refresh .*nothing was committed"):
        refresh(mt, sums)
    monkeypatch.undo()
    outcome = refresh(mt, sums)  # the outside write is detected and repaired by a full recompute
    assert outcome.kind is RefreshKind.FULL and "written outside refreshes" in outcome.strategy
    assert_matches_oracle(mt, sums)
