"""The refresh manager's staleness poll, side by side in one run: a full metadata load against a revalidated one.

    .venv/bin/python benchmarks/bench_polls.py [--snapshots 10,100,360] [--polls 50]

The manager polls every table it keeps fresh, and each of its sources, every fifth of the freshness (every 2 s for
a 10-second table) to show its staleness. A poll used to fetch and parse the whole table metadata, which grows with
every snapshot kept (a materialized table keeps a hundred freshness periods' worth, at least an hour: 360
snapshots at 10 s, each with its refresh state in the summary). Now it sends the last answer's ETag and reuses that
answer on ``304 Not Modified`` (:mod:`mt_magic.catalog.revalidation`).

One embedded catalog server; one table per size, grown by pyiceberg commits whose summaries carry a refresh state
the size of a real one. For each size, ``--polls`` loads of the unchanged table each way, alternated, with this
process's CPU time (user + system) and the wall time per poll. No Spark. The server's own CPU is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

STATE = json.dumps(
    {
        "view-version-id": 1,
        "source-states": [
            {"type": "table", "catalog": "mt", "namespace": ["bench"], "name": "orders", "uuid": "0" * 36}
        ],
        "refresh-start-timestamp-ms": 0,
    }
)
"""A refresh state of one source, as a materialized table's snapshot summary carries it."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", default="10,100,360")
    parser.add_argument("--polls", type=int, default=50)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench_polls_"))
    os.environ["MT_MAGIC_HOME"] = str(home)

    import pyarrow as pa

    from mt_magic.catalog.client import open_catalog, resolve_catalog
    from mt_magic.catalog.embedded import stop_embedded_server
    from mt_magic.catalog.tables import MaterializedCatalog

    rest = open_catalog(resolve_catalog("mt", home))
    rest.create_namespace("bench")
    catalog = MaterializedCatalog(rest, "mt")
    rows = pa.table({"k": pa.array([1], pa.int64())})
    summary = {"refresh-state": STATE, "mt.strategy": "incremental: merge the aggregated delta", "mt.engine": "spark"}
    print(f"{'snapshots':>9}  {'full load: CPU / wall ms':>25}  {'revalidated: CPU / wall ms':>27}  {'CPU ratio':>9}")
    try:
        for size in (int(n) for n in args.snapshots.split(",")):
            table = rest.create_table(("bench", f"t{size}"), schema=rows.schema)
            for i in range(size):
                table.append(rows, snapshot_properties={**summary, "mt.refresh-id": f"{i:032d}"})
            name = f"mt.bench.t{size}"
            catalog.load(name, reuse_unchanged=True)  # the first poll always loads in full
            full, revalidated = [], []
            for _ in range(args.polls):
                for reuse, times in ((False, full), (True, revalidated)):
                    cpu, wall = time.process_time(), time.perf_counter()
                    catalog.load(name, reuse_unchanged=reuse)
                    times.append(((time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000))
            f_cpu, f_wall = (statistics.median(t[i] for t in full) for i in (0, 1))
            r_cpu, r_wall = (statistics.median(t[i] for t in revalidated) for i in (0, 1))
            print(
                f"{size:>9}  {f_cpu:>12.1f} / {f_wall:>9.1f}  {r_cpu:>14.1f} / {r_wall:>9.1f}  "
                f"{f_cpu / max(r_cpu, 1e-3):>8.1f}×"
            )
    finally:
        stop_embedded_server(home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
