"""Helpers for tests that run statements on the real engine (imported by name: pytest puts ``tests/`` on sys.path)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
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


@contextmanager
def catalog_requests(mt, key: Callable[[object], object | None]) -> Iterator[Counter]:  # type: ignore[no-untyped-def]
    """Count the REST requests the service's catalog client sends, by ``key(request)`` (``None``: not counted)."""
    session = mt.workspace.catalog.catalog._session
    counts: Counter = Counter()
    send = session.send

    def counted(request, **kwargs):  # type: ignore[no-untyped-def]
        found = key(request)
        if found is not None:
            counts[found] += 1
        return send(request, **kwargs)

    session.send = counted
    try:
        yield counts
    finally:
        del session.send


def definition_properties(reads: str) -> dict[str, str]:
    """The table properties CREATE writes for a daily FULL table ``SELECT k FROM reads`` (no Spark): what the
    catalog-level tests use to make materialized tables another client wrote."""
    from datetime import timedelta

    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.vocabulary import RefreshMode

    return MaterializedTableDefinition(
        query=f"SELECT k FROM {reads}",
        expanded_query=f"SELECT k FROM {reads}",
        freshness="INTERVAL '1' DAY",
        refresh_mode=RefreshMode.FULL,
        interval=timedelta(days=1),
        upstream=(reads,),
    ).to_properties()
