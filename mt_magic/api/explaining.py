"""``mt_magic.explain(…)`` and ``%mt explain``: how a table refreshes, how a CREATE would, and what a change
would do before it is made — one path for the magic and the Python API.

Example::

    print(mt_magic.explain("ALTER MATERIALIZED TABLE daily_orders AS SELECT …"))

A change (``ALTER … AS``, ``CREATE OR ALTER`` of an existing table, ``SET FRESHNESS``, ``SET REFRESH_MODE``,
``RESUME``) is decided by the statement's own code (``runtime.statements.change.decided``: the definition it would
write, checked as it would be) and previewed (``runtime.inspect.change_preview``: rows kept or rebuilt, refreshes,
predicted cost from the table's history); nothing is written. The routing is here, above the runtime, because the
runtime's layers keep its statements and its inspection apart (``pyproject.toml``'s contracts).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, overload

from mt_magic.api import session
from mt_magic.api import statements as build
from mt_magic.sql.names import TableName

if TYPE_CHECKING:
    from mt_magic.runtime.inspect.change_preview import ChangePreview
    from mt_magic.runtime.refresh.incremental.explain import Explanation
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.runtime.statements.registry import Change

WHERE = "mt_magic.explain"


def explain(statement: str) -> Explanation | ChangePreview:
    """How a table refreshes and why (a name), how a CREATE or a query would, or what an ALTER would do before it is
    made: whether the table keeps its rows or rebuilds, the refresh mode and strategy it gets, and the cost per
    refresh and per hour predicted from its history. ``str()`` of the answer is what ``%mt explain`` prints.

    >>> print(mt_magic.explain("ALTER MATERIALIZED TABLE daily SET FRESHNESS = INTERVAL '1' HOUR"))  # doctest: +SKIP

    Raises:
        SqlError: what the grammar refuses in the statement, at its line and column.
        MtMagicError: what the statement would be refused for (nothing changed), or a statement explain does not
            take (with its Fix).
    """
    service = session.service()
    return explained_by(service, build.explained(statement, service.workspace.rules, WHERE))


@overload
def explained_by(service: MaterializedTables, target: TableName) -> Explanation: ...
@overload
def explained_by(service: MaterializedTables, target: Change) -> ChangePreview: ...
@overload
def explained_by(service: MaterializedTables, target: build.Explained) -> Explanation | ChangePreview: ...
def explained_by(service: MaterializedTables, target: build.Explained) -> Explanation | ChangePreview:
    """:func:`explain` of what :func:`~mt_magic.api.statements.explained` read (or the table handle's
    ``explain_change`` built), on ``service`` (``%mt explain`` passes the kernel's)."""
    from mt_magic.runtime.inspect.change_preview import preview_change
    from mt_magic.runtime.statements.change import decided, is_change

    ws = service.workspace
    if isinstance(target, TableName):
        return service.explain(ws.qualify(target))
    if is_change(ws, target):
        change = decided(ws, target)
        return preview_change(ws, change, service.history(change.name).records)
    explanation = service.explain(target)  # type: ignore[arg-type]
    return replace(explanation, table="this query") if target.name == build.QUERY_NAME else explanation
