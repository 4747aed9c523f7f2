"""benchmarks/bench_streaming.py end to end at a tiny size: every contender (mt_magic, Structured Streaming, the full
recompute) keeps both queries, each result equals the query run by Spark on the final source, and every append was
seen. No timing is asserted (the machine is shared); the figures are the benchmark's to print.

Not part of ``make test`` (it starts four Spark JVMs and has not yet passed at a size that keeps the suite short):
``make bench-smoke`` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--minutes", "0.1", "--freshness", "2", "--cadence", "1", "--rows-per-batch", "20", "--initial-rows", "200"]


def test_every_contender_keeps_both_queries_equal_to_spark(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = ROOT / "benchmarks" / "bench_streaming.py"
    done = subprocess.run(
        [sys.executable, str(script), *TINY, "--out", str(out)], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    figures = {(f["contender"], f["shape"]): f for f in result["figures"]}
    assert set(figures) == {(c, s) for c in ("mt_magic", "streaming", "recompute") for s in ("group_by", "join")}
    assert result["appends"] >= 1
    for key, f in figures.items():
        assert f["equal"], key
        assert f["errors"] == [], key
        assert (f["appends_seen"], f["appends_unseen"]) == (result["appends"], 0), key
    assert "equal" in done.stdout
