"""What ``%mt explain`` and ``mt_magic.explain`` take besides a table name or a query: a CREATE, or one of the ALTERs
a change preview decides (:mod:`.change`). The one list of them: the API's check, the preview, ``%mt``'s completion
and its help derive from it (``tests/architecture/test_explained_statements.py`` fails on a second).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeGuard

from mt_magic.sql.ddl.statements import (
    AlterFreshness,
    AlterQuery,
    AlterRefreshMode,
    AlterResume,
    CreateMaterializedTable,
    Statement,
)

PREVIEWED: Mapping[type[Statement], str] = MappingProxyType(
    {
        AlterQuery: "AS",
        AlterFreshness: "SET FRESHNESS",
        AlterRefreshMode: "SET REFRESH_MODE",
        AlterResume: "RESUME",
    }
)
"""Each ALTER a preview decides, with its action as the grammar spells it after the table's name."""
Change = AlterQuery | AlterFreshness | AlterRefreshMode | AlterResume
"""Their type, for annotations (the same statements as :data:`PREVIEWED`, which the rule test checks)."""
CHANGES: tuple[type[Statement], ...] = tuple(PREVIEWED)
EXPLAINED: tuple[type[Statement], ...] = (CreateMaterializedTable, *CHANGES)
"""The statement types explain takes: a CREATE (before it runs; a CREATE OR ALTER of an existing table is a change
too) and the ALTERs it previews."""


def explains(stmt: Statement) -> TypeGuard[CreateMaterializedTable | Change]:
    """Whether explain takes ``stmt``: a statement of one of the :data:`EXPLAINED` types."""
    return isinstance(stmt, EXPLAINED)
