"""An idle kernel's background work, side by side in one run: the refresh manager holding daily tables that nothing
refreshes, with the polling rules before issue 37 and now — or, with ``--cards``, the way a user makes them: each
table with its live card, as the output of its ``%%materialized`` cell, with the cards and leases of before issue 52
and now.

    .venv/bin/python benchmarks/bench_idle.py [--tables 0,120,500] [--window 30] [--windows 4] [--settle 15]
    .venv/bin/python benchmarks/bench_idle.py --cards [--tables 0,150,500]

Before issue 37, every table's staleness was polled every 5 s whatever its freshness (its metadata and each source's,
a revalidated load each) and discovery fetched and parsed every table every 30 s. Now a table is polled every
hundredth of its freshness (at least every 5 s; 14.4 minutes for a daily table) and discovery reuses the metadata of
unchanged tables (``ETag``). Everything else is the real thing: the embedded catalog server, the real engine's
catalog side (no Spark is needed for idle tables: discovery, staleness, history), the lease keeper in the catalog.

``--cards`` (issue 52): a real :class:`~mt_magic.widgets.live.LiveViews` with one :class:`TableCard` per table (what a
``%%materialized`` cell's output holds), fed by the manager and ticking every second on its thread, as in a kernel;
each table's last refresh a few minutes old, as right after its cell ran. Before, every card read its status and
re-rendered at every tick, and the manager held (renewed, every 10 s) a lease on every table; now a card reads
nothing until the manager's version moves or a time it shows reads differently (once a minute: ``5m ago``), and a
table holds a lease only from two lease lives before its next run. The previews are a fixed one-row answer (the
kernel reads them with Spark once, after each refresh: not part of the idle cost).

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
from collections.abc import Callable
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


def idle_tables(
    rest, count: int, source_uuid: str, namespace: str = "bench", age: timedelta = timedelta(minutes=30)
) -> None:  # type: ignore[no-untyped-def]
    """``count`` daily FULL materialized tables ``t0…`` over ``<namespace>.orders`` in the catalog ``mt``, written as
    CREATE writes them, each with a refresh state committed ``age`` ago (so none is due for a day)."""
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
        now - age,
        RefreshKind.FULL,
        RefreshTrigger.SCHEDULED,
        now - age,
    )
    existing = len(rest.list_tables(namespace)) - 1
    for number in range(max(existing, 0), count):
        table = rest.create_table((namespace, f"t{number}"), schema=rows.schema, properties=definition.to_properties())
        table.append(rows, snapshot_properties=state.to_summary())


def card_rules() -> dict[str, Callable[[], None]]:
    """Switch the cards and the leases between issue 52's before and now (the same code, but for two functions)."""
    from mt_magic.errors import NoSuchMaterializedTableError
    from mt_magic.runtime.manager import lease_pass
    from mt_magic.runtime.manager.lease_keeper import LeaseWishes
    from mt_magic.widgets.card import TableCard

    tick, wishes = TableCard.tick, lease_pass.wishes

    def tick_before(card: TableCard) -> None:  # every tick: the status read and the card rendered again
        try:
            status = card.live.feed.status(card.name)
        except NoSuchMaterializedTableError:
            card.show_removed("no longer known to the refresh manager")
            return
        card.apply(status)

    def wishes_before(state, now, horizon):  # type: ignore[no-untyped-def]  # every tracked table, always
        entries = state.entries()
        wanted = frozenset(entry.name for entry in entries if not entry.suspended and not entry.elsewhere)
        urgent = frozenset(entry.name for entry in entries if entry.manual_waiting())
        return LeaseWishes(wanted, urgent, frozenset(state.running_names()))

    def use(before: bool) -> None:
        TableCard.tick = tick_before if before else tick  # type: ignore[method-assign]
        lease_pass.wishes = wishes_before if before else wishes  # type: ignore[assignment]

    return {"before": lambda: use(True), "now": lambda: use(False)}


def live_cards(manager, names: list[str]):  # type: ignore[no-untyped-def]
    """A card per table, as the outputs of their ``%%materialized`` cells, ticking every second on their thread."""
    from mt_magic.runtime.spark.preview import Preview
    from mt_magic.widgets.live import LiveViews

    class Previews:
        def preview(self, name: str, limit: int) -> Preview:
            return Preview(name, ("k",), ((1,),), None, limit)

    views = LiveViews(manager, Previews(), tick_every=1.0)  # type: ignore[arg-type]
    for name in names:
        views.card(name)
    return views


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
    parser.add_argument("--cards", action="store_true", help="a live card per table; compare issue 52's before/now")
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
    polling = {
        "before": (10**9, lambda self, namespace=None, **_: listing(self, namespace)),
        "now": (loop.STALENESS_LAG_FRACTION, listing),
    }
    cards = card_rules()

    def use(rule: str) -> None:
        if args.cards:  # issue 52's rules, on issue 37's polling
            cards[rule]()
            return
        fraction, listed = polling[rule]
        loop.STALENESS_LAG_FRACTION = fraction
        catalog_tables.MaterializedCatalog.list_materialized = listed  # type: ignore[method-assign]

    print(f"{'tables':>6}  {'rule':>6}  {'kernel CPU s/min':>16}  {'server CPU s/min':>16}  {'together':>8}")
    try:
        for count in (int(n) for n in args.tables.split(",")):
            age = timedelta(minutes=3) if args.cards else timedelta(minutes=30)
            idle_tables(rest, count, str(source.metadata.table_uuid), age=age)
            leases = LeaseKeeper(CatalogLeases(rest, "mt"), holder_id("bench"), timedelta(seconds=30))
            manager = RefreshManager(engine, clock=workspace.clock, leases=leases)
            manager.start()
            time.sleep(args.window / 2)  # discovery, the first polls and the leases taken
            views = live_cards(manager, [s.name for s in manager.statuses()]) if args.cards else None
            measured: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
            for window in range(args.windows):
                rule = ("before", "now")[window % 2]
                use(rule)
                time.sleep(args.settle)
                cpu, server = time.process_time(), _server_cpu(home)
                time.sleep(args.window)
                per_minute = 60 / args.window
                spent = (time.process_time() - cpu, _server_cpu(home) - server)
                measured[rule].append((spent[0] * per_minute, spent[1] * per_minute))
            if views is not None:
                views.close()
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
