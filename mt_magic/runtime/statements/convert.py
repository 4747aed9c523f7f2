"""CREATE OR ALTER MATERIALIZED TABLE on an existing plain Iceberg table: convert it in place (Flink's FLIP-578).

Only with ``WITH ('convert-existing-table' = 'true')``. The table stays the same Iceberg table — its data files,
snapshots and history — and gains a definition (``mt.*`` properties) in one catalog commit, with its Iceberg
view registered just before (``statements.iceberg_view``; removed again if the commit fails). Its columns must be
the query's: the same names, each of a type the query's values are cast to without loss, nullable where the
query may give NULL. Its partition spec is kept (identity partitions become the definition's PARTITIONED BY),
so PARTITIONED BY, DISTRIBUTED BY and PRIMARY KEY are refused. The first refresh then recomputes the table
(FROM_BEGINNING, the default), or with any later start keeps its rows and adds the query over the source rows
since the start (:mod:`mt_magic.runtime.refresh.start`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.errors import DefinitionError
from mt_magic.options import CONVERT
from mt_magic.runtime.graph import descendants, lineage
from mt_magic.runtime.refresh.retention import retention_properties
from mt_magic.runtime.refresh.start import kept_tag
from mt_magic.runtime.spark.quoting import qualified
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.statements.definition import build_definition
from mt_magic.runtime.statements.schema import table_properties
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.statements import CreateMaterializedTable

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

WIDENING = {
    "tinyint": ("smallint", "int", "bigint"),
    "smallint": ("int", "bigint"),
    "int": ("bigint",),
    "float": ("double",),
}
"""Query type → the wider table types a refresh casts it to without loss (Iceberg's own promotions)."""


def wants_conversion(stmt: CreateMaterializedTable) -> bool:
    """``'convert-existing-table' = 'true'`` in the statement's WITH."""
    return CONVERT.read(dict(stmt.options)) is True


def refuse_plain(stmt: CreateMaterializedTable, name: str) -> DefinitionError:
    """Today's answer to CREATE OR ALTER on a plain table, naming the option that converts it."""
    return DefinitionError(
        f"CREATE OR ALTER MATERIALIZED TABLE {stmt.name}: {name} is a plain Iceberg table, not a materialized "
        "table; nothing changed",
        fix=f"to convert it in place, keeping its rows and snapshot history, add WITH ('{CONVERT.key}' = 'true'); "
        "or choose another name",
    )


def convert_table(ws: Workspace, stmt: CreateMaterializedTable, info: TableInfo) -> MaterializedTableDefinition:
    """Check everything, then write the definition into the plain table ``info`` in one commit.

    Raises:
        DefinitionError: the option is missing, a clause cannot apply to an existing table, or the query's
            columns do not match the table's; nothing was changed.
    """
    label = f"CREATE OR ALTER MATERIALIZED TABLE {stmt.name}"
    if not wants_conversion(stmt):
        raise refuse_plain(stmt, info.name)
    layout = [
        clause
        for clause, given in (
            ("PARTITIONED BY", stmt.partitioned_by),
            ("DISTRIBUTED BY", stmt.distribution),
            ("PRIMARY KEY", stmt.primary_key),
        )
        if given
    ]
    if layout:
        raise DefinitionError(
            f"{label}: converting keeps the table's layout, so {', '.join(layout)} cannot apply; nothing changed",
            fix="remove the clause (change the layout with Spark's ALTER TABLE before or after converting)",
        )
    definition, schema = build_definition(ws, stmt, info)
    upstream = lineage(ws).reads
    loop = sorted(set(definition.upstream) & {info.name, *descendants(info.name, upstream)})
    if loop:
        raise DefinitionError(
            f"{label}: the query reads {', '.join(loop)}, which would make {info.name} read itself; nothing changed",
            fix="compute it from the tables it is derived from",
        )
    check_columns(label, schema, ws.spark.table(qualified(info.name)).schema)
    identity = info.partition_spec_count == 1 and all(t == "identity" for t in info.partition_transforms)
    definition = replace(definition, partitioned_by=info.partition_columns if identity else ())
    properties = {
        **table_properties(definition.options),
        **retention_properties(definition.interval, definition.options),
        **definition.to_properties(),
    }
    if stmt.comment:
        properties["comment"] = stmt.comment
    with iceberg_view.defining(ws, label, info.name, definition, None):  # its Iceberg view too, undone on failure
        ws.catalog.update_properties(info.name, properties, tags=kept_tag(definition))
    return definition


def check_columns(label: str, query: StructType, table: StructType) -> None:
    """The query must produce exactly the table's columns, each castable to the column's type without loss.

    Raises:
        DefinitionError: every mismatch, with how to fix it.
    """
    produced = {f.name: f for f in query.fields}
    held = {f.name: f for f in table.fields}
    problems, fixes = [], []
    missing = [f"{n} {f.dataType.simpleString()}" for n, f in held.items() if n not in produced]
    extra = [f"{n} {f.dataType.simpleString()}" for n, f in produced.items() if n not in held]
    if missing:
        problems.append(f"the query does not produce the table's column(s) {', '.join(missing)}")
        fixes.append("select them in the query (alias with AS; names are case-sensitive)")
    if extra:
        problems.append(f"the query produces column(s) {', '.join(extra)} the table does not have")
        fixes.append("drop them from the query, or add them first with ALTER TABLE … ADD COLUMN")
    for name in (n for n in held if n in produced):
        want, got = held[name].dataType.simpleString(), produced[name].dataType.simpleString()
        if want != got and want not in WIDENING.get(got, ()):
            problems.append(f"column {name} is {want} in the table but {got} in the query")
            fixes.append(f"cast it in the query: CAST(… AS {want}) AS {name}")
        elif not held[name].nullable and produced[name].nullable:
            problems.append(f"column {name} is NOT NULL in the table but the query may give NULL")
            fixes.append(f"make it non-null in the query (e.g. coalesce), or ALTER COLUMN {name} DROP NOT NULL")
    if problems:
        raise DefinitionError(
            f"{label}: the query's columns do not match the table's: {'; '.join(problems)}; nothing changed",
            fix="; ".join(fixes),
        )
