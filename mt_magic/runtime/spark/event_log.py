"""Which executors ran which Spark job groups, read from Spark's event log (``spark.eventLog.enabled``).

The event log is Spark's own record of a run, so it shows where refresh jobs ran (job group
``mt-refresh:<table>:<n>``) after the fact, with the UI off and the application finished:

    python -m mt_magic.runtime.spark.event_log <event log dir or file> [--prefix mt-refresh:]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _events(path: Path) -> Iterator[dict[str, Any]]:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        with file.open() as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def tasks_by_job_group(path: Path, prefix: str = "") -> dict[str, Counter[str]]:
    """Job group -> Counter of executor ids that ran its tasks (groups starting with ``prefix``)."""
    group_of_stage: dict[int, str] = {}
    result: dict[str, Counter[str]] = {}
    for event in _events(path):
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            group = (event.get("Properties") or {}).get("spark.jobGroup.id") or ""
            if group.startswith(prefix) and group:
                for stage in event.get("Stage IDs", []):
                    group_of_stage[stage] = group
        elif kind == "SparkListenerTaskEnd" and event.get("Stage ID") in group_of_stage:
            executor = event["Task Info"]["Executor ID"]
            result.setdefault(group_of_stage[event["Stage ID"]], Counter())[executor] += 1
    return result


def executor_hosts(path: Path) -> dict[str, str]:
    """Executor id -> host, from the executors' registration events."""
    return {
        e["Executor ID"]: e["Executor Info"]["Host"]
        for e in _events(path)
        if e.get("Event") == "SparkListenerExecutorAdded"
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mt_magic.runtime.spark.event_log")
    parser.add_argument("path", type=Path)
    parser.add_argument("--prefix", default="mt-refresh:")
    args = parser.parse_args(argv)
    print("executors:", json.dumps(executor_hosts(args.path)))
    for group, counts in sorted(tasks_by_job_group(args.path, args.prefix).items()):
        print(f"{group}: tasks by executor {dict(sorted(counts.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
