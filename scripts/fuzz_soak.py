"""The differential fuzzer's soak (``make fuzz-soak``): one seed's batches shared by SHARDS processes — process k
runs batches k, k + SHARDS, … — each with its own Spark and catalog, then their counts added up.

A refresh of the fuzzer waits on Spark, the catalog and DuckDB in turn, so one process keeps about one core busy;
shards run the same cases a single process would, sooner. Logs: ``.fuzz-soak/seed<S>-shard<k>.log``.
Each shard gets this environment, so a chain soak (tables on tables in every batch) is e.g.
``MT_FUZZ_CHAINS=1 MT_FUZZ_TABLES=8 MT_FUZZ_CHAIN_TABLES=12 python scripts/fuzz_soak.py --seed 35 …``; its replay
needs the same variables. ``MT_FUZZ_ROW_LEVEL_SHARE=0.8`` makes that share of every batch's rounds (chains too) change
the source by ``UPDATE``, ``MERGE`` or ``DELETE`` (or compact it), on every layout. ``MT_FUZZ_EXPECTATIONS=0.5``
gives half of each batch's level-1 tables an expectation twin (``tests/incremental/fuzz_expectations.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from mt_magic.loopback import private_dir

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/incremental/test_in_process_fuzz.py"
ADDED = (
    "queries", "joins", "rejected", "spark_invalid", "tables", "refreshes", "in_process", "joins_in_process", "guarded",
    "compared", "chain_batches", "chain_queries", "chain_tables", "twins", "chain_refreshes", "chain_in_process",
    "cascaded", "cascade_failed", "chain_compared", "depth2_compared", "depth3_compared", "merges", "updates",
    "deletes", "compactions", "changes_refused", "retractions_in_process", "after_row_level",
    "after_row_level_in_process", "expectation_tables", "expectation_refreshes", "dropped_rows", "bad_batches", "held",
    "published_after_held",
)  # fmt: skip
LISTED = ("disagreements", "engine_line_mismatches", "spark_side", "refresh_failures", "expectation_failures")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=10_000, help="refreshes compared with Spark, in all")
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    logs = ROOT / ".fuzz-soak"
    private_dir(logs)  # the owner's only, as everything mt_magic writes
    started = time.monotonic()
    runs = []
    for shard in range(args.shards):
        stem = logs / f"seed{args.seed}-shard{shard}"
        env = {
            **os.environ,
            "MT_FUZZ_SEED": str(args.seed),
            "MT_FUZZ_CASES": str(math.ceil(args.cases / args.shards)),
            "MT_FUZZ_SHARD": f"{shard}/{args.shards}",
            "MT_FUZZ_REPORT": f"{stem}.json",
        }
        with open(f"{stem}.log", "w") as log:
            # its own temporary root: pytest keeps the newest 3 of /tmp/pytest-of-<user>, so a shard (or a test run
            # beside the soak) started later would delete a running shard's catalog and warehouse
            temporary = f"--basetemp={stem}.tmp"
            command = [
                args.python,
                "-m",
                "pytest",
                TEST,
                "-q",
                "-s",
                "-p",
                "no:cacheprovider",
                "--timeout",
                "0",
                temporary,
            ]
            runs.append((stem, subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)))
    failed = [stem.name for stem, process in runs if process.wait() != 0]
    total: dict[str, object] = {key: 0 for key in ADDED + ("order_dependent",)} | {key: [] for key in LISTED}
    for stem, _ in runs:
        report = Path(f"{stem}.json")
        if not report.exists():
            continue
        counts = json.loads(report.read_text())
        for key in total:
            total[key] += counts.get(key, [] if key in LISTED else 0)  # type: ignore[operator]
    print(
        f"seed {args.seed}, {args.shards} shard(s), {time.monotonic() - started:.0f} s: "
        + ", ".join(f"{key} {len(value) if isinstance(value, list) else value}" for key, value in total.items())
    )
    for key in LISTED:
        for label, detail in total[key]:  # type: ignore[attr-defined]
            print(f"{key}: {label}: {detail}")
    if failed:
        print(f"failed: {', '.join(failed)} (see their logs under {logs})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
