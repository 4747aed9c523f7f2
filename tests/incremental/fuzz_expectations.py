"""Expectations in the differential fuzzer (issue 49): which of a batch's tables get them, the constraints, the bad
batches, and the oracle's query. Drawn from the batch's own ``random.Random(f"{seed}:{number}:expect")``, so the
tables and rows every other generator draws are unchanged, and ``MT_FUZZ_EXPECTATIONS=0`` (no expectation tables, no
bad batch) replays a soak from before them exactly.

Per batch, while ``MT_FUZZ_EXPECTATIONS`` is above 0: one *guarded* table, ``SELECT * FROM source`` with a random
``DROP ROW`` expectation, a random kept-and-counted one and a ``FAIL UPDATE`` one that only an injected bad row breaks
(a value no generator draws, :data:`SENTINELS`; the ``DROP ROW`` condition keeps that row, so the audit sees it).
Now and then a round appends that bad row to the source and the next one deletes it (the source fixed): the refresh
in between is held (``main`` unchanged, equal to its last good state, never a bad row on it), the one after
publishes. And twins of a share of the level-1 tables (``MT_FUZZ_EXPECTATIONS``, rounded: one of 16 at the default,
half with ``0.5``) with a random ``DROP ROW`` and a random counted expectation over their output columns. Every
``DROP ROW`` table must equal ``SELECT * FROM (query) WHERE condition``: a row whose condition is NULL is dropped,
as ``WHERE`` drops it (Spark's and Databricks' rule, and ``runtime.refresh.audit.passes``).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

EXPECTATIONS = float(os.environ.get("MT_FUZZ_EXPECTATIONS", "0.05"))
"""The share of a batch's level-1 tables given an expectation twin, rounded (the default: one of 10 to 29, keeping
``make test``'s run short); ``0``: no guarded table either. A soak raises it (``0.5``)."""
BAD_BATCH = 0.4
"""The share of rounds (without a bad row pending) that append a bad row for the guarded table."""
SENTINELS = {"INT": "-77", "BIGINT": "-77", "DECIMAL(10,2)": "-77", "DECIMAL(5,0)": "-77", "STRING": "'bad!'"}
"""A value of each type no generator draws (:data:`in_process_fuzz.COLUMNS`' pools), the guarded table's bad row."""


@dataclass(frozen=True)
class Guard:
    """The batch's guarded table's ``FAIL UPDATE`` expectation: ``column`` must not be ``sentinel``."""

    column: str
    sentinel: str

    @property
    def condition(self) -> str:
        return f"{self.column} IS NULL OR {self.column} <> {self.sentinel}"

    def constraint(self) -> str:
        return f"CONSTRAINT sane EXPECT ({self.condition}) ON VIOLATION FAIL UPDATE"

    def bad_row(self, columns: list[str]) -> str:
        """A row of the source (its ``columns`` in order) that fails the expectation: NULL but the sentinel."""
        return "(" + ", ".join(self.sentinel if c == self.column else "NULL" for c in columns) + ")"

    def bad_rows(self) -> str:
        """The condition of the source's bad rows (what the fix deletes, and what the ``DROP ROW`` one keeps)."""
        return f"{self.column} = {self.sentinel}"

    def constraints(self, dropped: str, counted: str) -> str:
        """The guarded table's column list: a ``DROP ROW`` expectation that keeps the bad rows, a counted one, and
        the ``FAIL UPDATE`` one."""
        return f"{constraints(self.keeping(dropped), counted)}, {self.constraint()}"

    def keeping(self, dropped: str) -> str:
        """``dropped`` that keeps the bad rows (else a NULL there could drop them before the audit saw them)."""
        return f"({dropped}) OR {self.bad_rows()}"


def guard(rng: random.Random, columns: list[tuple[str, str]]) -> Guard | None:
    """The guard over one of the source's ``(name, Spark type)`` columns that has a sentinel; ``None``: none has."""
    usable = [(name, kind) for name, kind in columns if kind in SENTINELS]
    if not usable:
        return None
    name, kind = rng.choice(usable)
    return Guard(name, SENTINELS[kind])


def twins(rng: random.Random, candidates: int) -> list[int]:
    """Which of ``candidates`` level-1 tables get an expectation twin (their indexes)."""
    if EXPECTATIONS <= 0 or not candidates:
        return []
    return rng.sample(range(candidates), min(candidates, round(EXPECTATIONS * candidates)))


def constraints(dropped: str, counted: str) -> str:
    """A twin's column list: a ``DROP ROW`` expectation and a kept-and-counted one."""
    return f"CONSTRAINT drop_bad EXPECT ({dropped}) ON VIOLATION DROP ROW, CONSTRAINT counted EXPECT ({counted})"


def oracle(stored_query: str, kept_by: str) -> str:
    """The rows a ``DROP ROW`` table must hold: its query (as stored, before the refresh's own filter) filtered by
    the fuzzer's ``WHERE``, which drops a row whose condition is FALSE or NULL."""
    from mt_magic.runtime.refresh.audit import without_dropped_rows

    return f"SELECT * FROM ({without_dropped_rows(stored_query)}) AS fuzz_expected WHERE {kept_by}"
