"""The catalog server under a long spec-driven fuzz run, and as a shared catalog on PostgreSQL; prints figures.

* ``fuzz``: schemathesis generates requests for every operation of Iceberg's REST spec (valid and invalid,
  half of them aimed at a seeded namespace, two tables and a view) against one fresh server; prints the
  requests generated, the server errors (5xx, must be 0), the 4xx not in the spec's ErrorModel (must be 0)
  and the statuses. The suite runs the same with a few examples (``tests/catalog/test_rest_fuzz.py``).
* ``postgres``: a throw-away PostgreSQL cluster, two server processes on it sharing one warehouse, W writer
  threads appending K one-row commits each through both (409 -> reload and retry); prints writers, commits,
  conflicts and lost commits (must be 0).

    .venv/bin/python benchmarks/bench_catalog_conformance.py fuzz --examples 150
    .venv/bin/python benchmarks/bench_catalog_conformance.py postgres --writers 8 --commits 25
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "catalog"))

from concurrent_writers import concurrent_appends  # noqa: E402
from postgres_cluster import missing_reason, postgres_cluster  # noqa: E402
from serve_process import serving  # noqa: E402
from spec_fuzzing import fuzz  # noqa: E402

TOKEN = "bench-token"


def run_fuzz(examples: int, verbose: bool) -> int:
    home = Path(tempfile.mkdtemp(prefix="mt_fuzz_"))
    started = time.monotonic()
    with serving("--warehouse", str(home / "warehouse"), log=home / "server.log") as url:
        report = fuzz(url, examples, log=print if verbose else lambda _: None)
    print(f"fuzz, {examples} examples per operation and mode, {time.monotonic() - started:.0f}s")
    print(report.summary())
    for failure in report.server_errors + report.not_error_model:
        print("  ", failure)
    print(f"server log: {home / 'server.log'}")
    return 1 if report.server_errors or report.not_error_model else 0


def run_postgres(writers: int, commits: int) -> int:
    reason = missing_reason()
    if reason:
        print(f"postgres: skipped, {reason}")
        return 1
    home = Path(tempfile.mkdtemp(prefix="mt_shared_"))
    args = ("--warehouse", str(home / "warehouse"))
    with (
        postgres_cluster() as url,
        serving(*args, "--uri", url, token=TOKEN) as a,
        serving(*args, "--uri", url, token=TOKEN) as b,
    ):
        started = time.monotonic()
        report = concurrent_appends([a, b], TOKEN, writers, commits)
        seconds = time.monotonic() - started
    print(f"postgres, 2 servers, {seconds:.1f}s, {report.commits / seconds:.1f} commits/s")
    print(report.summary())
    return 1 if report.lost else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    fuzz_cmd = sub.add_parser("fuzz")
    fuzz_cmd.add_argument("--examples", type=int, default=150, help="per operation and generation mode")
    fuzz_cmd.add_argument("--verbose", action="store_true", help="print running totals per operation")
    pg_cmd = sub.add_parser("postgres")
    pg_cmd.add_argument("--writers", type=int, default=8)
    pg_cmd.add_argument("--commits", type=int, default=25, help="per writer")
    args = parser.parse_args()
    if args.command == "fuzz":
        return run_fuzz(args.examples, args.verbose)
    if args.command == "postgres":
        return run_postgres(args.writers, args.commits)
    return run_fuzz(150, False) | run_postgres(8, 25)


if __name__ == "__main__":
    sys.exit(main())
