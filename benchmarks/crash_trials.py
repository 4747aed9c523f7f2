"""Kernel crash trials: SIGKILL a real kernel that refreshes a CONTINUOUS (incremental) and a FULL table under a
steady append load, at random moments; a new kernel resumes; every table must equal its query recomputed at the
source snapshot its last commit names, with nothing stuck suspended.

    PYTHONPATH=$PWD python benchmarks/crash_trials.py --trials 20 [--seed 16] [--out crash_trials.json]

Each trial: start a kernel, ``%load_ext mt_magic`` (it resumes from the catalog), wait until the CONTINUOUS table
has caught up with the source as it was when the kernel started (the resume), append a batch every 0.5 s and ask
for a manual FULL refresh every 2 s, kill the kernel's process group after a random 2–15 s, then check both tables
against pyiceberg scans of the source (no Spark in this process). A last kernel then catches everything up. The
kernels' refresh leases last 6 s, so each new kernel takes over from the killed one at once.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "live"))

from live_support import Kernel, embedded_catalog, process_group_alive, wait_until, write_kernel_spec  # noqa: E402

from mt_magic.catalog.definitions import MaterializedTableDefinition, RefreshState  # noqa: E402

NS = "crash"
SOURCE = (NS, "events")
TABLES = {
    "cont": f"CREATE MATERIALIZED TABLE {NS}.cont FRESHNESS = INTERVAL '3' SECOND "
    f"AS SELECT batch, count(*) AS n, sum(v) AS s FROM {NS}.events GROUP BY batch",
    "full": f"CREATE MATERIALIZED TABLE {NS}.full FRESHNESS = INTERVAL '5' SECOND REFRESH_MODE = FULL "
    f"AS SELECT batch, max(v) AS m, count(*) AS n FROM {NS}.events GROUP BY batch",
}


def recompute(name: str, rows: list[tuple[int, int]]) -> list[tuple[Any, ...]]:
    """The table's query, in Python, over the source's rows."""
    groups: dict[int, list[int]] = defaultdict(list)
    for batch, v in rows:
        groups[batch].append(v)
    if name == "cont":
        return sorted((b, len(vs), sum(vs)) for b, vs in groups.items())
    return sorted((b, max(vs), len(vs)) for b, vs in groups.items())


def scan(catalog: Any, ident: tuple[str, str], snapshot_id: int | None = None) -> list[tuple[Any, ...]]:
    table = catalog.load_table(ident)
    if snapshot_id is None and table.current_snapshot() is None:
        return []
    arrow = table.scan(snapshot_id=snapshot_id).to_arrow()
    return sorted(zip(*(arrow.column(i).to_pylist() for i in range(arrow.num_columns)), strict=True))


def check(catalog: Any, name: str) -> dict[str, Any]:
    """The table against its query at the source snapshot its last refresh commit names."""
    table = catalog.load_table((NS, name))
    last = None
    for snapshot in reversed(table.snapshots()):
        state = RefreshState.from_summary(snapshot.summary.additional_properties if snapshot.summary else {})
        if state is not None:
            last = (snapshot.snapshot_id, state)
            break
    assert last is not None, f"{name} has no refresh commit"
    consumed = last[1].source_states[0].snapshot_id
    actual = scan(catalog, (NS, name))
    expected = recompute(name, [(b, v) for b, v in scan(catalog, SOURCE, consumed)]) if consumed else []
    definition = MaterializedTableDefinition.from_properties(table.properties)
    at_last = table.metadata.current_snapshot_id == last[0]
    return {
        "table": name,
        "exact": actual == expected,
        "at_last_commit": at_last,
        "suspended": bool(definition and definition.suspended),
        "consumed": consumed,
        "rows": len(actual),
    }


class Appender:
    """Appends a batch every 0.5 s and asks the kernel for a manual FULL refresh every 2 s, until stopped."""

    def __init__(self, catalog: Any, kernel: Kernel, first_batch: int) -> None:
        self.catalog, self.kernel, self.batch = catalog, kernel, first_batch
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import pyarrow as pa

        ticks = 0
        while not self.stop.wait(0.5):
            self.catalog.load_table(SOURCE).append(
                pa.table(
                    {"batch": pa.array([self.batch] * 3, pa.int32()), "v": pa.array([1, 2, self.batch], pa.int32())}
                )
            )
            self.batch, ticks = self.batch + 1, ticks + 1
            if ticks % 4 == 0:
                try:
                    self.kernel.client.execute(f"%%materialized\nALTER MATERIALIZED TABLE {NS}.full REFRESH")
                except Exception:  # the kernel is being killed
                    pass


def start_kernel(specs: Path, env: dict[str, str], cwd: Path) -> Kernel:
    kernel = Kernel(specs, env, cwd)
    kernel.run("%config MaterializedMagics.refresh_lease_seconds = 6")
    kernel.run("%load_ext mt_magic", timeout=300)
    return kernel


def caught_up(catalog: Any, name: str, source_snapshot: int) -> bool:
    consumed = check(catalog, name)["consumed"]
    return consumed is not None and (consumed == source_snapshot or _is_after(catalog, consumed, source_snapshot))


def _is_after(catalog: Any, consumed: int, wanted: int) -> bool:
    """Whether ``consumed`` is ``wanted`` or a later snapshot of the source."""
    ids = [s.snapshot_id for s in catalog.load_table(SOURCE).snapshots()]
    return consumed in ids and wanted in ids and ids.index(consumed) >= ids.index(wanted)


def trial(
    number: int, rng: random.Random, catalog: Any, specs: Path, env: dict[str, str], cwd: Path, batch: int
) -> tuple[dict[str, Any], int]:
    started = time.monotonic()
    kernel = start_kernel(specs, env, cwd)
    loaded = time.monotonic()
    if number == 0:
        for cell in TABLES.values():
            kernel.run(f"%%materialized --wait\n{cell}", timeout=300)
    source_at_start = catalog.load_table(SOURCE).current_snapshot().snapshot_id
    wait_until(lambda: caught_up(catalog, "cont", source_at_start), 180, "the new kernel to resume the table")
    resumed = time.monotonic()
    appender = Appender(catalog, kernel, batch)
    appender.thread.start()
    delay = rng.uniform(2, 15)
    time.sleep(delay)
    pgid = kernel.pid
    kernel.kill()
    appender.stop.set()
    appender.thread.join()
    wait_until(lambda: not process_group_alive(pgid), 60, "the killed kernel to be gone")
    results = [check(catalog, name) for name in TABLES]
    ok = all(r["exact"] and r["at_last_commit"] and not r["suspended"] for r in results)
    record = {
        "trial": number,
        "ok": ok,
        "kill_after_s": round(delay, 1),
        "load_ext_s": round(loaded - started, 1),
        "resume_s": round(resumed - loaded, 1),
        "batches": appender.batch - batch,
        "tables": results,
    }
    print(json.dumps(record), flush=True)
    return record, appender.batch


def prepare(catalog: Any) -> None:
    """The source table with one row (the tables are created by the first trial's kernel)."""
    import pyarrow as pa

    catalog.create_namespace_if_not_exists(NS)
    source = catalog.create_table(SOURCE, schema=pa.schema([("batch", pa.int32()), ("v", pa.int32())]))
    source.append(pa.table({"batch": pa.array([0], pa.int32()), "v": pa.array([1], pa.int32())}))


def run_trials(
    catalog: Any, specs: Path, env: dict[str, str], cwd: Path, trials: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``trials`` crash trials, then a last kernel that catches every table up; (trial records, final checks)."""
    prepare(catalog)
    rng, batch, records = random.Random(seed), 1, []
    for number in range(trials):
        record, batch = trial(number, rng, catalog, specs, env, cwd, batch)
        records.append(record)
    final = start_kernel(specs, env, cwd)
    try:
        source_now = catalog.load_table(SOURCE).current_snapshot().snapshot_id
        for name in TABLES:
            wait_until(lambda name=name: caught_up(catalog, name, source_now), 180, f"{name} to catch up")
        return records, [check(catalog, name) for name in TABLES]
    finally:
        final.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("crash_trials.json"))
    args = parser.parse_args()
    from mt_magic.catalog.embedded import stop_embedded_server

    work, home, env, server, catalog = embedded_catalog("mt_crash_")
    try:
        records, finals = run_trials(catalog, write_kernel_spec(work / "kernels"), env, work, args.trials, args.seed)
    finally:
        stop_embedded_server(home)
    failed = [r["trial"] for r in records if not r["ok"]]
    summary = {
        "trials": len(records),
        "failed": failed,
        "final": finals,
        "kill_after_s": [r["kill_after_s"] for r in records],
        "resume_s": [r["resume_s"] for r in records],
    }
    args.out.write_text(json.dumps({"summary": summary, "records": records}, indent=1))
    print(json.dumps(summary), flush=True)
    return 1 if failed or not all(f["exact"] for f in finals) else 0


if __name__ == "__main__":
    sys.exit(main())
