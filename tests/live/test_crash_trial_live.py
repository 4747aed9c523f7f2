"""Kernel crash, the suite's small form of ``benchmarks/crash_trials.py``: one real kernel refreshing a CONTINUOUS
(incremental) and a FULL table under appends is SIGKILLed at a random moment; a new kernel resumes; both tables
equal their queries recomputed (pyiceberg scans, no Spark) at the source snapshot their last commit names, and
neither is left suspended.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from live_support import drop_namespace_tables

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import crash_trials  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def test_a_kernel_killed_mid_refresh_loses_and_repeats_nothing(
    iceberg, kernel_specs, subprocess_env, tmp_path: Path
) -> None:
    try:
        records, finals = crash_trials.run_trials(iceberg, kernel_specs, subprocess_env, tmp_path, trials=1, seed=7)
    finally:
        drop_namespace_tables(iceberg, crash_trials.NS)
    assert [r["ok"] for r in records] == [True], records
    assert all(f["exact"] and f["at_last_commit"] and not f["suspended"] for f in finals), finals
