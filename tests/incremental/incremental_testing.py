"""Helpers for incremental-refresh tests (imported by name: pytest puts this directory on sys.path).

The oracle: after a refresh, the table must equal the definition query run at exactly the source snapshots
the new refresh state records, compared as multisets.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timezone

from shared_catalog import CATALOG

from mt_magic.runtime.status import RefreshOutcome, RefreshRequest
from mt_magic.vocabulary import RefreshTrigger

COW = (
    "TBLPROPERTIES ('write.delete.mode' = 'copy-on-write', 'write.update.mode' = 'copy-on-write', "
    "'write.merge.mode' = 'copy-on-write')"
)
MOR = (
    "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
)

V3 = (
    "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
)
"""Format v3: deletes as deletion vectors."""


def run(service, cell: str) -> list:
    """Execute every statement of a cell and wait for the refreshes it started."""
    from mt_magic.sql import parse_cell

    results = [service.execute(s) for s in parse_cell(cell)]
    for r in results:
        if r.refresh is not None:
            r.refresh.result(timeout=300)
    return results


def insert_values(spark, table: str, *rows: str) -> None:
    """``INSERT INTO table VALUES row, …`` (each row already SQL, e.g. ``"('a', 1)"``)."""
    spark.sql(f"INSERT INTO {table} VALUES {', '.join(rows)}")


def qualified(service, table: str) -> str:
    return f"{CATALOG}.{service.workspace.default_namespace}.{table}"


def refresh(service, table: str, trigger: RefreshTrigger = RefreshTrigger.SCHEDULED) -> RefreshOutcome:
    """One refresh as the manager would start it."""
    return service.engine.refresh(RefreshRequest(qualified(service, table), trigger, datetime.now(timezone.utc)))


def changed_since_last_refresh(service, table: str, sources) -> tuple[set[str], bool]:  # type: ignore[no-untyped-def]
    """Read independently of the planner: (which of ``sources`` changed rows since ``table``'s last refresh, whether
    an overwrite or delete landed). A write that changes no rows (an empty append, a delete matching nothing) is no
    change, as for the planner (``SnapshotInfo.changes_rows``)."""
    catalog = service.workspace.catalog
    _, state = catalog.load(qualified(service, table)).last_refresh()
    changed, row_level = set(), False
    for name in sources:
        source = catalog.load(qualified(service, name))
        logical = [s for s in source.snapshots_after(state.snapshot_of(source.name)) or () if s.changes_rows]
        if logical:
            changed.add(name)
        row_level = row_level or any(s.operation in ("overwrite", "delete") for s in logical)
    return changed, row_level


def _normal(value: object) -> object:
    return round(value, 6) if isinstance(value, float) else value


def multiset(df) -> Counter:
    return Counter(tuple(_normal(v) for v in row) for row in df.collect())


def oracle(service, table: str) -> tuple[Counter, Counter]:
    """(the table's rows, the query's rows at the snapshots the last refresh state records)."""
    from mt_magic.sql.query.rewrite import pin_sources

    spark = service.workspace.spark
    info, definition = service.workspace.catalog.load_materialized(qualified(service, table))
    last = info.last_refresh()
    assert last is not None, f"{table} has no refresh state"
    pinned = {s.qualified_name: s.snapshot_id for s in last[1].source_states}
    assert all(v is not None for v in pinned.values()), "oracle needs non-empty sources"
    expected = spark.sql(pin_sources(definition.expanded_query, pinned))
    columns = [f"`{c}`" for c in spark.table(qualified(service, table)).columns]
    return multiset(spark.table(qualified(service, table))), multiset(expected.select(*columns))


def assert_matches_oracle(service, table: str) -> None:
    actual, expected = oracle(service, table)
    missing, extra = expected - actual, actual - expected
    assert not missing and not extra, f"{table}: missing {dict(missing)}, extra {dict(extra)}"


class SourceWriter:
    """Random appends, deletes and updates on one copy-on-write source ``(k INT, g STRING, v INT, ds STRING)``."""

    def __init__(self, spark, name: str, rng: random.Random, not_null: bool = False) -> None:
        self.spark, self.name, self.rng, self.not_null = spark, name, rng, not_null
        null = " NOT NULL" if not_null else ""
        spark.sql(
            f"CREATE TABLE {name} (k INT{null}, g STRING{null}, v INT, ds STRING) USING iceberg "
            f"PARTITIONED BY (ds) {COW}"
        )

    def _value(self, text: str, nullable: bool = True) -> str:
        return "NULL" if nullable and not self.not_null and self.rng.random() < 0.08 else text

    def append(self, rows: int | None = None) -> None:
        rng = self.rng
        values = []
        for _ in range(rows or rng.randint(1, 8)):
            k = self._value(str(rng.randint(0, 6)))
            g = self._value(rng.choice([f"'g{rng.randint(0, 3)}'", "'it\\'s \\\\ odd'"]))
            v = "NULL" if rng.random() < 0.1 else str(rng.randint(-5, 20))
            values.append(f"({k}, {g}, {v}, 'd{rng.randint(1, 3)}')")
        self.spark.sql(f"INSERT INTO {self.name} VALUES {', '.join(values)}")

    def delete(self) -> None:
        rng = self.rng
        predicate = rng.choice(
            [
                f"k = {rng.randint(0, 6)}",
                f"v % 5 = {rng.randint(0, 4)}",
                f"g = 'g{rng.randint(0, 3)}'",
                f"ds = 'd{rng.randint(1, 3)}' AND v > {rng.randint(0, 15)}",
            ]
        )
        self.spark.sql(f"DELETE FROM {self.name} WHERE {predicate}")

    def update(self) -> None:
        rng = self.rng
        change = rng.choice(["v = v + 1", "g = 'g9'", "k = k + 1", "v = NULL"])
        if self.not_null and change.startswith(("g", "k")):
            change = "v = v + 1"
        self.spark.sql(f"UPDATE {self.name} SET {change} WHERE k = {rng.randint(0, 6)} OR v = {rng.randint(0, 20)}")

    def random_change(self, row_level: bool) -> str:
        """One random operation (only appends unless ``row_level``); returns its kind."""
        kind = self.rng.choice(["append", "delete", "update", "append"]) if row_level else "append"
        getattr(self, kind)()
        return kind
