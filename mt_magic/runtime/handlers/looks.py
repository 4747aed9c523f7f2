"""The statements that only look: ``SHOW MATERIALIZED TABLES``, ``SHOW CREATE …`` and ``DESCRIBE …`` (answered by
:mod:`mt_magic.runtime.inspect`). Nothing to undo, and the kernel's session keeps its cached tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.runtime.handlers.base import CellNames, Handler, Runtime, Undo, nothing_to_undo
from mt_magic.runtime.results import StatementResult
from mt_magic.sql.ddl.statements import DescribeMaterializedTable, ShowCreateMaterializedTable, ShowMaterializedTables

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace


class ShowTables(Handler[ShowMaterializedTables]):
    verb = None
    looks = True

    def apply(self, rt: Runtime, stmt: ShowMaterializedTables, cascade: bool) -> StatementResult:
        return rt.show_tables(stmt.namespace, stmt.like)

    def check(self, ws: Workspace, stmt: ShowMaterializedTables, names: CellNames, where: str) -> None:
        """Names no table: nothing to check."""

    def undo(self, rt: Runtime, stmt: ShowMaterializedTables) -> tuple[str, Undo | None]:
        return "", nothing_to_undo


class ShowCreate(Handler[ShowCreateMaterializedTable]):
    verb = "SHOW CREATE"
    looks = True

    def apply(self, rt: Runtime, stmt: ShowCreateMaterializedTable, cascade: bool) -> StatementResult:
        return rt.show_create(rt.workspace.qualify(stmt.name))

    def undo(self, rt: Runtime, stmt: ShowCreateMaterializedTable) -> tuple[str, Undo | None]:
        return "", nothing_to_undo


class Describe(Handler[DescribeMaterializedTable]):
    verb = "DESCRIBE"
    looks = True

    def apply(self, rt: Runtime, stmt: DescribeMaterializedTable, cascade: bool) -> StatementResult:
        return rt.describe(rt.workspace.qualify(stmt.name))

    def undo(self, rt: Runtime, stmt: DescribeMaterializedTable) -> tuple[str, Undo | None]:
        return "", nothing_to_undo
