"""Concurrent writers: while a refresh runs, other writers append to, update and delete from its source, and
another client commits to the materialized table itself (a data-neutral ``INSERT OVERWRITE … SELECT *`` of its
own rows). The refresh that lost the race commits nothing, runs again at once without counting as a failure, and
the table equals its query at the source snapshots its last commit names.

The other writers strike inside the refresh's commit: before its snapshot check (caught by ``commit.py``) or
between that check and Spark's commit (caught by Iceberg's serializable validation inside Spark's commit, which
surfaces as a Py4J error that the engine classifies as a conflict — or, for a refresh run in process, by the
catalog refusing pyiceberg's commit whose base snapshot is no longer current).
"""

from __future__ import annotations

import random

import pytest
from incremental_testing import COW, SourceWriter, assert_matches_oracle, qualified, run

from mt_magic.runtime.refresh import commit as commit_module
from mt_magic.runtime.refresh import inputs

pytestmark = pytest.mark.spark

TABLES = {
    "agg": "SELECT g, count(*) AS n, sum(v) AS s FROM src GROUP BY g",  # incremental: merge by key (overwrite)
    "filtered": "SELECT k, g, v, ds FROM src WHERE v > 3",  # incremental on appends; recomputed on deletes
}


class OtherWriters:
    """Wraps the one commit function: at its first call, other writers commit in the chosen window."""

    def __init__(self, spark, source: SourceWriter, table: str, window: str) -> None:
        self.spark, self.source, self.table, self.window = spark, source, table, window
        self.calls = 0

    def strike(self) -> None:
        for kind in ("append", "update", "delete", "append"):
            getattr(self.source, kind)()
        self.spark.sql(f"INSERT OVERWRITE {self.table} SELECT * FROM {self.table}")

    def commit(self, catalog, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 1 and self.window == "before the check":
            self.strike()
        elif self.calls == 1:
            catalog = _StrikeAfterLoad(catalog, self.strike)
        return commit_module.commit(catalog, *args, **kwargs)


class _StrikeAfterLoad:
    """The catalog as ``commit`` sees it, except that the other writers commit right after its check's load."""

    def __init__(self, catalog, strike) -> None:  # type: ignore[no-untyped-def]
        self._catalog, self._strike = catalog, strike

    def load(self, name: str):  # type: ignore[no-untyped-def]
        info = self._catalog.load(name)
        if self._strike is not None:
            self._strike, strike = None, self._strike
            strike()
        return info

    def __getattr__(self, attr: str):  # type: ignore[no-untyped-def]
        return getattr(self._catalog, attr)


@pytest.mark.parametrize("window", ["before the check", "inside the commit"])
def test_refreshes_racing_other_writers_retry_uncounted_and_stay_exact(mt, spark, monkeypatch, window) -> None:
    source = SourceWriter(spark, "src", random.Random(16))
    spark.sql(f"ALTER TABLE src SET {COW}")
    source.append(12)
    for name, query in TABLES.items():
        run(mt, f"CREATE MATERIALIZED TABLE {name} FRESHNESS = INTERVAL '1' MINUTE AS {query}")
    for name in TABLES:
        source.append(6)
        writers = OtherWriters(spark, source, qualified(mt, name), window)
        monkeypatch.setattr(inputs, "commit", writers.commit)  # every refresh path commits through Refresh.commit

        outcome = mt.refresh(qualified(mt, name)).refresh.result(timeout=300)

        status = mt.status(qualified(mt, name))
        assert outcome.snapshot_id is not None
        assert status.consecutive_failures == 0 and mt.manager.failures(qualified(mt, name)) == []
        assert writers.calls == 2, f"{name}: the stale commit was not refused and retried"
        assert_matches_oracle(mt, name)
        monkeypatch.undo()
