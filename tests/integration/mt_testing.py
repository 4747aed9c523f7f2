"""Helpers for integration tests (imported by name: pytest puts this directory on sys.path)."""

from __future__ import annotations

from datetime import datetime, timezone


def run(service, cell: str, cascade: bool = False) -> list:
    """Execute every statement of a cell and wait for the refreshes it started."""
    from mt_magic.sql import parse_cell

    results = [service.execute(s, cascade=cascade) for s in parse_cell(cell)]
    for r in results:
        if r.refresh is not None:
            r.refresh.result(timeout=300)
    return results


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)
