"""pyiceberg's own RestCatalog against the server: the full table life cycle, and concurrent writers."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.types import DoubleType

from mt_magic.catalog.client import CatalogConfig, open_catalog


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": pa.array([f"n{i}" for i in range(start, start + n)]),
        }
    )


def local_files(location: str) -> list[Path]:
    root = Path(location.removeprefix("file://"))
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_table_life_cycle(rest: Catalog, ns: str) -> None:
    table = rest.create_table((ns, "events"), schema=rows(1).schema, properties={"owner": "me"})
    table.append(rows(3))
    table.overwrite(rows(2, start=10))
    with table.update_schema() as update:
        update.add_column("score", DoubleType())
    with table.transaction() as tx:
        tx.set_properties({"mt.freshness": "1h"})
        tx.remove_properties("owner")

    loaded = rest.load_table((ns, "events"))
    assert loaded.scan().to_arrow().sort_by("id")["id"].to_pylist() == [10, 11]
    assert [f.name for f in loaded.schema().fields] == ["id", "name", "score"]
    assert loaded.properties.get("mt.freshness") == "1h" and "owner" not in loaded.properties
    assert [s.summary.operation.value for s in loaded.snapshots()][0] == "append"
    assert len({s.schema_id for s in loaded.metadata.schemas}) == len(loaded.metadata.schemas)

    rest.rename_table((ns, "events"), (ns, "renamed"))
    assert rest.list_tables(ns) == [(ns, "renamed")]
    with pytest.raises(NoSuchTableError):
        rest.load_table((ns, "events"))


def test_purge_deletes_every_file_of_the_table(rest: Catalog, ns: str) -> None:
    table = rest.create_table((ns, "doomed"), schema=rows(1).schema)
    for i in range(3):
        table.append(rows(2, start=i * 2))
    location = table.location()
    assert any(p.suffix == ".parquet" for p in local_files(location))
    rest.purge_table((ns, "doomed"))
    assert local_files(location) == []
    assert not rest.table_exists((ns, "doomed"))


def test_drop_without_purge_keeps_files(rest: Catalog, ns: str) -> None:
    table = rest.create_table((ns, "kept"), schema=rows(1).schema)
    table.append(rows(2))
    before = local_files(table.location())
    rest.drop_table((ns, "kept"))
    assert local_files(table.location()) == before


def test_second_writer_gets_409_then_retries_and_both_commits_land(catalog_config: CatalogConfig, ns: str) -> None:
    first, second = open_catalog(catalog_config), open_catalog(catalog_config)
    once = {"commit.retry.num-retries": "0"}  # pyiceberg 0.12 would retry the 409 itself (0.10 never does)
    first.create_table((ns, "shared"), schema=rows(1).schema, properties=once).append(rows(1))
    a, b = first.load_table((ns, "shared")), second.load_table((ns, "shared"))

    a.append(rows(1, start=1))
    with pytest.raises(CommitFailedException, match="has changed"):
        b.append(rows(1, start=2))  # b still believes main has no snapshot: the server answers 409
    second.load_table((ns, "shared")).append(rows(1, start=2))

    final = first.load_table((ns, "shared"))
    assert sorted(final.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2]
    assert len(final.snapshots()) == 3


def test_concurrent_writers_lose_nothing(catalog_config: CatalogConfig, ns: str) -> None:
    writers, commits_each = 4, 5
    open_catalog(catalog_config).create_table((ns, "busy"), schema=rows(1).schema)
    start = threading.Barrier(writers)
    conflicts: list[int] = []

    def write(worker: int) -> None:
        catalog = open_catalog(catalog_config)
        start.wait()
        for k in range(commits_each):
            while True:
                try:
                    catalog.load_table((ns, "busy")).append(rows(1, start=worker * 100 + k))
                    break
                except CommitFailedException:
                    conflicts.append(worker)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    table = open_catalog(catalog_config).load_table((ns, "busy"))
    expected = sorted(w * 100 + k for w in range(writers) for k in range(commits_each))
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == expected
    assert len(table.snapshots()) == writers * commits_each
    assert len(table.metadata.metadata_log) == writers * commits_each  # create + one metadata file per commit
