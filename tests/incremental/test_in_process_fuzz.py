"""The in-process path against Spark, by the differential fuzzer (:mod:`in_process_fuzz`): a seeded, bounded run
here; the soak is ``make fuzz-soak SEED=… CASES=10000 SHARDS=3`` (``scripts/fuzz_soak.py``: this test in SHARDS
processes with ``MT_FUZZ_SEED``, ``MT_FUZZ_CASES`` each, ``MT_FUZZ_SHARD=k/n`` and ``MT_FUZZ_REPORT``). Batch 0 is
a chain batch (tables on tables; ``MT_FUZZ_CHAINS`` is their share, ``MT_FUZZ_CHAIN_TABLES`` their level-2 tables),
so the bounded run compares chains too.

Every disagreement a run ever finds becomes a fixed case in ``test_in_process_defects.py``."""

from __future__ import annotations

import json
import os

import in_process_fuzz
import pytest
from in_process_fuzz import Fuzzer

pytestmark = pytest.mark.spark

SEED = int(os.environ.get("MT_FUZZ_SEED", "2024"))
CASES = int(os.environ.get("MT_FUZZ_CASES", "60"))
BATCHES = tuple(int(n) for n in os.environ.get("MT_FUZZ_BATCHES", "").split(",") if n.strip())
"""A replay of the batches a soak's log names (``MT_FUZZ_BATCHES=2,5``): exactly those, whatever CASES says."""
SHARD = tuple(int(n) for n in os.environ.get("MT_FUZZ_SHARD", "0/1").split("/"))
"""``k/n``: this process runs batches k, k + n, … of the seed (a soak in n processes)."""
REPORT = os.environ.get("MT_FUZZ_REPORT")
"""Where to write the counts as JSON (the soak adds up its shards')."""
CHAINS = float(os.environ.get("MT_FUZZ_CHAINS", str(in_process_fuzz.CHAINS)))
"""The share of chain batches (``0``: none, replaying a soak from before chains exactly; ``1``: every batch)."""
CHAIN_TABLES = int(os.environ.get("MT_FUZZ_CHAIN_TABLES", str(in_process_fuzz.CHAIN_TABLES)))
TABLES = int(os.environ.get("MT_FUZZ_TABLES", "16"))
"""Level-1 tables of a batch (another number draws other batches: a replay needs the soak's)."""


def test_in_process_refreshes_equal_spark_and_explain_names_the_engine(spark, mt) -> None:
    fuzzer = Fuzzer(mt, spark, SEED, tables=TABLES, chains=CHAINS, chain_tables=CHAIN_TABLES)

    def log(line: str) -> None:  # after each batch: the line, and the counts so far for the soak to add up
        print(line, flush=True)
        if REPORT:
            with open(REPORT, "w") as report:
                json.dump(fuzzer.counts.summary(), report)

    counts = fuzzer.run(CASES, log=log, only=BATCHES, shard=(SHARD[0], SHARD[1]))
    print(counts.line())
    for label, detail in counts.spark_side:  # Spark's own refresh against Spark's query: reported, the lead's part
        print(f"Spark-side: {label}: {detail}")
    for label, detail in counts.refresh_failures:  # mt_magic's Spark strategies failing: reported, not a wrong answer
        print(f"Refresh failed where Spark's query answers: {label}: {detail}")
    assert (counts.compared >= CASES or BATCHES) and counts.in_process > 0, counts.line()
    assert counts.chain_compared > 0 or not counts.chain_batches, counts.line()
    assert not counts.disagreements, "\n".join(f"{label}: {detail}" for label, detail in counts.disagreements)
    assert counts.expectation_tables > 0 or not in_process_fuzz.fuzz_expectations.EXPECTATIONS, counts.line()
    assert not counts.expectation_failures, "\n".join(f"{a}: {b}" for a, b in counts.expectation_failures)
    assert not counts.engine_line_mismatches, "\n".join(f"{a}: {b}" for a, b in counts.engine_line_mismatches)
