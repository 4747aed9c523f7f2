"""Small append-only refreshes in process: the same delta term and merge, run by DuckDB over Arrow, committed
through pyiceberg — no Spark job.

Through Spark, a refresh pays about 0.1 s for any job plus an Iceberg commit and 0.1–0.2 s to plan the merge,
while merging a 10,000-row delta into a 10,000-row table is a few milliseconds of work. For the shapes below
the refresh reads the delta's data files and the table with pyiceberg, runs the strategy's own SQL (the delta
term of :func:`.delta.delta_terms`, the merge of :func:`.strategies.combine_sql`) transpiled by sqlglot to
DuckDB, and commits one snapshot with the refresh state (:class:`~mt_magic.runtime.refresh.commit.RowsWrite`).

Only where both engines give the same rows: one source, appends only, APPEND_DELTA or AGGREGATE_MERGE, a
table unpartitioned or partitioned by identity (pyiceberg writes the partitions; a merge whose group keys
include the partition columns reads and rewrites only the partitions the delta touches), at most
:data:`IN_PROCESS_MAX_ROWS` rows read (the delta, and for a merge the table or its touched partitions), and
a query made only of columns, literals, comparisons of like types, AND/OR/NOT, IS [NOT] NULL, IN, BETWEEN,
DISTINCT, and ``count``, ``sum`` (of integers and decimals), ``min``, ``max`` over columns of integer, decimal,
string, boolean, date or timestamp type — no arithmetic, functions or floating point, whose semantics differ
between the engines. A result that does not fit the table's types (an overflowing sum) or any other error
before the commit runs the refresh on Spark instead. ``WITH ('incremental.engine' = 'spark')`` pins Spark.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.commit import RowsWrite
from mt_magic.runtime.refresh.context import ENGINE_OPTION, RefreshContext
from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.delta import delta_terms
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.incremental.shape import QueryPlan
from mt_magic.runtime.refresh.incremental.strategies import SCOPED_MAX_VALUES, combine_sql, scope_line
from mt_magic.runtime.refresh.phases import phase

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from sqlglot import exp

log = logging.getLogger(__name__)

IN_PROCESS_MAX_ROWS = 1_000_000
"""Most rows a refresh reads in process, into the kernel's memory as Arrow (the delta; for a merge, plus the table)."""
IN_PROCESS = "in process (DuckDB), no Spark job"
"""Appended to the outcome's strategy line."""

_INTEGRAL = ("int", "long")
_SUMMABLE = (*_INTEGRAL, "decimal")
_TYPES = (*_SUMMABLE, "string", "boolean", "date", "timestamp", "timestamptz")


def _type_class(iceberg_type: str) -> str:
    return "decimal" if iceberg_type.startswith("decimal") else iceberg_type


def _unsupported(query: str, types: Mapping[str, str]) -> str | None:
    """Why the query's semantics could differ between Spark and DuckDB (``None``: they cannot)."""
    import sqlglot
    from sqlglot import exp

    allowed = (
        exp.Select, exp.From, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Alias, exp.Where,
        exp.Group, exp.Star, exp.Count, exp.Sum, exp.Min, exp.Max, exp.And, exp.Or, exp.Not, exp.Paren,
        exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.Null, exp.Boolean, exp.Literal,
        exp.In, exp.Between, exp.Distinct,
    )  # fmt: skip
    tree = sqlglot.parse_one(query, read="spark")
    for node in tree.walk():
        if not isinstance(node, allowed):
            return f"{type(node).__name__} is not run in process"
        if isinstance(node, exp.Column) and _type_class(types.get(node.name.lower(), "?")) not in _TYPES:
            return f"column {node.name} has a type not run in process"
        if isinstance(node, (exp.Sum, exp.Min, exp.Max, exp.Count)) and isinstance(node.this, exp.Distinct):
            return "an aggregate of DISTINCT values, e.g. COUNT(DISTINCT …)"
        if isinstance(node, (exp.Sum, exp.Min, exp.Max, exp.Count)) and not isinstance(
            node.this, (exp.Column, exp.Star)
        ):
            return "an aggregate over an expression"
        if isinstance(node, exp.Sum) and _type_class(types.get(node.this.name.lower(), "?")) not in _SUMMABLE:
            return "a sum of a non-integral, non-decimal column"
        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between)):
            why = _mixed_comparison(node, types)
            if why is not None:
                return why
    select = tree if isinstance(tree, exp.Select) else None
    if select is None or any(isinstance(e, exp.Select) for e in tree.find_all(exp.Select) if e is not tree):
        return "not a single SELECT"
    for column in select.expressions:
        if not isinstance(column, (exp.Column, exp.Alias, exp.Star)):
            return "an output column without a name"  # each engine names it its own way
    return None


def _mixed_comparison(node: exp.Expr, types: Mapping[str, str]) -> str | None:
    """A comparison whose operands are not all of one kind (implicit casts differ between the engines)."""
    from sqlglot import exp

    kinds = set()
    for operand in node.iter_expressions():
        parts = operand.expressions if isinstance(operand, exp.Tuple) else [operand]
        for part in parts:
            if isinstance(part, exp.Column):
                kind = _type_class(types.get(part.name.lower(), "?"))
                kinds.add("number" if kind in _SUMMABLE else kind)
            elif isinstance(part, exp.Literal):
                kinds.add("string" if part.is_string else "number")
            elif isinstance(part, exp.Boolean):
                kinds.add("boolean")
            else:
                return "a comparison with an expression"
    return None if len(kinds) <= 1 else "a comparison across types"


def partitioning_reason(transforms: Sequence[str], spec_count: int = 1) -> str | None:
    """Why pyiceberg does not write this table's partitions here (``None``: unpartitioned, or identity
    partitions of the one spec the table ever had). Other transforms (``bucket``, ``truncate``) need
    pyiceberg's native extension; an evolved spec is left to Spark."""
    if spec_count > 1:
        return "an evolved partition spec"
    other = next((t for t in transforms if t != "identity"), None)
    return None if other is None else f"a {other} partition transform"


def _spark_reason(
    options: Mapping[str, str],
    query: QueryPlan,
    strategy: Strategy | None,
    partitioning: str | None,
    sql: str,
    source: TableInfo,
) -> str | None:
    """Why a refresh of this table never runs in process, whatever changed (``None``: small appends may)."""
    if options.get(ENGINE_OPTION, "auto").strip().lower() == "spark":
        return f"'{ENGINE_OPTION}' = 'spark'"
    if strategy not in (Strategy.APPEND_DELTA, Strategy.AGGREGATE_MERGE):
        return f"strategy {strategy.value if strategy else 'full'}"
    if query.branches or query.rollup_keys or query.joins > 1:
        return "a join, a UNION or grouping sets"
    if partitioning is not None:
        return partitioning
    return _unsupported(sql, {name.lower(): kind for name, kind, _ in source.columns})


def in_process_plan(
    plan: RefreshPlan, info: TableInfo, source: TableInfo, definition: MaterializedTableDefinition
) -> str | None:
    """Why this refresh runs on Spark (``None``: it may run in process)."""
    if len(plan.changes) != 1 or plan.changes[0].kind is not ChangeKind.APPENDS:
        return "not appends to one source"
    table_rows = info.snapshots[-1].summary.get("total-records", "") if info.snapshots else "0"
    if plan.strategy is Strategy.APPEND_DELTA or plan.partition_columns:
        table_rows = "0"  # appending reads only the delta; a scoped merge counts its partitions' rows when read
    if not table_rows.isdigit() or int(table_rows) + plan.changes[0].rows > IN_PROCESS_MAX_ROWS:
        return f"more than {IN_PROCESS_MAX_ROWS:,} rows"
    partitioning = partitioning_reason(info.partition_transforms, info.partition_spec_count)
    return _spark_reason(definition.options, plan.query, plan.strategy, partitioning, definition.expanded_query, source)


def engine_line(
    options: Mapping[str, str],
    query: QueryPlan,
    partitioning: str | None,
    sql: str,
    sources: Sequence[TableInfo | None],
) -> str:
    """``%mt explain``'s engine line: where the refreshes of appends run (``partitioning``: see
    :func:`partitioning_reason`)."""
    source = sources[0] if len(sources) == 1 else None
    if source is None:
        return "Spark"
    why = _spark_reason(options, query, query.strategy_for(ChangeKind.APPENDS), partitioning, sql, source)
    if why is not None:
        return f"Spark ({why})"
    return (
        f"appends in process (DuckDB, no Spark job) while delta plus table ≤ {IN_PROCESS_MAX_ROWS:,} rows; else Spark"
    )


def _duckdb_sql(spark_sql: str) -> str:
    import sqlglot

    return sqlglot.transpile(spark_sql, read="spark", write="duckdb")[0]


def _conformed(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` as the table's columns: by name (case-insensitively), in table order, cast safely (an overflow
    raises rather than wraps); a column the result lacks is NULL."""
    import pyarrow as pa

    by_name = {name.lower(): index for index, name in enumerate(rows.column_names)}
    columns = []
    for field in schema:
        index = by_name.get(field.name.lower())
        column = pa.nulls(rows.num_rows, field.type) if index is None else rows.column(index).cast(field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _referenced_columns(query: str, source: TableInfo) -> list[str] | None:
    """The source columns the query reads (``None``: all of them, for a ``*``)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="spark")
    if any(not isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star)):
        return None
    names = {c.name.lower() for c in tree.find_all(exp.Column)}
    columns = [name for name, _, _ in source.columns if name.lower() in names]
    return columns or [source.columns[0][0]]  # count(*) alone still needs the rows


def _touched_partitions(rows: pa.Table, columns: Sequence[str]) -> tuple[BooleanExpression | None, str]:
    """A pyiceberg filter selecting the identity partitions ``rows`` fall in, and the scope line ("partitions ds
    (2 value(s))"); ``(None, "")`` when the merge is not scoped or touches more than
    :data:`~.strategies.SCOPED_MAX_VALUES` partitions (the whole table is read and rewritten then).

    ``columns`` (:attr:`.planner.RefreshPlan.partition_columns`) are among the merge keys, so a group lies in
    one partition and merging the touched partitions' rows with the delta's groups is the whole change.
    """
    from pyiceberg.expressions import And, EqualTo, IsNull, Or

    if not columns:
        return None, ""
    by_name = {name.lower(): name for name in rows.column_names}
    names = [by_name[c.lower()] for c in columns]
    touched = set(zip(*(rows.column(name).to_pylist() for name in names), strict=True))
    if len(touched) > SCOPED_MAX_VALUES:
        return None, ""

    def cell(name: str, value: Any) -> BooleanExpression:
        return IsNull(name) if value is None else EqualTo(name, value)

    def both(left: BooleanExpression, right: BooleanExpression) -> BooleanExpression:
        return And(left, right)

    def either(left: BooleanExpression, right: BooleanExpression) -> BooleanExpression:
        return Or(left, right)

    terms = [reduce(both, [cell(n, v) for n, v in zip(names, values, strict=True)]) for values in touched]
    counts = {n: len({values[i] for values in touched}) for i, n in enumerate(names)}
    return reduce(either, terms), scope_line(counts)


def in_process_write(
    ctx: RefreshContext, table_name: str, definition: MaterializedTableDefinition, plan: RefreshPlan, source: TableInfo
) -> RowsWrite | None:
    """The rows of an eligible refresh (:func:`in_process_plan`), computed without Spark; ``None`` when they
    could not be (the refresh then runs on Spark; nothing was written)."""
    import duckdb

    from mt_magic.catalog.rows import NotReadableInProcess, appended_rows, rows_at

    change = plan.changes[0]
    view = f"__mt_ins_{uuid.uuid4().hex[:12]}"
    try:
        with phase("deltas"):
            source_table = ctx.catalog.iceberg_table(change.name)
            assert change.pinned is not None, "an append change has a pinned snapshot"
            columns = _referenced_columns(definition.expanded_query, source)
            delta = appended_rows(source_table, change.consumed, change.pinned, columns)
        with phase("strategy"):
            table = ctx.catalog.iceberg_table(table_name)
            schema = table.schema().as_arrow()
            (term,) = delta_terms(definition.expanded_query, plan.changes, {change.name: view})
            with duckdb.connect() as con:
                con.execute("SET TimeZone = 'UTC'")
                con.register(view, delta)
                partial = _conformed(con.sql(_duckdb_sql(term)).to_arrow_table(), schema)
                if plan.strategy is Strategy.APPEND_DELTA:
                    return RowsWrite(table, partial, None)
                if not partial.num_rows:
                    return RowsWrite(table, partial, None)  # no group changed: the commit carries the state
                touched, scope = _touched_partitions(partial, plan.partition_columns)
                current, files = rows_at(table, plan.table_snapshot, touched, IN_PROCESS_MAX_ROWS - delta.num_rows)
                con.register("__mt_current", current)
                con.register("__mt_partial", partial)
                merged = combine_sql(
                    "(SELECT * FROM __mt_current UNION ALL SELECT * FROM __mt_partial)",
                    plan.query.merge_keys,
                    plan.query.merge,
                )
                rows = _conformed(con.sql(_duckdb_sql(merged)).to_arrow_table(), schema)
                return RowsWrite(table, rows, tuple(files), scope)
    except (NotReadableInProcess, duckdb.Error, ArithmeticError, ValueError, TypeError, NotImplementedError) as exc:
        log.info("refresh of %s runs on Spark: in process it failed before the commit: %s", table_name, exc)
        return None
