"""Schema rules of materialized tables: column lists, keys, creation, and append-only evolution (Spark side)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mt_magic.errors import DefinitionError, closest_names, first_line
from mt_magic.options import INCREMENTAL
from mt_magic.runtime.refresh.retention import retention_properties
from mt_magic.runtime.spark.quoting import identifier, qualified, string_literal
from mt_magic.sql.ddl.formatter import formatter_column
from mt_magic.sql.ddl.statements import ColumnDef, PrimaryKey
from mt_magic.sql.names import RESERVED_COLUMN_FIX, column_name_problem
from mt_magic.sql.query.parsed import Q, wrapped
from mt_magic.vocabulary import is_hidden_column

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructField, StructType

    from mt_magic.catalog.definitions import MaterializedTableDefinition


def apply_column_list(label: str, query: Q, columns: Sequence[ColumnDef], inferred: StructType) -> Q:
    """Wrap the query so it yields the declared columns, in the declared order, cast to declared types.

    Flink's rule: the list names every column the query produces (any order); types, when given, are
    applied as casts, and a cast Spark cannot do is a validation error (raised when the result is analysed).
    """
    if not columns:
        return query
    produced = {f.name.lower(): f.name for f in inferred.fields}
    declared = [c.name.lower() for c in columns]
    unknown = [c.name for c in columns if c.name.lower() not in produced]
    if unknown:
        raise DefinitionError(
            f"{label}: column(s) {', '.join(unknown)} are not produced by the query, which produces "
            f"{', '.join(f.name for f in inferred.fields)}. Declare only the query's columns (Flink does not "
            "support physical columns that the query does not use)."
        )
    missing = [f.name for f in inferred.fields if f.name.lower() not in declared]
    if missing:
        raise DefinitionError(
            f"{label}: the column list leaves out {', '.join(missing)}; list every column the query produces, "
            "in any order, or omit the column list."
        )
    select = []
    for c in columns:
        source = identifier(produced[c.name.lower()])
        cast = f"CAST({source} AS {c.type})" if c.type else source
        select.append(f"{cast} AS {identifier(c.name)}")
    return wrapped(query, ", ".join(select), "`__mt_query`")


def check_typed(label: str, schema: StructType) -> None:
    """Every column needs a type an Iceberg table can store: a bare ``NULL`` has none (Spark's ``void``)."""
    untyped = [f.name for f in schema.fields if f.dataType.simpleString() == "void"]
    if untyped:
        raise DefinitionError(
            f"{label}: column(s) {', '.join(untyped)} have no type (a bare NULL), which an Iceberg table cannot store",
            fix=f"cast them, e.g. CAST(NULL AS STRING) AS {untyped[0]}",
        )


def _not_a_column(label: str, clause: str, column: str, schema: StructType) -> DefinitionError:
    """A key, partition or bucket clause names ``column``, which the query does not produce."""
    names = [f.name for f in schema.fields]
    near = closest_names(column, names)
    return DefinitionError(
        f"{label}: {clause} column {column} is not a column of the query ({', '.join(names)})",
        did_you_mean=near,
        fix=f"name one of the query's columns in {clause}, or add {column} to the query's SELECT list",
    )


def check_keys(
    label: str,
    schema: StructType,
    primary_key: PrimaryKey | None,
    partitioned_by: Sequence[str],
    formatters: Mapping[str, str],
    bucket_columns: Sequence[str] = (),
) -> None:
    """Primary key, partition, bucket and formatter columns must exist; formatter columns must be strings."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    for col in bucket_columns:
        if col.lower() not in types:
            raise _not_a_column(label, "DISTRIBUTED BY", col, schema)
    for col in primary_key.columns if primary_key else ():
        if col.lower() not in types:
            raise _not_a_column(label, "PRIMARY KEY", col, schema)
    for col in partitioned_by:
        if col.lower() not in types:
            raise _not_a_column(label, "PARTITIONED BY", col, schema)
    for col in formatters:
        if col not in partitioned_by:
            raise DefinitionError(
                f"{label}: 'partition.fields.{col}.date-formatter' names {col}, which is not a partition column "
                f"(PARTITIONED BY {', '.join(partitioned_by) or 'nothing'})",
                fix=f"name a partition column in the option, or add {col} to PARTITIONED BY",
            )
        if types[col.lower()].simpleString() != "string":
            raise DefinitionError(
                f"{label}: the date-formatter column {col} must be a STRING partition column, "
                f"but the query makes it {types[col.lower()].simpleString()}",
                fix=f"make it a string in the query, e.g. date_format(…, 'yyyyMMdd') AS {col}",
            )


def table_properties(options: Mapping[str, str]) -> dict[str, str]:
    """The WITH options that are Iceberg table properties (``write.*``, ``format-version``, ``commit.*``, the
    user's own): every option but mt_magic's own (``incremental*``, date formatters), which live in ``mt.*``.
    Options of other systems never get here: the grammar refuses them."""
    return {
        key: value
        for key, value in options.items()
        if formatter_column(key) is None and key != INCREMENTAL.key and not key.startswith("incremental.")
    }


def create_iceberg_table(
    spark: SparkSession, name: str, schema: StructType, definition: MaterializedTableDefinition, comment: str | None
) -> None:
    """Create the empty Iceberg table (partition spec, properties, identifier fields); undone on failure.

    Plain DDL rather than CTAS: CTAS makes every column optional, and identifier fields must be required.
    """
    key = {c.lower() for c in definition.primary_key}
    columns = ", ".join(
        f"{identifier(f.name)} {f.dataType.simpleString()}" + (" NOT NULL" if f.name.lower() in key else "")
        for f in schema.fields
    )
    properties = {
        "format-version": "2",
        **table_properties(definition.options),
        **retention_properties(definition.interval, definition.options),
        **definition.to_properties(),
    }
    ddl = [f"CREATE TABLE {qualified(name)} ({columns}) USING iceberg"]
    fields = [identifier(c) for c in definition.partitioned_by]
    fields += [f"bucket({definition.buckets}, {identifier(c)})" for c in definition.bucket_columns]
    if fields:
        ddl.append("PARTITIONED BY (" + ", ".join(fields) + ")")
    if comment:
        ddl.append(f"COMMENT {string_literal(comment)}")
    ddl.append(
        "TBLPROPERTIES (" + ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in properties.items()) + ")"
    )
    try:
        spark.sql("\n".join(ddl))
    except Exception as exc:  # the catalog refused it (a location, a property): nothing was created
        raise DefinitionError(
            f"CREATE MATERIALIZED TABLE {name}: the catalog refused the table: {first_line(exc)}"
        ) from exc
    if definition.primary_key:
        try:
            spark.sql(
                f"ALTER TABLE {qualified(name)} SET IDENTIFIER FIELDS "
                + ", ".join(identifier(c) for c in definition.primary_key)
            )
        except Exception:
            spark.sql(f"DROP TABLE IF EXISTS {qualified(name)} PURGE")
            raise


def check_column_names(label: str, schema: StructType) -> None:
    """No column of the user's query may take the hidden key columns' reserved prefix (``sql.names``)."""
    for field in schema.fields:
        problem = column_name_problem(field.name)
        if problem is not None:
            raise DefinitionError(f"{label}: {problem}. Nothing changed; {RESERVED_COLUMN_FIX}.")


def hidden_count(schema: StructType) -> int:
    """How many hidden key columns a storage table has."""
    return sum(1 for f in schema.fields if is_hidden_column(f.name))


def appended_columns(label: str, current: StructType, new: StructType) -> list[StructField]:
    """The columns the new query appends; anything but appending is an error that says what changed.

    Visible columns compare by position; hidden key columns by name (an ALTER … AS that needs one appends it,
    and the next refresh recomputes the table, filling it; one the new query cannot fill is refused)."""
    visible = [f for f in current.fields if not is_hidden_column(f.name)]
    shown = [f for f in new.fields if not is_hidden_column(f.name)]
    hidden = {f.name.lower(): f for f in new.fields if is_hidden_column(f.name)}
    problems = [
        f"the hidden key column {old.name} ({old.dataType.simpleString()}) would be removed or change type: the new "
        "query has no such join key"
        for old in current.fields
        if is_hidden_column(old.name)
        and (old.name.lower() not in hidden or hidden[old.name.lower()].dataType != old.dataType)
    ]
    for i, old in enumerate(visible):
        if i >= len(shown):
            problems.append(f"column {old.name} ({old.dataType.simpleString()}) would be removed")
            continue
        now = shown[i]
        if now.name.lower() != old.name.lower():
            problems.append(f"column {i + 1} is {now.name} instead of {old.name}")
        elif now.dataType != old.dataType:
            problems.append(
                f"column {old.name} changes type {old.dataType.simpleString()} → {now.dataType.simpleString()}"
            )
    if problems:
        raise DefinitionError(
            f"{label}: only appending nullable columns at the end is allowed, but " + "; ".join(problems),
            fix="keep the existing columns as they are and add new ones last, or drop and recreate the table",
        )
    present = {f.name.lower() for f in current.fields}
    return shown[len(visible) :] + [f for name, f in hidden.items() if name not in present]


def arrow_columns(fields: Sequence[StructField]) -> pa.Schema:
    """Appended columns as an Arrow schema (all nullable), for the catalog to add in the definition's commit."""
    from pyspark.sql import types
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(types.StructType([types.StructField(f.name, f.dataType, True, f.metadata) for f in fields]))
