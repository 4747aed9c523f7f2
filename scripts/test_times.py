"""Print the timing table of the test lines recorded in ``.test-times`` (by ``scripts/test_line.py``).

    python scripts/test_times.py [NAME ...] [--areas N] [--slowest N]

One row per line, in the order they started: tests, passed, failed, skipped, wall time, CPU (the user and system time of
the line's processes), JVM CPU (its part in ``java`` processes), CPU wait (the share of its wall time in which the
machine had no free core), JVMs and kernels started, exit status; scripts/test_line.py says how each is counted. The
last row is the whole run: the wall clock from the first line's start to the last line's end (lines run side by side
overlap). Then, per line, where its time went: its test time summed by area (the test's directory, or notebook), the
share of it spent setting tests up (fixtures starting Spark, catalog servers, kernels: the ``setup`` property
conftest.py records) with the longest set-ups, and its slowest tests.
Standard library only, so any of the virtualenvs runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

TIMES = Path(os.environ.get("MT_TEST_TIMES", ".test-times"))


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s ({seconds / 60:.1f} min)"


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} s"


def _percent(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} %"


def _area(classname: str) -> str:
    """The test's directory under ``tests/`` (``tests/incremental``), a module at the top of ``tests/``, or the
    notebook of an nbval cell (``examples/01_quickstart.ipynb``)."""
    if ".ipynb" in classname:
        return classname.split(".ipynb")[0].replace(".", "/", 1) + ".ipynb"
    parts = classname.split(".")
    if len(parts) > 2 and Path(*parts[:2]).is_dir():
        return "/".join(parts[:2])
    return "/".join(parts[:2]) + ".py" if len(parts) > 1 else classname


def test_times(path: Path) -> list[tuple[float, str, str]]:
    """(seconds, area, test id) for every test case of a junit xml."""
    if not path.exists():
        return []
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        cases.append((float(case.get("time", 0) or 0), _area(classname), f"{classname}::{name}"))
    return cases


def setup_times(path: Path) -> list[tuple[float, str]]:
    """(seconds, test id) of every test case's set-up that a junit xml records (the ``setup`` property)."""
    if not path.exists():
        return []
    setups = []
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        for prop in case.iter("property"):
            if prop.get("name") == "setup":
                setups.append((float(prop.get("value", 0) or 0), test))
    return setups


def table(records: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| line | tests | passed | failed | skipped | wall | CPU | JVM CPU | CPU wait | JVMs | kernels | exit |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in records:
        rows.append(
            f"| {r['name']} | {r['tests']} | {r['passed']} | {r['failed']} | {r['skipped']} | {_minutes(r['wall'])} "
            f"| {r.get('cpu', 0):.0f} s | {_seconds(r.get('jvm_cpu'))} | {_percent(r.get('cpu_wait'))} | {r['jvms']} "
            f"| {r['kernels']} | {r['exit']} |"
        )
    if len(records) > 1:
        wall = max(r["ended"] for r in records) - min(r["started"] for r in records)
        total = {
            key: sum(r[key] for r in records)
            for key in ("tests", "passed", "failed", "skipped", "cpu", "jvms", "kernels")
        }
        status = max((r["exit"] for r in records), key=lambda code: code != 0)
        jvm_cpu = sum(r["jvm_cpu"] for r in records) if all("jvm_cpu" in r for r in records) else None
        rows.append(
            f"| **all** | {total['tests']} | {total['passed']} | {total['failed']} | {total['skipped']} "
            f"| {_minutes(wall)} | {total['cpu']:.0f} s | {_seconds(jvm_cpu)} | | {total['jvms']} | {total['kernels']} "
            f"| {status} |"
        )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="the lines to show (default: every recorded line)")
    parser.add_argument("--areas", type=int, default=6, help="areas shown per line (default 6)")
    parser.add_argument("--slowest", type=int, default=5, help="slowest tests shown per line (default 5)")
    args = parser.parse_args(argv)
    paths = [TIMES / f"{name}.json" for name in args.names] if args.names else sorted(TIMES.glob("*.json"))
    records = sorted((json.loads(p.read_text()) for p in paths if p.exists()), key=lambda r: r["started"])
    if not records:
        print(f"no test lines recorded in {TIMES}/")
        return 0
    print("\n".join(["", "Timing of the test lines (scripts/test_times.py):", "", *table(records)]))
    for r in records:
        cases = test_times(TIMES / f"{r['name']}.xml")
        if not cases:
            continue
        by_area: defaultdict[str, float] = defaultdict(float)
        for seconds, area, _ in cases:
            by_area[area] += seconds
        areas = ", ".join(
            f"{area} {seconds:.0f} s" for area, seconds in sorted(by_area.items(), key=lambda kv: -kv[1])[: args.areas]
        )
        kinds = ", ".join(f"{kind} {count}" for kind, count in r.get("jvm_kinds", {}).items())
        print(f"\n{r['name']}: test time {sum(c[0] for c in cases):.0f} s; by area: {areas}")
        if kinds:
            print(f"  JVMs by main class: {kinds}")
        setups = setup_times(TIMES / f"{r['name']}.xml")
        if setups:
            print(f"  set-up {sum(s[0] for s in setups):.0f} s; longest:")
            for seconds, test in sorted(setups, reverse=True)[: args.slowest]:
                print(f"  {seconds:7.1f} s  {test[:150]}")
        print("  slowest tests:")
        for seconds, _, test in sorted(cases, reverse=True)[: args.slowest]:
            print(f"  {seconds:7.1f} s  {test[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
