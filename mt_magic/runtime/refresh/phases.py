"""Where a refresh's time goes: named phases, timed around each step and returned with the outcome.

:func:`run_refresh` records; the steps mark themselves with :func:`phase` and cost nothing when nobody records
(a refresh run outside :func:`recording`). The benchmarks print the phases side by side, so a regression shows
where it is, not only that the total grew.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Phases = tuple[tuple[str, float], ...]
"""(phase name, seconds), in the order the phases ended."""

_spans: ContextVar[list[tuple[str, float]] | None] = ContextVar("mt_refresh_phases", default=None)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as ``name`` when a refresh is being recorded."""
    spans = _spans.get()
    if spans is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        spans.append((name, time.perf_counter() - started))


@contextmanager
def recording() -> Iterator[list[tuple[str, float]]]:
    """Collect the phases of everything run in the block (on this thread)."""
    spans: list[tuple[str, float]] = []
    token = _spans.set(spans)
    try:
        yield spans
    finally:
        _spans.reset(token)
