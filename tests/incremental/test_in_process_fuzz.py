"""The in-process path against Spark, by the differential fuzzer (:mod:`in_process_fuzz`): a seeded, bounded run
here; the soak is ``make fuzz-soak SEED=… CASES=10000`` (this test with ``MT_FUZZ_SEED`` and ``MT_FUZZ_CASES``).

Every disagreement a run ever finds becomes a fixed case in ``test_in_process_defects.py``."""

from __future__ import annotations

import os

import pytest
from in_process_fuzz import Fuzzer

pytestmark = pytest.mark.spark

SEED = int(os.environ.get("MT_FUZZ_SEED", "2024"))
CASES = int(os.environ.get("MT_FUZZ_CASES", "60"))


def test_in_process_refreshes_equal_spark_and_explain_names_the_engine(spark, mt) -> None:
    counts = Fuzzer(mt, spark, SEED).run(CASES)
    print(counts.line())
    for label, detail in counts.spark_side:  # Spark's own refresh against Spark's query: reported, the lead's part
        print(f"Spark-side: {label}: {detail}")
    assert counts.compared >= CASES and counts.in_process > 0, counts.line()
    assert not counts.disagreements, "\n".join(f"{label}: {detail}" for label, detail in counts.disagreements)
    assert not counts.engine_line_mismatches, "\n".join(f"{a}: {b}" for a, b in counts.engine_line_mismatches)
