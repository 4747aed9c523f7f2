"""A statement's cost does not grow with the catalog: each statement timed in a kernel whose catalog holds no other
table and in one holding ``--tables`` idle daily tables, side by side in one run.

    .venv/bin/python benchmarks/bench_statements.py [--tables 120] [--rounds 7]

Two worker processes run at once, each the kernel's real stack (``runtime.connection.connect``: its own embedded
catalog server, Spark session and refresh manager thread with leases) — one over an empty catalog, one over
``--tables`` daily FULL tables in another namespace (as ``bench_idle.py`` writes them: none is due, but the manager
holds, polls and leases them). Each round, both workers run the same statements on a new table of their own,
interleaved statement by statement — worker A's CREATE, B's CREATE, then B's SET FRESHNESS, A's SET FRESHNESS, … (who
goes first alternates per statement and per round) — so the two timings of a statement are taken seconds apart, on
the same load of a shared machine, and a burst of background work lands on both sides alike: CREATE (the statement,
then its first refresh to the commit), ALTER … SET FRESHNESS, SUSPEND, RESUME, REFRESH (to the commit), DESCRIBE,
SHOW MATERIALIZED TABLES IN its namespace and of the whole catalog (which lists the idle tables too, so it is shown
but not held to the target), DROP. Printed: each statement's median wall time in both, and the ratio of the medians
(target ≤ 1.5×) beside the median of the pairs' ratios (each pair timed side by side); SUSPEND, RESUME, DESCRIBE and
SHOW run three times a round (:data:`STATEMENTS`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STATEMENTS = (
    ("CREATE", "CREATE MATERIALIZED TABLE {t} FRESHNESS = INTERVAL '1' HOUR AS SELECT k, count(*) AS n FROM orders "
     "GROUP BY k"),
    ("SET FRESHNESS", "ALTER MATERIALIZED TABLE {t} SET FRESHNESS = INTERVAL '2' HOUR"),
    *[("SUSPEND", "ALTER MATERIALIZED TABLE {t} SUSPEND"), ("RESUME", "ALTER MATERIALIZED TABLE {t} RESUME")] * 3,
    ("REFRESH", "ALTER MATERIALIZED TABLE {t} REFRESH"),
    *[("DESCRIBE", "DESCRIBE MATERIALIZED TABLE {t}")] * 3,
    *[("SHOW IN bench", "SHOW MATERIALIZED TABLES IN bench")] * 3,
    *[("SHOW (all)", "SHOW MATERIALIZED TABLES")] * 3,
    ("DROP", "DROP MATERIALIZED TABLE {t}"),
)  # fmt: skip
"""A round, in order. The statements that change nothing lasting (SUSPEND then RESUME, DESCRIBE, SHOW) run three
times a round: a short statement's time varies most on a shared machine, so it gets three samples a round."""
LISTS_EVERY_TABLE = {"SHOW (all)"}
"""Lists every namespace's tables: its answer, and so its cost, grows with the catalog (not in the worst ratio)."""
WAITED = {"CREATE", "REFRESH"}
"""Statements that start a refresh: also timed to its commit (``… to commit``)."""


def worker(tables: int) -> int:
    """One kernel's stack; reads ``<round>`` lines, answers each with the round's timings as a JSON line."""
    os.environ["MT_MAGIC_HOME"] = tempfile.mkdtemp(prefix="bench_statements_")
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_idle import idle_tables

    from mt_magic.catalog.embedded import stop_embedded_server
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.sql import parse_cell

    conn = connect(ConnectionSettings(namespace="bench"))
    spark, service = conn.spark, conn.service
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS mt.bench")
        spark.sql("CREATE TABLE mt.bench.orders (k BIGINT) USING iceberg")
        spark.sql("INSERT INTO mt.bench.orders VALUES (1), (2), (2)")
        if tables:
            spark.sql("CREATE NAMESPACE IF NOT EXISTS mt.idle")
            spark.sql("CREATE TABLE mt.idle.orders (k BIGINT) USING iceberg")
            rest = service.workspace.catalog.catalog
            idle_tables(rest, tables, str(rest.load_table(("idle", "orders")).metadata.table_uuid), "idle")
            deadline = time.monotonic() + 300
            while not service.manager.knows(f"mt.idle.t{tables - 1}") and time.monotonic() < deadline:
                time.sleep(1)  # the manager's next discovery takes them in, as a kernel's would
        print(json.dumps({"ready": tables}), flush=True)
        for line in sys.stdin:  # "<round> <statement index>": one statement of the round's table
            round_, index = (int(part) for part in line.split())
            label, text = STATEMENTS[index]
            [statement] = parse_cell(text.format(t=f"s{round_}"))
            times: dict[str, float] = {}
            started = time.perf_counter()
            result = service.execute(statement)
            times[label] = time.perf_counter() - started
            if label in WAITED and result.refresh is not None:
                result.refresh.result(timeout=600)
                times[f"{label} to commit"] = time.perf_counter() - started
            print(json.dumps(times), flush=True)
    finally:
        conn.close()
        stop_embedded_server(Path(os.environ["MT_MAGIC_HOME"]))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after both are ready, before round 1")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        return worker(args.worker)
    workers = {
        count: subprocess.Popen(
            [sys.executable, __file__, "--worker", str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for count in (0, args.tables)
    }
    try:
        for process in workers.values():
            assert process.stdout is not None
            json.loads(process.stdout.readline())  # ready
        time.sleep(args.settle)
        measured: dict[int, list[dict[str, float]]] = {count: [] for count in workers}
        for round_ in range(args.rounds + 1):  # round 0 warms both up (Spark's first plans): not counted
            for index in range(len(STATEMENTS)):
                order = list(workers) if (round_ + index) % 2 else list(reversed(workers))
                pair: dict[int, dict[str, float]] = {}
                for count in order:
                    process = workers[count]
                    assert process.stdin is not None and process.stdout is not None
                    process.stdin.write(f"{round_} {index}\n")
                    process.stdin.flush()
                    pair[count] = json.loads(process.stdout.readline())
                if round_:
                    for count in workers:
                        measured[count].append(pair[count])
    finally:
        for process in workers.values():
            if process.stdin:
                process.stdin.close()
        for process in workers.values():
            process.wait(timeout=120)
    empty, full = measured[0], measured[args.tables]
    print(f"{args.rounds} rounds; median wall time per statement, a catalog with 0 and {args.tables} other tables")
    labels = list(dict.fromkeys(label for timing in empty for label in timing))
    print(f"{'statement':<22}{'0 tables':>12}{f'{args.tables} tables':>14}{'ratio':>8}{'paired':>9}")
    worst = 0.0
    for label in labels:
        a = statistics.median(t[label] for t in empty if label in t)
        b = statistics.median(t[label] for t in full if label in t)
        paired = statistics.median(f[label] / e[label] for e, f in zip(empty, full, strict=True) if label in e)
        worst = worst if label in LISTS_EVERY_TABLE else max(worst, b / a)
        also = f"  (lists every table: 1 against {args.tables + 1})" if label in LISTS_EVERY_TABLE else ""
        print(f"{label:<22}{a * 1000:>10.0f}ms{b * 1000:>12.0f}ms{b / a:>7.2f}×{paired:>8.2f}×{also}")
    print(f"worst ratio {worst:.2f}× (target ≤ 1.5×; the ratio of the medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
