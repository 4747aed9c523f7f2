"""Commits per second on the embedded REST catalog with concurrent writers, and lost commits (must be 0).

Runs side by side in one go, against one fresh embedded server (SQLite, local warehouse):

* ``append``: W writer processes, each a pyiceberg ``RestCatalog`` appending K one-row commits to the same
  table; on 409 (``CommitFailedException``) the writer reloads the table and retries. Afterwards the table
  must have exactly W*K snapshots and rows.
* ``metadata``: W writer threads posting K ``set-properties`` commits over raw HTTP (no data files), which
  measures the server's commit path alone.
* both with a single writer as the baseline, so the ratio shows what concurrency buys or costs.

    .venv/bin/python benchmarks/bench_catalog_commits.py --writers 4 --commits 25
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server


@dataclass(frozen=True)
class Result:
    name: str
    writers: int
    commits: int
    seconds: float
    conflicts: int
    lost: int

    @property
    def rate(self) -> float:
        return self.commits / self.seconds


def _append_worker(config: CatalogConfig, table: str, worker: int, commits: int, start: float, out: mp.Queue) -> None:
    catalog = open_catalog(config)
    conflicts = 0
    while time.time() < start:
        time.sleep(0.001)
    for k in range(commits):
        row = pa.table({"worker": pa.array([worker], pa.int32()), "k": pa.array([k], pa.int32())})
        while True:
            try:
                catalog.load_table(("bench", table)).append(row)
                break
            except Exception as exc:  # CommitFailedException, by name to keep the import in the child light
                if type(exc).__name__ != "CommitFailedException":
                    raise
                conflicts += 1
    out.put(conflicts)


def bench_appends(config: CatalogConfig, writers: int, commits: int) -> Result:
    catalog = open_catalog(config)
    table = f"appends_{writers}w"
    catalog.create_table(("bench", table), schema=pa.schema([("worker", pa.int32()), ("k", pa.int32())]))
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    start = time.time() + 3.0  # let every process import pyiceberg before the clock starts
    procs = [ctx.Process(target=_append_worker, args=(config, table, w, commits, start, out)) for w in range(writers)]
    for p in procs:
        p.start()
    conflicts = sum(out.get(timeout=600) for _ in procs)
    elapsed = time.time() - start
    for p in procs:
        p.join()
    loaded = catalog.load_table(("bench", table))
    expected = writers * commits
    lost = expected - min(len(loaded.snapshots()), loaded.scan().to_arrow().num_rows)
    return Result("append (pyiceberg, processes)", writers, expected, elapsed, conflicts, lost)


def bench_metadata(config: CatalogConfig, writers: int, commits: int) -> Result:
    catalog = open_catalog(config)
    table = f"props_{writers}w"
    catalog.create_table(("bench", table), schema=pa.schema([("x", pa.int32())]))
    uuid = str(catalog.load_table(("bench", table)).metadata.table_uuid)
    headers = {"Authorization": f"Bearer {config.properties['token']}"}
    barrier = threading.Barrier(writers + 1)

    def write(worker: int) -> None:
        with httpx.Client(base_url=config.uri, headers=headers, timeout=60) as client:
            barrier.wait()
            for k in range(commits):
                body = {
                    "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                    "updates": [{"action": "set-properties", "updates": {f"w{worker}.k{k}": "1"}}],
                }
                client.post(f"/v1/namespaces/bench/tables/{table}", json=body).raise_for_status()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    begin = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - begin
    props = catalog.load_table(("bench", table)).properties
    expected = writers * commits
    lost = expected - sum(1 for key in props if key.startswith("w"))
    return Result("set-properties (raw HTTP, threads)", writers, expected, elapsed, 0, lost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--commits", type=int, default=25, help="commits per writer")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mt_bench_") as tmp:
        home = Path(tmp)
        server = ensure_embedded_server(home)
        try:
            config = CatalogConfig("bench", {"uri": server.uri, "token": server.token or ""})
            open_catalog(config).create_namespace("bench")
            results = []
            for bench in (bench_metadata, bench_appends):
                for writers in (1, args.writers):
                    results.append(bench(config, writers, args.commits))
        finally:
            stop_embedded_server(home)

    print(f"{'workload':38} {'writers':>7} {'commits':>7} {'seconds':>8} {'commits/s':>9} {'409s':>5} {'lost':>4}")
    for r in results:
        print(f"{r.name:38} {r.writers:7d} {r.commits:7d} {r.seconds:8.2f} {r.rate:9.1f} {r.conflicts:5d} {r.lost:4d}")
    for name in dict.fromkeys(r.name for r in results):
        one, many = [r for r in results if r.name == name]
        print(f"{name}: {many.writers} writers / 1 writer = {many.rate / one.rate:.2f}x commits/s")
    lost = sum(r.lost for r in results)
    print(f"lost commits: {lost}")
    if lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
