"""``read(name, max_staleness=…, when_stale=…)`` for notebook users and other readers of materialized tables.

A thin entry point over :mod:`mt_magic.runtime.inspect.read` that finds the kernel's connection (``%load_ext
mt_magic``) or takes one from :func:`mt_magic.runtime.connection.connect`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from mt_magic.kernel import require_kernel_session
from mt_magic.runtime.inspect.read import StaleReadWarning, StaleTableError, WhenStale
from mt_magic.runtime.inspect.read import read as _read

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from mt_magic.runtime.connection import Connection

__all__ = ["read", "kernel_connection", "StaleTableError", "StaleReadWarning", "WhenStale"]


def kernel_connection() -> Connection:
    """The connection of the IPython kernel this runs in.

    Raises:
        MtMagicError: not in a kernel with the extension loaded.
    """
    return require_kernel_session("pass connection=mt_magic.runtime.connection.connect()").connection


def read(
    name: str,
    max_staleness: timedelta | float | None = None,
    when_stale: WhenStale | str = WhenStale.FAIL,
    connection: Connection | None = None,
) -> DataFrame:
    """Read a materialized table if it is fresh enough; otherwise fail, refresh first, or read anyway.

    Args:
        name: the table as written in SQL (unqualified names are in the connection's namespace).
        max_staleness: acceptable staleness (a timedelta or seconds); defaults to the table's FRESHNESS.
        when_stale: ``"fail"`` (default), ``"refresh"`` or ``"read-anyway"``.
        connection: defaults to the kernel's.

    Example:
        >>> from mt_magic.reader import read
        >>> read("dws_overall", max_staleness=600, when_stale="refresh").show()  # doctest: +SKIP
    """
    if isinstance(max_staleness, (int, float)):
        max_staleness = timedelta(seconds=max_staleness)
    service = (connection or kernel_connection()).service
    return _read(service, name, max_staleness, when_stale)
