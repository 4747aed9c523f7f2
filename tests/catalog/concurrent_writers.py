"""Concurrent appends through several catalog servers, counting conflicts and lost commits (imported by
name by the PostgreSQL test and ``benchmarks/bench_catalog_fuzz.py``).

Each writer is a pyiceberg ``RestCatalog`` on one of the servers (round robin) appending one-row commits to
the same table; on a 409 (``CommitFailedException``) it reloads the table and retries, as every Iceberg
client does. Afterwards every commit must be in the table: one snapshot and one row each.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.exceptions import CommitFailedException

from mt_magic.catalog.client import CatalogConfig, open_catalog

TABLE = ("shared", "appends")


@dataclass(frozen=True)
class WriteReport:
    writers: int
    commits: int
    conflicts: int
    snapshots: int
    rows: int

    @property
    def lost(self) -> int:
        return self.commits - min(self.snapshots, self.rows)

    def summary(self) -> str:
        return (
            f"writers: {self.writers}; commits: {self.commits}; conflicts (409, retried): {self.conflicts}; "
            f"snapshots: {self.snapshots}; rows: {self.rows}; lost: {self.lost}"
        )


def _config(uri: str, token: str, name: str) -> CatalogConfig:
    return CatalogConfig(name, {"uri": uri, "token": token} if token else {"uri": uri})


def _writer(uri: str, token: str, worker: int, commits: int, start: threading.Barrier, conflicts: list[int]) -> None:
    catalog = open_catalog(_config(uri, token, f"w{worker}"))
    start.wait()
    for k in range(commits):
        row = pa.table({"worker": pa.array([worker], pa.int32()), "k": pa.array([k], pa.int32())})
        while True:
            try:
                catalog.load_table(TABLE).append(row)
                break
            except CommitFailedException:
                conflicts[worker] += 1


def concurrent_appends(uris: Sequence[str], token: str, writers: int, commits: int) -> WriteReport:
    """Create the table through the first server, then let ``writers`` threads append ``commits`` each."""
    first = open_catalog(_config(uris[0], token, "setup"))
    first.create_namespace_if_not_exists(TABLE[:1])
    first.drop_table(TABLE) if first.table_exists(TABLE) else None
    first.create_table(TABLE, schema=pa.schema([("worker", pa.int32()), ("k", pa.int32())]))
    conflicts = [0] * writers
    start = threading.Barrier(writers)
    threads = [
        threading.Thread(target=_writer, args=(uris[w % len(uris)], token, w, commits, start, conflicts))
        for w in range(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table = open_catalog(_config(uris[-1], token, "check")).load_table(TABLE)
    return WriteReport(
        writers, writers * commits, sum(conflicts), len(table.snapshots()), table.scan().to_arrow().num_rows
    )
