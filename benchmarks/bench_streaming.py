"""mt_magic against Spark Structured Streaming, side by side in one run: the same Iceberg source, the same arrivals,
the same freshness, and a full recompute at that cadence.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_streaming.py [--minutes 4] [--freshness 10] [--out r.json]

The source is datagen's seeded ``orders`` (row ``i`` is a pure function of ``(seed, i)``) plus a six-row ``hubs``
dimension, in one embedded catalog. This process appends the next ``--rows-per-batch`` orders every ``--cadence``
seconds for ``--minutes`` (pyiceberg commits of rows the generator computed before the run: another writer than the
contenders, as in bench_freshness.py). Two queries are kept fresh, each by every contender:

* ``group_by``: orders, amount and last order per company and hour (the key set grows with the order time);
* ``join``: a stream-static join of the orders with the hubs (the dimension does not change).

Contenders, each in its own process with its own JVM (``--master``, the same driver memory and
``spark.sql.shuffle.partitions`` for all), all running at the same time:

* ``mt_magic``: ``connect()`` with its RefreshManager (a notebook's path) and ``CREATE MATERIALIZED TABLE …
  FRESHNESS = INTERVAL 'F' SECOND`` (CONTINUOUS: incremental, refreshed every F s);
* ``streaming``: ``spark.readStream.format("iceberg")`` with trigger ``processingTime`` = F and a checkpoint per
  query. The GROUP BY writes ``outputMode("complete")`` into an Iceberg table (Iceberg's streaming-write docs for
  aggregates; the result is small: companies × hours), or with ``--streaming-aggregate merge`` update mode and
  ``foreachBatch`` + ``MERGE INTO`` on the group keys; the join writes ``outputMode("append")`` (an inner join
  with a static table emits each order once and never changes it, so append is exact and cheapest);
* ``recompute``: every F s, ``INSERT OVERWRITE`` the table with the query (plain Spark).

Why concurrently: every contender then reads the one source while it grows, sees each append at the same moment
and shares the machine's load at the same time (one after another would need a copy of the source per contender
and give each another slice of a shared machine's noise). CPU stays attributable because each contender is its
own process tree: with ``local[N]`` the driver and the executors are one JVM, so a contender's CPU is that JVM plus
its Python process (``/proc`` through psutil, user + system, per hour of the *window*: from the first append until
every target reflects the last one, so the work the arrivals caused is all in it). Not attributed:
the shared embedded catalog server (printed on its own line) and this process (appends and checks).

Measured per contender and query, from Iceberg metadata alone: **latency** of each append = the first target
commit that reflects it − the append's commit. Every row carries its order's time (monotone in the row number),
and each contender commits prefixes of the source, so the largest ``order_time`` / ``last_order`` upper bound
among the data files a target has added so far is the newest append it reflects. **Rows written per hour**: the
target commits' ``added-records`` and ``deleted-records`` in the window. **Equal**: after every target has caught
up with the last append (``behind`` when one has not within ``--catch-up-seconds``), the query run by Spark on the
final source against the target (``exceptAll`` both ways).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CATALOG, NS = "mt", "bench_streaming"
SOURCE, DIMS = f"{CATALOG}.{NS}.orders", f"{CATALOG}.{NS}.hubs"
CONTENDERS = ("mt_magic", "streaming", "recompute")
SHAPES = {
    "group_by": "SELECT tms_company, date_trunc('HOUR', order_time) AS hour, count(*) AS orders, "
    "sum(amount) AS amount, max(order_time) AS last_order FROM {orders} "
    "GROUP BY tms_company, date_trunc('HOUR', order_time)",
    "join": "SELECT o.order_id, o.amount, o.order_time, h.hub FROM {orders} o JOIN {hubs} h "
    "ON o.tms_company = h.tms_company",
}
MARKERS = {"group_by": "last_order", "join": "order_time"}
"""The column whose largest value tells the newest source row a target reflects."""


def target(contender: str, shape: str) -> str:
    return f"{contender}_{shape}"


def query(shape: str, orders: str = SOURCE) -> str:
    return SHAPES[shape].format(orders=orders, hubs=DIMS)


def spark_settings(args: argparse.Namespace) -> Any:
    from mt_magic.runtime.spark.session import SparkSettings

    extra = {"spark.sql.shuffle.partitions": str(args.shuffle_partitions)}
    return SparkSettings(master=args.master, driver_memory=args.driver_memory, extra=extra)


# ---------------------------------------------------------------------------------------------- the contenders


class MtMagicContender:
    """CONTINUOUS materialized tables kept fresh by the RefreshManager of ``connect()``."""

    def __init__(self, shapes: list[str], args: argparse.Namespace) -> None:
        from mt_magic.runtime.connection import ConnectionSettings, connect
        from mt_magic.runtime.status import EventKind
        from mt_magic.sql import parse_cell

        self.errors: list[str] = []

        def failures(event: Any) -> None:
            if event.kind is EventKind.REFRESH_FAILED:
                self.errors.append(f"{event.table}: {event.message}"[:300])

        settings = ConnectionSettings(catalog_name=CATALOG, namespace=NS, spark=spark_settings(args))
        self.conn = connect(settings, subscribers=[failures])
        for shape in shapes:
            cell = (
                f"CREATE MATERIALIZED TABLE {target('mt_magic', shape)} "
                f"FRESHNESS = INTERVAL '{args.freshness}' SECOND AS {query(shape)}"
            )
            for statement in parse_cell(cell):
                result = self.conn.service.execute(statement)
                if result.refresh is not None:
                    result.refresh.result(timeout=900)

    def stop(self) -> list[str]:
        self.conn.close(timeout=60)
        return self.errors


class StreamingContender:
    """Structured Streaming queries reading the Iceberg source, one per shape, each with its own checkpoint."""

    def __init__(self, shapes: list[str], args: argparse.Namespace, checkpoints: Path) -> None:
        from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf
        from mt_magic.runtime.spark.session import get_or_create_session

        spark = get_or_create_session(spark_settings(args), spark_catalog_conf(resolve_catalog(CATALOG)))
        spark.readStream.format("iceberg").load(SOURCE).createOrReplaceTempView("orders_stream")
        self.queries = []
        for shape in shapes:
            name = f"{CATALOG}.{NS}.{target('streaming', shape)}"
            spark.sql(f"CREATE TABLE {name} USING iceberg AS {query(shape)} LIMIT 0")
            frame = spark.sql(query(shape, orders="orders_stream"))
            writer = (
                frame.writeStream.queryName(shape)
                .trigger(processingTime=f"{args.freshness} seconds")
                .option("checkpointLocation", str(checkpoints / shape))
            )
            if shape == "join":
                self.queries.append(writer.format("iceberg").outputMode("append").toTable(name))
            elif args.streaming_aggregate == "complete":
                self.queries.append(writer.format("iceberg").outputMode("complete").toTable(name))
            else:
                self.queries.append(writer.outputMode("update").foreachBatch(merge_into(name)).start())
        for running in self.queries:
            running.processAllAvailable()

    def stop(self) -> list[str]:
        errors = [f"{q.name}: {q.exception()}"[:300] for q in self.queries if q.exception() is not None]
        for running in self.queries:
            running.stop()
        return errors


def merge_into(name: str) -> Any:
    """foreachBatch: upsert the micro-batch's updated groups into ``name`` on the GROUP BY's keys."""

    def upsert(batch: Any, epoch: int) -> None:
        batch.createOrReplaceTempView("updated_groups")
        batch.sparkSession.sql(
            f"MERGE INTO {name} t USING updated_groups s ON t.tms_company = s.tms_company AND t.hour = s.hour "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )

    return upsert


class RecomputeContender:
    """``INSERT OVERWRITE`` of every query every F s on a thread (a run longer than F starts the next at once)."""

    def __init__(self, shapes: list[str], args: argparse.Namespace) -> None:
        from mt_magic.catalog.client import resolve_catalog, spark_catalog_conf
        from mt_magic.runtime.spark.session import get_or_create_session

        self.spark = get_or_create_session(spark_settings(args), spark_catalog_conf(resolve_catalog(CATALOG)))
        self.names = {shape: f"{CATALOG}.{NS}.{target('recompute', shape)}" for shape in shapes}
        for shape, name in self.names.items():
            self.spark.sql(f"CREATE TABLE {name} USING iceberg AS {query(shape)}")
        self.every, self.errors = float(args.freshness), []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="recompute", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        due = time.monotonic() + self.every
        while not self.stopping.wait(max(0.0, due - time.monotonic())):
            due = max(due + self.every, time.monotonic())
            for shape, name in self.names.items():
                try:
                    self.spark.sql(f"INSERT OVERWRITE {name} {query(shape)}")
                except Exception as exc:  # reported at the end with the contender's figures
                    self.errors.append(f"{shape}: {exc}"[:300])

    def stop(self) -> list[str]:
        self.stopping.set()
        self.thread.join(600)
        return self.errors


def worker(contender: str, shapes: list[str], args: argparse.Namespace, work: Path) -> int:
    """One contender's process: set up, say READY, keep the tables fresh until a line arrives on stdin."""
    if contender == "mt_magic":
        running: Any = MtMagicContender(shapes, args)
    elif contender == "streaming":
        running = StreamingContender(shapes, args, work / f"checkpoints-{'-'.join(shapes)}")
    else:
        running = RecomputeContender(shapes, args)
    print("READY", flush=True)
    sys.stdin.readline()
    print(json.dumps({"errors": running.stop()}), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------- the run


class Process:
    """A contender's process: its stdout lines read on a thread, stderr to a log file."""

    def __init__(self, contender: str, shapes: list[str], args: argparse.Namespace, work: Path) -> None:
        self.contender, self.shapes = contender, shapes
        self.log = work / f"{contender}-{'-'.join(shapes)}.log"
        argv = [sys.executable, __file__, "--worker", contender, "--shapes", ",".join(shapes), "--work", str(work)]
        argv += forwarded(args)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        with self.log.open("w") as log:
            self.popen = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT, env=env
            )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.strip())

    def wait_ready(self, deadline: float) -> None:
        while "READY" not in self.lines:
            if self.popen.poll() is not None or time.monotonic() > deadline:
                tail = "".join(self.log.read_text().splitlines(keepends=True)[-30:])
                raise RuntimeError(f"{self.contender} did not start (see {self.log}):\n{tail}")
            time.sleep(0.5)

    def cpu_seconds(self) -> float:
        """User + system CPU of the process and its children (its JVM) so far."""
        import psutil

        total = 0.0
        root = psutil.Process(self.popen.pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def stop(self) -> list[str]:
        """Ask the contender to stop; its errors (or why it did not answer)."""
        if self.popen.poll() is None:
            assert self.popen.stdin is not None
            self.popen.stdin.write("stop\n")
            self.popen.stdin.flush()
        try:
            self.popen.wait(300)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return [f"did not stop within 300 s (see {self.log})"]
        answers = [json.loads(line) for line in self.lines if line.startswith("{")]
        return answers[-1]["errors"] if answers else [f"exited {self.popen.returncode} (see {self.log})"]


def forwarded(args: argparse.Namespace) -> list[str]:
    names = ("freshness", "master", "driver_memory", "shuffle_partitions", "streaming_aggregate")
    return [item for name in names for item in (f"--{name.replace('_', '-')}", str(getattr(args, name)))]


def prepare(spark: Any, args: argparse.Namespace) -> Any:
    """The source's first rows and the hubs dimension; returns the arrivals' rows (Arrow, in row order).

    The arrivals are rows ``[initial, initial + batches × rows)`` of the same seeded generator, computed now in one
    Spark job so that appending them during the run costs a pyiceberg commit each, not a Spark job in this process.
    """
    import pyarrow as pa

    from mt_magic.datagen import COMPANIES, DataGenerator, Dataset

    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    generator = DataGenerator(Dataset.ORDERS, seed=args.seed)
    generator.write(spark, SOURCE, args.initial_rows)
    hubs = ", ".join(f"('{company}', 'hub {i % 3}')" for i, company in enumerate(COMPANIES))
    spark.sql(f"CREATE TABLE {DIMS} USING iceberg AS SELECT * FROM VALUES {hubs} AS hubs(tms_company, hub)")
    frame = generator.frame(spark, batches(args) * args.rows_per_batch, start=args.initial_rows)
    rows = frame.toArrow() if hasattr(frame, "toArrow") else pa.Table.from_batches(frame._collect_as_arrow())
    return rows.sort_by("order_time")


def batches(args: argparse.Namespace) -> int:
    return max(1, int(args.minutes * 60 / args.cadence))


def arrivals(catalog: Any, rows: Any, args: argparse.Namespace) -> None:
    """Append the next ``--rows-per-batch`` rows every ``--cadence`` s (a late append starts the next at once)."""
    source, started = catalog.load_table((NS, "orders")), time.monotonic()
    for batch in range(batches(args)):
        time.sleep(max(0.0, started + batch * args.cadence - time.monotonic()))
        source.append(rows.slice(batch * args.rows_per_batch, args.rows_per_batch))


# ---------------------------------------------------------------------------------------------- reading the results


@dataclass(frozen=True)
class Commit:
    at: float
    """The snapshot's timestamp (s since the epoch): when the commit became visible, within a catalog round trip."""
    reflects: int | None
    """The newest source row's marker (µs) the table holds after this commit."""
    added: int
    deleted: int
    kind: str
    """mt_magic's refresh kind (``mt.refresh-kind``) and engine (``mt.engine``), or the Iceberg operation."""


class Lineage:
    """Each table's commits in order with the newest source row they reflect, from Iceberg metadata alone."""

    def __init__(self, catalog: Any) -> None:
        self.catalog = catalog
        self._added: dict[tuple[str, int], int | None] = {}

    def commits(self, name: str, column: str) -> list[Commit]:
        table = self.catalog.load_table((NS, name))
        chain, snapshot = [], table.current_snapshot()
        while snapshot is not None:
            chain.append(snapshot)
            snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
        field = table.schema().find_field(column)
        commits, newest = [], None
        for snapshot in reversed(chain):
            added = self._added_max(name, table, snapshot, field)
            newest = added if newest is None else max(newest, added or newest)
            summary = snapshot.summary
            kind = summary["mt.refresh-kind"] or summary.operation.value if summary else "?"
            if summary and summary["mt.engine"]:  # which engine computed mt_magic's rows
                kind = f"{kind}, {summary['mt.engine']}"
            commits.append(
                Commit(
                    at=snapshot.timestamp_ms / 1000,
                    reflects=newest,
                    added=int(summary["added-records"] or 0) if summary else 0,
                    deleted=int(summary["deleted-records"] or 0) if summary else 0,
                    kind=str(kind),
                )
            )
        return commits

    def _added_max(self, name: str, table: Any, snapshot: Any, field: Any) -> int | None:
        """The largest upper bound of ``field`` among the data files ``snapshot`` added (cached per snapshot)."""
        from pyiceberg.conversions import from_bytes
        from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus

        key = (name, snapshot.snapshot_id)
        if key not in self._added:
            bounds = []
            for manifest in snapshot.manifests(table.io):
                if manifest.content != ManifestContent.DATA or manifest.added_snapshot_id != snapshot.snapshot_id:
                    continue
                for entry in manifest.fetch_manifest_entry(table.io):
                    data = entry.data_file
                    if entry.status == ManifestEntryStatus.ADDED and data.content == DataFileContent.DATA:
                        raw = (data.upper_bounds or {}).get(field.field_id)
                        if raw is not None:
                            bounds.append(int(from_bytes(field.field_type, raw)))
            self._added[key] = max(bounds, default=None)
        return self._added[key]


def latencies(source: list[Commit], commits: list[Commit]) -> tuple[list[float], int]:
    """Per source append: seconds until the first target commit reflecting it; and how many never became visible."""
    seen, unseen = [], 0
    for append in source:
        visible = next((c.at for c in commits if c.reflects is not None and c.reflects >= (append.reflects or 0)), None)
        if visible is None:
            unseen += 1
        else:
            seen.append(max(0.0, visible - append.at))
    return seen, unseen


def wait_caught_up(lineage: Lineage, final: int, timeout: float) -> set[tuple[str, str]]:
    """Until every target reflects the last append; the (contender, query) pairs still behind after ``timeout``."""
    deadline = time.monotonic() + timeout
    pending = {(c, s) for c in CONTENDERS for s in SHAPES}
    while pending and time.monotonic() < deadline:
        time.sleep(1.0)
        pending = {(c, s) for c, s in pending if (lineage.commits(target(c, s), MARKERS[s])[-1].reflects or 0) < final}
    return pending


def equal_to_query(spark: Any, name: str, shape: str) -> bool:
    """The target holds exactly the rows (with duplicates) of the query run now on the final source."""
    from pyspark.sql.functions import col

    for table in (SOURCE, name):  # the source was appended by pyiceberg, the target by another process
        spark.sql(f"REFRESH TABLE {table}")
    expected = spark.sql(query(shape))
    actual = spark.table(name).select(*[col(c).cast(t) for c, t in expected.dtypes])
    return expected.exceptAll(actual).isEmpty() and actual.exceptAll(expected).isEmpty()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


# ---------------------------------------------------------------------------------------------- main


@dataclass
class Figures:
    contender: str
    shape: str
    latency_p50_s: float
    latency_p99_s: float
    appends_seen: int
    appends_unseen: int
    commits: int
    rows_added_per_hour: float
    rows_deleted_per_hour: float
    cpu_seconds_per_hour: float
    cpu_shared_with: str
    """The other shape kept by the same process ("" with ``--process-per-shape``)."""
    caught_up: bool
    """The target reflected the last append within ``--catch-up-seconds`` (else it is compared as it stands)."""
    equal: bool
    kinds: dict[str, int]
    errors: list[str]


def run(args: argparse.Namespace, work: Path) -> tuple[list[Figures], dict[str, Any]]:
    """Start the catalog, the source and the contenders; arrivals; catch-up; stop; read the figures."""
    import psutil

    from mt_magic.catalog.client import open_catalog, resolve_catalog, spark_catalog_conf
    from mt_magic.catalog.embedded import ensure_embedded_server, running_server
    from mt_magic.runtime.spark.session import get_or_create_session

    ensure_embedded_server(timeout=300)  # a loaded machine starts it slowly; the contenders then reuse it
    config = resolve_catalog(CATALOG)
    spark = get_or_create_session(spark_settings(args), spark_catalog_conf(config))
    catalog = open_catalog(config)
    lineage = Lineage(catalog)
    arriving = prepare(spark, args)
    groups = [[s] for s in SHAPES] if args.process_per_shape else [list(SHAPES)]
    processes = [Process(c, shapes, args, work) for c in CONTENDERS for shapes in groups]
    errors: dict[int, list[str]] = {}
    try:
        deadline = time.monotonic() + args.start_timeout
        for process in processes:
            process.wait_ready(deadline)
        embedded = running_server()
        assert embedded is not None, "the embedded catalog server stopped"
        server = psutil.Process(embedded.pid)
        cpu_before = [p.cpu_seconds() for p in processes] + [server.cpu_times().user + server.cpu_times().system]
        window = (time.time(), time.monotonic())
        arrivals(catalog, arriving, args)
        source = [c for c in lineage.commits("orders", "order_time") if c.at >= window[0]]
        behind = wait_caught_up(lineage, source[-1].reflects or 0, args.catch_up_seconds)
        window_end, seconds = time.time(), time.monotonic() - window[1]
        cpu_after = [p.cpu_seconds() for p in processes] + [server.cpu_times().user + server.cpu_times().system]
    finally:
        for i, process in enumerate(processes):
            errors[i] = process.stop()
    per_hour = 3600 / seconds
    figures = []
    for i, process in enumerate(processes):
        cpu = (cpu_after[i] - cpu_before[i]) * per_hour
        for shape in process.shapes:
            commits = lineage.commits(target(process.contender, shape), MARKERS[shape])
            in_window = [c for c in commits if window[0] <= c.at <= window_end]
            seen, unseen = latencies(source, commits)
            kinds: dict[str, int] = {}
            for commit in in_window:
                kinds[commit.kind] = kinds.get(commit.kind, 0) + 1
            figures.append(
                Figures(
                    contender=process.contender,
                    shape=shape,
                    latency_p50_s=statistics.median(seen) if seen else float("nan"),
                    latency_p99_s=percentile(seen, 0.99),
                    appends_seen=len(seen),
                    appends_unseen=unseen,
                    commits=len(in_window),
                    rows_added_per_hour=sum(c.added for c in in_window) * per_hour,
                    rows_deleted_per_hour=sum(c.deleted for c in in_window) * per_hour,
                    cpu_seconds_per_hour=cpu,
                    cpu_shared_with=",".join(s for s in process.shapes if s != shape),
                    caught_up=(process.contender, shape) not in behind,
                    equal=equal_to_query(spark, f"{CATALOG}.{NS}.{target(process.contender, shape)}", shape),
                    kinds=kinds,
                    errors=errors[i],
                )
            )
    context = {
        "window_s": seconds,
        "appends": len(source),
        "rows_appended": arriving.num_rows,
        "catalog_server_cpu_seconds_per_hour": (cpu_after[-1] - cpu_before[-1]) * per_hour,
    }
    return figures, context


def report(figures: list[Figures], context: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"Structured Streaming comparison — {context['window_s'] / 60:.1f} min of arrivals: "
        f"{context['appends']} appends "
        f"of {args.rows_per_batch:,} orders every {args.cadence:g} s onto {args.initial_rows:,}; freshness / trigger "
        f"{args.freshness} s; {os.cpu_count()} cores, {args.master} per contender, shuffle partitions "
        f"{args.shuffle_partitions}; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
    )
    header = ("contender", "query", "p50 s", "p99 s", "unseen", "commits", "added/h", "deleted/h", "CPU-s/h", "equal")
    print("  {:<10} {:<9} {:>7} {:>7} {:>6} {:>7} {:>11} {:>11} {:>9} {:>6}".format(*header))
    for f in figures:
        cpu = f"{f.cpu_seconds_per_hour:,.0f}{'*' if f.cpu_shared_with else ''}"
        print(
            f"  {f.contender:<10} {f.shape:<9} {f.latency_p50_s:7.1f} {f.latency_p99_s:7.1f} {f.appends_unseen:>6} "
            f"{f.commits:>7} {f.rows_added_per_hour:>11,.0f} {f.rows_deleted_per_hour:>11,.0f} {cpu:>9} "
            f"{'yes' if f.equal else 'NO' if f.caught_up else 'behind':>6}"
        )
    if any(f.cpu_shared_with for f in figures):
        print("  * one process keeps both queries: its CPU (Python + its one JVM, driver and executors) is for both")
    print(f"  catalog server (shared by all): {context['catalog_server_cpu_seconds_per_hour']:,.0f} CPU-s/h")
    for f in figures:
        if f.contender == "mt_magic":
            print(f"  mt_magic {f.shape} commits by refresh kind and engine: {f.kinds}")
        if f.errors:
            print(f"  {f.contender} {f.shape} errors: {f.errors}")
    by = {(f.contender, f.shape): f for f in figures}
    for shape in SHAPES:
        ours, theirs = by[("mt_magic", shape)], by[("streaming", shape)]
        print(
            f"  {shape}: mt_magic / streaming — p50 {ours.latency_p50_s / theirs.latency_p50_s:.2f}×, p99 "
            f"{ours.latency_p99_s / theirs.latency_p99_s:.2f}×, "
            f"CPU {ours.cpu_seconds_per_hour / theirs.cpu_seconds_per_hour:.2f}×"
            " (target: latency ≤ 1×, CPU < 1×)"
        )


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=4, help="how long the arrivals run")
    parser.add_argument("--freshness", type=int, default=10, help="FRESHNESS and trigger interval, seconds")
    parser.add_argument("--cadence", type=float, default=2.0, help="seconds between appends")
    parser.add_argument("--rows-per-batch", type=int, default=1000)
    parser.add_argument("--initial-rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="512m", help="every JVM (the data is small)")
    parser.add_argument("--shuffle-partitions", type=int, default=2, help="for every contender (2 cores, small data)")
    parser.add_argument("--streaming-aggregate", choices=("complete", "merge"), default="complete")
    parser.add_argument("--process-per-shape", action="store_true", help="CPU per query: six processes, not three")
    parser.add_argument("--start-timeout", type=float, default=900)
    parser.add_argument("--catch-up-seconds", type=float, default=900, help="bound on the wait for the last append")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON")
    parser.add_argument("--worker", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--shapes", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> int:
    args = arguments()
    if args.worker:
        return worker(args.worker, args.shapes.split(","), args, args.work)
    from mt_magic.catalog.embedded import stop_embedded_server

    work = Path(tempfile.mkdtemp(prefix="bench_streaming_"))
    home = work / "home"
    os.environ["MT_MAGIC_HOME"] = str(home)  # the contenders inherit it: one embedded catalog for all
    for key in [k for k in os.environ if k.startswith("PYICEBERG_CATALOG__MT__") or k == "MT_MAGIC_SPARK_REMOTE"]:
        del os.environ[key]
    try:
        figures, context = run(args, work)
    finally:
        stop_embedded_server(home)
    report(figures, context, args)
    if args.out:
        args.out.write_text(json.dumps({**context, "figures": [asdict(f) for f in figures]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
