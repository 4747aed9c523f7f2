"""Helpers for tests that run statements on the real engine (imported by name: pytest puts ``tests/`` on sys.path)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mt_magic.runtime.status import ManagedTable


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


class OneTable:
    """The real engine, with discovery narrowed to one table (the session's catalog holds other tests' tables)."""

    def __init__(self, engine: object, name: str) -> None:
        self._engine, self._name = engine, name

    def discover(self, reuse: Collection[str] = frozenset()) -> Sequence[ManagedTable]:
        return [t for t in self._engine.discover(reuse) if t.name == self._name]  # type: ignore[attr-defined]

    def __getattr__(self, attribute: str) -> object:
        return getattr(self._engine, attribute)
