"""A long run of one real kernel keeping four materialized tables fresh under a steady append load, sampling what
must stay bounded: the kernel's and its Spark JVM's memory, open files and threads, the JVM heap, and per table
the snapshots and metadata files it keeps.

    PYTHONPATH=$PWD python benchmarks/resource_run.py --minutes 60 [--sample-seconds 30] [--out resource_run.json]

The kernel shows a live card and the ``%mt`` dashboard for the whole run (so the live-views updater loads previews
too). Tables: an incremental GROUP BY and an incremental filter (CONTINUOUS, 5 s), a FULL table on a 10 s cron and
a CONTINUOUS table reading the GROUP BY (10 s). Their snapshot age limit is set to 5 minutes with
``WITH ('history.expire.max-snapshot-age-ms' = …)`` so retention's plateau shows within the hour (the default is
a hundred freshness periods and at least an hour); the source is the user's table and is not expired by us.

After a warm-up (the first sixth of the run) the samples are split in two halves; each metric's maximum in the
second half is compared with the first's. Prints one table and exits 1 when any limit below is exceeded.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "live"))

from live_support import Kernel, embedded_catalog, write_kernel_spec  # noqa: E402

NS = "res"
SOURCE = (NS, "events")
AGE = "'history.expire.max-snapshot-age-ms' = '300000'"
TABLES = {
    "agg": f"CREATE MATERIALIZED TABLE {NS}.agg WITH ({AGE}) FRESHNESS = INTERVAL '5' SECOND "
    f"AS SELECT k, count(*) AS n, sum(v) AS s FROM {NS}.events GROUP BY k",
    "recent": f"CREATE MATERIALIZED TABLE {NS}.recent WITH ({AGE}) FRESHNESS = INTERVAL '5' SECOND "
    f"AS SELECT batch, k, v FROM {NS}.events WHERE v % 10 = 0",
    "full": f"CREATE MATERIALIZED TABLE {NS}.full WITH ({AGE}) FRESHNESS = INTERVAL '10' SECOND "
    f"REFRESH_MODE = FULL AS SELECT k, max(v) AS m FROM {NS}.events GROUP BY k",
    "chain": f"CREATE MATERIALIZED TABLE {NS}.chain WITH ({AGE}) FRESHNESS = INTERVAL '10' SECOND "
    f"AS SELECT n, count(*) AS groups FROM {NS}.agg GROUP BY n",
}
LIMITS = {
    # metric: (allowed growth of the second half's maximum over the first's: a fraction, plus an absolute slack)
    "kernel_rss_mb": (0.10, 20),
    "catalog_server_rss_mb": (0.10, 30),
    "kernel_fds": (0.0, 4),
    "kernel_threads": (0.0, 2),
    "jvm_rss_mb": (0.10, 50),
    "jvm_fds": (0.10, 20),
    "jvm_threads": (0.10, 10),
    "jvm_heap_used_mb": (0.25, 100),
}
SNAPSHOT_LIMIT = 100 + 20 + 60
"""min-snapshots-to-keep (100) + EXPIRE_BATCH (20) + a minute of refreshes between expiries."""
METADATA_FILE_LIMIT = 100 + 10
"""write.metadata.previous-versions-max (100) + the current file and a few in flight."""

KERNEL_PROBE = """
import json as _j, threading as _t
from pyspark.sql import SparkSession as _S
_r = _S.builder.getOrCreate()._jvm.java.lang.Runtime.getRuntime()
print(_j.dumps({"py_threads": _t.active_count(),
                "jvm_heap_used_mb": (_r.totalMemory() - _r.freeMemory()) / 2**20}))
"""


def process_sample(pid: int) -> dict[str, float]:
    """The kernel's and its Spark JVM's (its java child) resident memory, open files and threads."""
    import psutil

    kernel = psutil.Process(pid)
    jvms = [p for p in kernel.children(recursive=True) if "java" in p.name()]
    sample = {
        "kernel_rss_mb": kernel.memory_info().rss / 2**20,
        "kernel_fds": kernel.num_fds(),
        "kernel_threads": kernel.num_threads(),
    }
    if jvms:
        jvm = jvms[0]
        sample |= {
            "jvm_rss_mb": jvm.memory_info().rss / 2**20,
            "jvm_fds": jvm.num_fds(),
            "jvm_threads": jvm.num_threads(),
        }
    return sample


def table_sample(catalog: Any, name: str) -> dict[str, Any]:
    """Snapshots kept, metadata files on disk and commits so far (the last sequence number)."""
    table = catalog.load_table((NS, name))
    metadata_dir = Path(urlparse(table.metadata.location).path) / "metadata"
    return {
        "snapshots": len(table.metadata.snapshots),
        "metadata_files": sum(1 for p in metadata_dir.glob("*.metadata.json")),
        "commits": table.metadata.last_sequence_number,
    }


class Appender:
    """Appends 50 rows to the source every second until stopped."""

    def __init__(self, catalog: Any) -> None:
        self.catalog, self.batch = catalog, 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                self._append()
            except Exception as exc:  # a dropped connection or a lost commit race: the next second tries again
                self.errors.append(repr(exc)[:200])

    def _append(self) -> None:
        import pyarrow as pa

        batch, rows = self.batch + 1, range(50)
        columns = {
            "batch": pa.array([batch] * 50, pa.int32()),
            "k": pa.array([(batch * 7 + i) % 200 for i in rows], pa.int32()),
            "v": pa.array([batch + i for i in rows], pa.int32()),
        }
        self.catalog.load_table(SOURCE).append(pa.table(columns))
        self.batch = batch


def prepare(catalog: Any) -> None:
    import pyarrow as pa

    catalog.create_namespace_if_not_exists(NS)
    schema = pa.schema([("batch", pa.int32()), ("k", pa.int32()), ("v", pa.int32())])
    source = catalog.create_table(SOURCE, schema=schema)
    source.append(pa.table({"batch": [0], "k": [0], "v": [0]}, schema=schema))


def verdict(samples: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Per metric: max of the first and second half after warm-up, growth, limit and whether it held."""
    steady = samples[len(samples) // 6 :]
    first, second = steady[: len(steady) // 2], steady[len(steady) // 2 :]
    rows, ok = [], True
    for metric, (fraction, slack) in LIMITS.items():
        a = max((s[metric] for s in first if metric in s), default=0.0)
        b = max((s[metric] for s in second if metric in s), default=0.0)
        held = b <= a * (1 + fraction) + slack
        ok &= held
        rows.append({"metric": metric, "first_half_max": round(a, 1), "second_half_max": round(b, 1), "held": held})
    for name in TABLES:
        for metric, limit in (("snapshots", SNAPSHOT_LIMIT), ("metadata_files", METADATA_FILE_LIMIT)):
            b = max(s["tables"][name][metric] for s in second)
            a = max(s["tables"][name][metric] for s in first)
            held = b <= limit
            ok &= held
            rows.append(
                {
                    "metric": f"{name}.{metric}",
                    "first_half_max": a,
                    "second_half_max": b,
                    "limit": limit,
                    "held": held,
                }
            )
    return rows, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--sample-seconds", type=float, default=30)
    parser.add_argument("--out", type=Path, default=Path("resource_run.json"))
    args = parser.parse_args()
    import psutil

    from mt_magic.catalog.embedded import stop_embedded_server

    work, home, env, server, catalog = embedded_catalog("mt_resources_")
    prepare(catalog)
    kernel = Kernel(write_kernel_spec(work / "kernels"), env, work)
    samples: list[dict[str, Any]] = []
    appender = Appender(catalog)
    try:
        kernel.run("%load_ext mt_magic", timeout=300)
        for cell in TABLES.values():
            kernel.run(f"%%materialized --wait\n{cell}", timeout=300)
        kernel.run(f"%mt status {NS}.agg")
        kernel.run("%mt")
        appender.thread.start()
        started = time.monotonic()
        while time.monotonic() - started < args.minutes * 60:
            time.sleep(args.sample_seconds)
            sample: dict[str, Any] = {"minute": round((time.monotonic() - started) / 60, 2)}
            sample |= process_sample(kernel.pid)
            sample |= json.loads(kernel.run(KERNEL_PROBE).strip().splitlines()[-1])
            sample["tables"] = {name: table_sample(catalog, name) for name in TABLES}
            sample["source_batches"] = appender.batch
            sample["append_errors"] = len(appender.errors)
            sample["catalog_server_rss_mb"] = psutil.Process(server.pid).memory_info().rss / 2**20
            samples.append(sample)
            print(json.dumps(sample), flush=True)
    finally:
        appender.stop.set()
        kernel.kill()
        stop_embedded_server(home)
    rows, ok = verdict(samples)
    args.out.write_text(json.dumps({"minutes": args.minutes, "verdict": rows, "samples": samples}, indent=1))
    for row in rows:
        limit = f"≤ {row['limit']}" if "limit" in row else ""
        print(
            f"{row['metric']:<24} {row['first_half_max']:>10} {row['second_half_max']:>10} {limit:>8} "
            f"{'held' if row['held'] else 'GREW'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
