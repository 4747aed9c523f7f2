"""An idle kernel's background work, side by side in one run: the refresh manager holding daily tables that nothing
refreshes, with the polling rules before issue 37 and now.

    .venv/bin/python benchmarks/bench_idle.py [--tables 0,120,500] [--window 30] [--windows 4] [--settle 15]

Before, every table's staleness was polled every 5 s whatever its freshness (its metadata and each source's, a
revalidated load each) and discovery fetched and parsed every table every 30 s. Now a table is polled every
hundredth of its freshness (at least every 5 s; 14.4 minutes for a daily table) and discovery reuses the metadata of
unchanged tables (``ETag``). Everything else is the real thing: the embedded catalog server, the real engine's
catalog side (no Spark is needed for idle tables: discovery, staleness, history), the lease keeper renewing every
table's lease in the catalog.

For each count: ``--tables`` daily FULL materialized tables over one source (definitions as CREATE writes them, a
refresh state in a commit of the last hour, so none is due), a manager thread started, then ``--windows`` windows of
``--window`` seconds alternating the two rules; the CPU of this process and of the catalog server per minute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path


def _server_cpu(home: Path) -> float:
    """The embedded server process's CPU seconds so far (from /proc), 0 where it cannot be read."""
    from mt_magic.catalog.embedded import read_state, state_path

    server = read_state(state_path(home))
    try:
        fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, IndexError, ValueError):
        return 0.0


def idle_tables(rest, count: int, source_uuid: str, namespace: str = "bench") -> None:  # type: ignore[no-untyped-def]
    """``count`` daily FULL materialized tables ``t0…`` over ``<namespace>.orders`` in the catalog ``mt``, written as
    CREATE writes them, each with a refresh state committed half an hour ago (so none is due for a day)."""
    import pyarrow as pa

    from mt_magic.catalog.definitions import MaterializedTableDefinition, RefreshState, SourceState
    from mt_magic.vocabulary import RefreshKind, RefreshMode, RefreshTrigger

    rows = pa.table({"k": pa.array([1], pa.int64())})
    definition = MaterializedTableDefinition(
        query="SELECT k FROM orders",
        expanded_query=f"SELECT k FROM mt.{namespace}.orders",
        freshness="INTERVAL '1' DAY",
        refresh_mode=RefreshMode.FULL,
        interval=timedelta(days=1),
        cron="0 0 * * *",
        upstream=(f"mt.{namespace}.orders",),
    )
    now = datetime.now(timezone.utc)
    state = RefreshState(
        (SourceState((namespace,), "orders", source_uuid, None, "mt"),),
        now - timedelta(minutes=30),
        RefreshKind.FULL,
        RefreshTrigger.SCHEDULED,
        now - timedelta(minutes=30),
    )
    existing = len(rest.list_tables(namespace)) - 1
    for number in range(max(existing, 0), count):
        table = rest.create_table((namespace, f"t{number}"), schema=rows.schema, properties=definition.to_properties())
        table.append(rows, snapshot_properties=state.to_summary())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", default="0,120,500")
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument(
        "--settle",
        type=float,
        default=15.0,
        help="seconds after each switch of rule before measuring: at 500 tables a pass of the old rule's polls "
        "runs on into the next window and was counted against the new rule",
    )
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench_idle_"))
    os.environ["MT_MAGIC_HOME"] = str(home)

    import pyarrow as pa

    from mt_magic.catalog import tables as catalog_tables
    from mt_magic.catalog.client import open_catalog, resolve_catalog
    from mt_magic.catalog.embedded import stop_embedded_server
    from mt_magic.catalog.leases import CatalogLeases
    from mt_magic.catalog.tables import MaterializedCatalog
    from mt_magic.runtime.manager import loop
    from mt_magic.runtime.manager.lease_keeper import LeaseKeeper, holder_id
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.workspace import Workspace
    from mt_magic.sql.ddl.freshness import FreshnessRules

    rest = open_catalog(resolve_catalog("mt", home))
    rest.create_namespace("bench")
    source = rest.create_table(("bench", "orders"), schema=pa.schema([("k", pa.int64())]))
    catalog = MaterializedCatalog(rest, "mt")
    workspace = Workspace(
        spark=None,  # type: ignore[arg-type]
        catalog=catalog,
        default_namespace="bench",
        rules=FreshnessRules(),
        clock=lambda: datetime.now(timezone.utc),
    )
    engine = Engine(workspace, None)  # type: ignore[arg-type]
    listing = MaterializedCatalog.list_materialized
    rules = {
        "before": (10**9, lambda self, namespace=None, **_: listing(self, namespace)),
        "now": (loop.STALENESS_LAG_FRACTION, listing),
    }
    print(f"{'tables':>6}  {'rule':>6}  {'kernel CPU s/min':>16}  {'server CPU s/min':>16}  {'together':>8}")
    try:
        for count in (int(n) for n in args.tables.split(",")):
            idle_tables(rest, count, str(source.metadata.table_uuid))
            leases = LeaseKeeper(CatalogLeases(rest, "mt"), holder_id("bench"), timedelta(seconds=30))
            manager = RefreshManager(engine, clock=workspace.clock, leases=leases)
            manager.start()
            time.sleep(args.window / 2)  # discovery, the first polls and the leases taken
            measured: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
            for window in range(args.windows):
                rule = ("before", "now")[window % 2]
                fraction, listed = rules[rule]
                loop.STALENESS_LAG_FRACTION = fraction
                catalog_tables.MaterializedCatalog.list_materialized = listed  # type: ignore[method-assign]
                time.sleep(args.settle)
                cpu, server = time.process_time(), _server_cpu(home)
                time.sleep(args.window)
                per_minute = 60 / args.window
                spent = (time.process_time() - cpu, _server_cpu(home) - server)
                measured[rule].append((spent[0] * per_minute, spent[1] * per_minute))
            manager.stop()
            for rule, windows in measured.items():
                kernel = statistics.median(w[0] for w in windows)
                server = statistics.median(w[1] for w in windows)
                print(f"{count:>6}  {rule:>6}  {kernel:>16.2f}  {server:>16.2f}  {kernel + server:>8.2f}")
    finally:
        stop_embedded_server(home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
