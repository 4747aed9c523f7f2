"""Reading a materialized table with a staleness policy, modelled on Trino's ``WHEN STALE`` and the Iceberg
materialized-view proposal's reading rules: a reader states how stale is acceptable and what to do beyond it.

Staleness is judged from the catalog alone (:meth:`Engine.pending_since`: the commit time of the oldest
source change not yet reflected), so any process reading the catalog reaches the same verdict.
"""

from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from mt_magic.errors import MtMagicError, NoSuchSourceTableError
from mt_magic.sql.ddl.statements import TableName

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from mt_magic.runtime.results import StatementResult
    from mt_magic.runtime.workspace import Workspace


class MaterializedTables(Protocol):
    """What a read needs of the service (:class:`mt_magic.runtime.service.MaterializedTables`)."""

    @property
    def workspace(self) -> Workspace: ...

    def pending_since(self, name: str) -> datetime | None: ...

    def refresh(self, name: str) -> StatementResult: ...

    def rows(self, name: str) -> DataFrame: ...


class WhenStale(enum.Enum):
    """What a read does when the table is staler than allowed."""

    FAIL = "fail"
    """Raise :class:`StaleTableError` (Trino's ``WHEN STALE FAIL``)."""
    REFRESH = "refresh"
    """Refresh the table now, wait for the commit, then read."""
    READ_ANYWAY = "read-anyway"
    """Read the stored rows and warn (:class:`StaleReadWarning`); Trino's ``WHEN STALE INLINE`` would run the
    query instead, which a reader can do with the definition query if it must."""


class StaleTableError(MtMagicError):
    """A read with ``when_stale="fail"`` found the table staler than its allowed staleness."""


class StaleReadWarning(UserWarning):
    """A read with ``when_stale="read-anyway"`` returned rows older than the allowed staleness."""


@dataclass(frozen=True)
class Staleness:
    """How far behind its sources a materialized table is, as judged from the catalog at ``judged_at``."""

    table: str
    pending_since: datetime | None
    """Commit time of the oldest source change not reflected yet; ``None`` when caught up."""
    judged_at: datetime
    allowed: timedelta
    """The reader's ``max_staleness``, or the table's own freshness target."""

    @property
    def staleness(self) -> timedelta:
        return self.judged_at - self.pending_since if self.pending_since else timedelta(0)

    @property
    def stale(self) -> bool:
        return self.staleness > self.allowed


def judge(service: MaterializedTables, name: str, max_staleness: timedelta | None = None) -> Staleness:
    """The staleness of ``name`` (as written: unqualified names are in the default namespace).

    Raises:
        NoSuchMaterializedTableError: ``name`` is not a materialized table.
    """
    table = service.workspace.qualify(TableName.from_parts(name.split(".")))
    _, definition = service.workspace.catalog.load_materialized(table)
    allowed = max_staleness if max_staleness is not None else definition.interval
    pending = service.pending_since(table)
    return Staleness(table, pending, service.workspace.clock(), allowed)


def read(
    service: MaterializedTables,
    name: str,
    max_staleness: timedelta | None = None,
    when_stale: WhenStale | str = WhenStale.FAIL,
    refresh_timeout: float = 600.0,
) -> DataFrame:
    """The table's rows as a DataFrame, if they are fresh enough or ``when_stale`` says what to do.

    Args:
        service: the connection's service (``connect().service``, or the kernel's via :func:`mt_magic.read`).
        name: the materialized table, as written in SQL.
        max_staleness: how stale is acceptable; defaults to the table's FRESHNESS.
        when_stale: ``"fail"``, ``"refresh"`` or ``"read-anyway"``.
        refresh_timeout: seconds to wait for the refresh that ``"refresh"`` starts.

    Raises:
        StaleTableError: stale and ``when_stale="fail"``.
        RefreshError: the refresh started by ``"refresh"`` failed.
        NoSuchSourceTableError: a source is gone and ``when_stale`` is not ``"read-anyway"`` (which reads the
            stored rows and warns).
        ValueError: ``when_stale`` is not one of the three policies.
    """
    policy = WhenStale(when_stale)
    try:
        verdict = judge(service, name, max_staleness)
    except NoSuchSourceTableError as exc:  # no staleness without the source; its stored rows are still there
        if policy is not WhenStale.READ_ANYWAY:
            raise NoSuchSourceTableError(exc.table, exc.source) from None
        warnings.warn(f"{exc} Reading the stored rows anyway.", StaleReadWarning, stacklevel=2)
        return service.rows(exc.table)
    if verdict.stale:
        behind = f"{verdict.table} is {verdict.staleness} behind its sources (allowed: {verdict.allowed})"
        if policy is WhenStale.FAIL:
            raise StaleTableError(
                f"{behind}. Refresh it (ALTER MATERIALIZED TABLE {name} REFRESH), or read with "
                "when_stale='refresh' or 'read-anyway'."
            )
        if policy is WhenStale.REFRESH:
            started = service.refresh(verdict.table)
            assert started.refresh is not None
            started.refresh.result(timeout=refresh_timeout)
        else:
            warnings.warn(f"{behind}; reading the stored rows anyway.", StaleReadWarning, stacklevel=2)
    return service.rows(verdict.table)
