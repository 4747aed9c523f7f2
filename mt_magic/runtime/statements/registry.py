"""The one mapping of statement type to handler: each statement's check, apply and undo are found here, and
which statements ``%mt explain`` takes (:data:`PREVIEWED`, :data:`EXPLAINED`).

The service applies a statement through :func:`handler_for`; a cell (``runtime.cell``) checks and undoes through
it. Every statement type of the grammar (:data:`~mt_magic.sql.ddl.statements.STATEMENT_TYPES`) has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeGuard

from mt_magic.runtime.statements.alter import (
    AlterAs,
    ChangeConstraint,
    Refresh,
    Resume,
    SetFreshness,
    SetRefreshMode,
    SetScheduler,
    Suspend,
)
from mt_magic.runtime.statements.base import Handler
from mt_magic.runtime.statements.create import Create
from mt_magic.runtime.statements.drop import Drop
from mt_magic.runtime.statements.looks import Describe, ShowCreate, ShowTables
from mt_magic.runtime.statements.rename import Rename
from mt_magic.sql.ddl import statements as s

HANDLERS: Mapping[type[s.Statement], Handler[Any, Any]] = MappingProxyType(
    {
        s.CreateMaterializedTable: Create(),
        s.AlterSuspend: Suspend(),
        s.AlterResume: Resume(),
        s.AlterRefresh: Refresh(),
        s.AlterQuery: AlterAs(),
        s.AlterConstraint: ChangeConstraint(),
        s.AlterFreshness: SetFreshness(),
        s.AlterRefreshMode: SetRefreshMode(),
        s.AlterRename: Rename(),
        s.AlterScheduler: SetScheduler(),
        s.DropMaterializedTable: Drop(),
        s.ShowMaterializedTables: ShowTables(),
        s.ShowCreateMaterializedTable: ShowCreate(),
        s.DescribeMaterializedTable: Describe(),
    }
)


def handler_for(stmt: s.AnyStatement) -> Handler[Any, Any]:
    """The handler of ``stmt``'s type.

    Raises:
        TypeError: not a statement of the grammar.
    """
    try:
        return HANDLERS[type(stmt)]
    except KeyError:
        raise TypeError(f"unknown statement {stmt!r}") from None


PREVIEWED: Mapping[type[s.Statement], str] = MappingProxyType(
    {
        s.AlterQuery: "AS",
        s.AlterFreshness: "SET FRESHNESS",
        s.AlterRefreshMode: "SET REFRESH_MODE",
        s.AlterResume: "RESUME",
    }
)
"""Each ALTER whose change ``%mt explain`` previews (``change.decided``), with its action as the grammar spells it
after the table's name: the one list the API's check, the preview, ``%mt``'s completion and its help derive from
(``tests/architecture/test_explained_statements.py`` fails on a second)."""
Change = s.AlterQuery | s.AlterFreshness | s.AlterRefreshMode | s.AlterResume
"""Their type, for annotations (the same statements as :data:`PREVIEWED`, which the rule test checks)."""
CHANGES: tuple[type[s.Statement], ...] = tuple(PREVIEWED)
EXPLAINED: tuple[type[s.Statement], ...] = (s.CreateMaterializedTable, *CHANGES)
"""The statement types explain takes: a CREATE (before it runs; a CREATE OR ALTER of an existing table is a change
too) and the ALTERs it previews."""


def explains(stmt: s.Statement) -> TypeGuard[s.CreateMaterializedTable | Change]:
    """Whether explain takes ``stmt``: a statement of one of the :data:`EXPLAINED` types."""
    return isinstance(stmt, EXPLAINED)
