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

Then the whole status poll of one table with one source (both revalidated) side by side without and with the
request for the table's Iceberg view that the materialized-view spec's validity check makes
(``MaterializedViews.invalid_since``: the view has no ETag, so it is fetched and parsed each time).
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
    from mt_magic.catalog.views import MaterializedViews

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
        poll_with_and_without_view(rest, catalog, MaterializedViews(catalog), rows, args.polls)
    finally:
        stop_embedded_server(home)
    return 0


def poll_with_and_without_view(rest, catalog, views, rows, polls: int) -> None:  # type: ignore[no-untyped-def]
    """A status poll's requests (the table and its source, revalidated), without and with the view request."""
    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.vocabulary import RefreshMode

    source = rest.create_table(("bench", "src"), schema=rows.schema)
    source.append(rows)
    query = "SELECT k FROM mt.bench.src"
    definition = MaterializedTableDefinition(query, query, "INTERVAL '1' MINUTE", RefreshMode.FULL)
    print(f"\n{'snapshots':>9}  {'poll: CPU / wall ms':>20}  {'+ view: CPU / wall ms':>22}  {'CPU, wall ratio':>16}")
    for size in (10, 360):
        name = f"mt.bench.v{size}"
        table = rest.create_table(("bench", f"v{size}"), schema=rows.schema)
        for i in range(size):
            table.append(rows, snapshot_properties={"refresh-state": STATE, "mt.refresh-id": f"{i:032d}"})
        views.create(name, definition)
        uuid = catalog.load(name).uuid
        without: list[tuple[float, float]] = []
        with_view: list[tuple[float, float]] = []
        for _ in range(polls):
            for view, times in ((False, without), (True, with_view)):
                cpu, wall = time.process_time(), time.perf_counter()
                catalog.load(name, reuse_unchanged=True)
                catalog.load("mt.bench.src", reuse_unchanged=True)
                if view:
                    views.of_table(name, uuid)
                times.append(((time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000))
        w_cpu, w_wall = (statistics.median(t[i] for t in without) for i in (0, 1))
        v_cpu, v_wall = (statistics.median(t[i] for t in with_view) for i in (0, 1))
        print(
            f"{size:>9}  {w_cpu:>8.1f} / {w_wall:>9.1f}  {v_cpu:>10.1f} / {v_wall:>9.1f}  "
            f"{v_cpu / max(w_cpu, 1e-3):>7.2f}×, {v_wall / max(w_wall, 1e-3):.2f}×"
        )


if __name__ == "__main__":
    sys.exit(main())
