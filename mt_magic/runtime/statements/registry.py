"""The one mapping of statement type to handler: each statement's check, apply and undo are found here.

The service applies a statement through :func:`handler_for`; a cell (``runtime.cell``) checks and undoes through
it. Every statement type of the grammar (:data:`~mt_magic.sql.ddl.statements.STATEMENT_TYPES`) has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

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
