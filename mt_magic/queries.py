"""Query cells from Python: ``mt_magic.query(sql)`` (a DataFrame) and ``mt_magic.live(sql)`` (a live view).

The same path as ``%%mtsql``: names resolved as statements resolve them, the catalog's tables read at pinned
snapshots (:mod:`mt_magic.runtime.inspect.query`); ``live`` opens the view the kernel's live views keep
current (:class:`mt_magic.widgets.live_query.LiveQuery`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mt_magic.errors import MtMagicError
from mt_magic.kernel import require_kernel_session

if TYPE_CHECKING:
    from mt_magic.runtime.connection import Connection
    from mt_magic.widgets.live import LiveViews
    from mt_magic.widgets.live_query import LiveQuery

__all__ = ["query", "live"]

DEFAULT_ROWS = 1000


def query(sql: str, *, limit: int = DEFAULT_ROWS, spark: bool = False, connection: Connection | None = None) -> Any:
    """Run one Spark SQL query over the catalog's tables, as of their current snapshots.

    Args:
        sql: one query; unqualified names are in the connection's namespace, as in statements.
        limit: rows the pandas DataFrame keeps (``attrs["truncated"]`` says whether more exist).
        spark: return the (pinned, lazy) Spark DataFrame instead, all rows.
        connection: defaults to the kernel's.

    Returns:
        A pandas DataFrame (``attrs["as_of"]``: table → snapshot id read), or a Spark DataFrame.

    Raises:
        QueryCellError: not one query, an unknown table, or Spark refused it; nothing ran.

    Example:
        >>> mt_magic.query("SELECT * FROM daily_orders ORDER BY order_date DESC", limit=10)  # doctest: +SKIP
    """
    from mt_magic.runtime.inspect import query as queries

    workspace = (connection or require_kernel_session("pass connection=").connection).service.workspace
    resolved = queries.resolve(workspace, sql)
    if spark:
        return queries.frame(workspace, queries.pin(workspace, resolved))
    table, truncated = queries.to_pandas(workspace, resolved, _checked(limit))
    table.attrs["truncated"] = truncated
    return table


def live(
    sql: str,
    *,
    limit: int = DEFAULT_ROWS,
    debounce: float = 2.0,
    poll_every: float | None = 10.0,
    views: LiveViews | None = None,
    connection: Connection | None = None,
) -> LiveQuery:
    """A live view of ``sql``: it re-runs when a table it reads commits (debounced, off the kernel's thread).

    Args:
        sql: one query, as for :func:`query`; the first run happens now, in the caller's thread.
        limit: rows the view keeps.
        debounce: seconds without a new commit before a re-run (a run waits at most 15 s, or ``debounce``).
        poll_every: seconds between catalog polls for commits the refresh manager does not report (plain
            Iceberg sources, other writers); ``None``: events only.
        views, connection: default to the kernel's (``%load_ext mt_magic``).

    Raises:
        QueryCellError: as :func:`query`; no view is opened.
        MtMagicError: no refresh manager runs in this kernel to report commits.
    """
    from mt_magic.runtime.inspect.query import QuerySource, resolve

    if views is None or connection is None:
        session = require_kernel_session()
        connection = connection or session.connection
        views = views or session.live_views()
    if views is None:
        raise MtMagicError(
            "A live query needs the refresh manager, which is not running in this kernel: without it no commit is "
            "reported",
            fix="run the query without --live, or connect with the manager started",
        )
    service = connection.service
    source = QuerySource(lambda: service.workspace, resolve(service.workspace, sql), _checked(limit), views.clock)
    first = source.run()
    quiet = timedelta(seconds=max(debounce, 0.0))
    return views.query(
        source,
        first,
        quiet=quiet,
        longest=max(quiet, timedelta(seconds=15)),
        poll_every=None if poll_every is None else timedelta(seconds=poll_every),
    )


def _checked(limit: int) -> int:
    from mt_magic.runtime.inspect.query import checked_limit

    return checked_limit(limit)
