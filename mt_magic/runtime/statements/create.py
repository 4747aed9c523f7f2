"""CREATE MATERIALIZED TABLE: the checked definition becomes a table and its Iceberg view, or nothing does.

CREATE is one catalog commit (two with a primary key: CREATE TABLE, then identifier fields), undone by dropping the
new table; the view is registered after it and the table dropped when that fails (``iceberg_view``).
"""

from __future__ import annotations

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.errors import (
    MaterializedTableExistsError,
)
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.statements import schema as schema_rules
from mt_magic.runtime.statements.definition import BuiltDefinition, build_definition
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.statements import CreateMaterializedTable


def create_table(
    ws: Workspace, stmt: CreateMaterializedTable, built: BuiltDefinition | None = None
) -> tuple[str, MaterializedTableDefinition]:
    """Create the (empty) Iceberg table with its definition; the first refresh populates it. ``built``: the
    statement's :func:`build_definition`, when its check built it already (Spark analyses a query once).

    Raises:
        MaterializedTableExistsError: the name is taken (use CREATE OR ALTER to change its query).
        DefinitionError: the statement cannot be applied; nothing was created.
    """
    name = ws.qualify(stmt.name)
    if ws.catalog.exists(name):
        raise MaterializedTableExistsError(
            f"CREATE MATERIALIZED TABLE {stmt.name}: {name} already exists",
            fix="use CREATE OR ALTER MATERIALIZED TABLE to change its query, or DROP MATERIALIZED TABLE first",
        )
    iceberg_view.check_free(ws, f"CREATE MATERIALIZED TABLE {stmt.name}", name)
    definition, schema = built or build_definition(ws, stmt)
    schema_rules.create_iceberg_table(ws.spark, name, schema, definition, stmt.comment)
    iceberg_view.register(ws, name, definition)
    return name, definition
