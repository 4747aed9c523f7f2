"""The statements that only look: ``SHOW MATERIALIZED TABLES``, ``SHOW CREATE …`` and ``DESCRIBE …`` (answered by
:mod:`mt_magic.runtime.inspect`). Nothing to undo, and the kernel's session keeps its cached tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements.base import CellNames, Handler, Runtime, Undo, nothing_to_undo
from mt_magic.sql.ddl.statements import DescribeMaterializedTable, ShowCreateMaterializedTable, ShowMaterializedTables

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace

L = TypeVar("L", ShowMaterializedTables, ShowCreateMaterializedTable, DescribeMaterializedTable)


class Look(Handler[L, None]):
    """A statement that only reads: it asks no scheduler, has nothing to undo and changes no table."""

    def check_current(self, rt: Runtime, stmt: L, cascade: bool) -> None:
        """Nothing to check against the schedulers: a look changes nothing."""

    def undo(self, rt: Runtime, stmt: L) -> tuple[str, Undo | None]:
        return "", nothing_to_undo

    def touched(self, ws: Workspace, stmt: L) -> list[str]:
        """None: the kernel's session keeps its cached tables."""
        return []


class ShowTables(Look[ShowMaterializedTables]):
    verb = None

    def apply(self, rt: Runtime, stmt: ShowMaterializedTables, cascade: bool, plan: None = None) -> StatementResult:
        return rt.show_tables(stmt.namespace, stmt.like)

    def check(
        self, rt: Runtime, stmt: ShowMaterializedTables, names: CellNames, where: str, cascade: bool = False
    ) -> None:
        """Names no table: nothing to check."""


class ShowCreate(Look[ShowCreateMaterializedTable]):
    verb = "SHOW CREATE"

    def apply(
        self, rt: Runtime, stmt: ShowCreateMaterializedTable, cascade: bool, plan: None = None
    ) -> StatementResult:
        return rt.show_create(rt.workspace.qualify(stmt.name))


class Describe(Look[DescribeMaterializedTable]):
    verb = "DESCRIBE"

    def apply(self, rt: Runtime, stmt: DescribeMaterializedTable, cascade: bool, plan: None = None) -> StatementResult:
        return rt.describe(rt.workspace.qualify(stmt.name))
