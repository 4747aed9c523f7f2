"""Updates and deletes of a GROUP BY's one source, in process: "merge the signed delta"
(:func:`~..strategies.aggregate_retract`) on DuckDB over Arrow.

The change is read as removed and added rows (:mod:`.change_rows`, netted), each side aggregated by the query
itself, and folded into the stored groups by the same SQL Spark runs (:func:`~..strategies.retract_sql`): stored −
removed + added; a group left with no rows is dropped; a group whose MIN/MAX may have lost its extreme, or whose SUM
may have lost every non-NULL value, is recomputed here from the pinned source's rows of those groups. Every type the
in-process gate admits is exact (no floating point), so the arithmetic is Spark's; an overflow raises in DuckDB and
Spark runs the refresh.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.commit import RowsWrite
from mt_magic.runtime.refresh.context import RefreshContext
from mt_magic.runtime.refresh.incremental.in_process import eligibility
from mt_magic.runtime.refresh.incremental.in_process.arrow_sql import (
    conformed,
    connect,
    referenced_columns,
    sum_mass_after,
    table_types,
    touched_partitions,
    whole_source,
)
from mt_magic.runtime.refresh.incremental.in_process.change_rows import changed_rows, net
from mt_magic.runtime.refresh.incremental.in_process.guards import DataNotExact, check_readable
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan
from mt_magic.runtime.refresh.incremental.strategies import GONE, SIDE_OF, UNSAFE, retract_sql, sums_without_nulls
from mt_magic.runtime.refresh.phases import phase
from mt_magic.sql.query.in_process_gate import READABLE, duckdb_sql
from mt_magic.sql.query.rewrite import pin_sources

if TYPE_CHECKING:
    import pyarrow as pa


def retracted(
    ctx: RefreshContext,
    info: TableInfo,
    definition: MaterializedTableDefinition,
    plan: RefreshPlan,
    sources: Sequence[TableInfo],
) -> RowsWrite:
    """The rewritten groups of a retraction, written but not committed.

    Raises:
        DataNotExact: the change or the table cannot be read here, or a value does not fit (Spark runs it).
    """
    import pyarrow as pa

    from mt_magic.catalog.rows import rows_at, write_files

    (change,) = plan.changes  # a retraction has one source
    source = next(s for s in sources if s.name == change.name)
    query = definition.expanded_query
    columns = referenced_columns(query, source)
    source_table = change.iceberg if change.iceberg is not None else ctx.catalog.iceberg_table_of(source)
    table = ctx.catalog.iceberg_table_of(info)
    schema = table.schema().as_arrow()
    types = table_types(table)
    names = {field.name.lower(): field.name for field in schema}
    keys = [names[k.lower()] for k in plan.query.merge_keys]
    retract = [(names[c.lower()], kind) for c, kind in plan.query.retract]
    if set(names) != {k.lower() for k in keys} | {c.lower() for c, _ in retract}:
        raise DataNotExact("a column of the table is neither a grouping key nor a retractable aggregate")
    if any(kind.kind not in READABLE for kind in types.values()):
        raise DataNotExact("a column's type is not exact in process")
    budget = eligibility.IN_PROCESS_MAX_ROWS
    with connect(ctx, definition) as con:
        with phase("deltas"):
            assert change.pinned is not None, "a row-level change has a pinned snapshot"
            rows = net(con, changed_rows(dataclasses.replace(change, iceberg=source_table), columns, budget))
        with phase("strategy"):
            sides = []
            for side, delta in ((1, rows.added), (2, rows.removed)):
                view = f"__mt_side{side}_{uuid.uuid4().hex[:12]}"
                con.register(view, delta)
                term = duckdb_sql(pin_sources(query, {}, {change.name: view}))
                sides.append((side, view, conformed(con.sql(term).to_arrow_table(), schema)))
            whole = whole_source(source_table, change.pinned, columns, source)
            mass = sum_mass_after(con, ctx, definition, plan, sides[0][1], types, whole)
            changed = pa.concat_tables([partial for _, _, partial in sides])
            if not changed.num_rows:
                return RowsWrite(table, (), 0, None, "", mass)
            touched, scope = touched_partitions(changed, plan.partition_columns)
            current, files = rows_at(table, plan.table_snapshot, touched, budget - rows.read)
            check_readable(current, f"the table {info.name}")
            tagged = [_tagged(conformed(current, schema), 0), *(_tagged(partial, side) for side, _, partial in sides)]
            con.register("__mt_retract", pa.concat_tables(tagged))
            non_null = sums_without_nulls(
                [(names[c.lower()], e) for c, e in plan.query.sums], source_table, change.pinned
            )
            merged = con.sql(duckdb_sql(retract_sql("__mt_retract", keys, retract, non_null)))
            kept = merged.filter(f"NOT {UNSAFE} AND NOT {GONE}").to_arrow_table().select(schema.names)
            unsafe = merged.filter(f"{UNSAFE} AND NOT {GONE}").to_arrow_table().select(keys)
            parts = [conformed(kept, schema)]
            if unsafe.num_rows:
                parts.append(_recomputed(con, query, change.name, whole(), unsafe, keys, schema))
                scope = " · ".join(filter(None, (scope, f"{unsafe.num_rows} group(s) recomputed")))
            result = pa.concat_tables(parts)
    with phase("write"):
        return RowsWrite(table, tuple(write_files(table, result)), result.num_rows, tuple(files), scope, mass)


def _tagged(rows: pa.Table, side: int) -> pa.Table:
    import pyarrow as pa

    return rows.append_column(SIDE_OF, pa.array([side] * rows.num_rows, type=pa.int32()))


def _recomputed(
    con: Any, query: str, source: str, rows: pa.Table, groups: pa.Table, keys: Sequence[str], schema: pa.Schema
) -> pa.Table:
    """The query over the source's ``rows`` at the pinned snapshot, for the ``groups`` (their keys) only: a group
    with no row left there has none. Keys match as GROUP BY matches them (NULL with NULL)."""
    view, wanted = f"__mt_src_{uuid.uuid4().hex[:12]}", f"__mt_groups_{uuid.uuid4().hex[:12]}"
    con.register(view, rows)
    con.register(wanted, groups)
    query_sql = duckdb_sql(pin_sources(query, {}, {source: view}))
    quoted = ['"' + k.replace('"', '""') + '"' for k in keys]
    match = " AND ".join(f"q.{k} IS NOT DISTINCT FROM g.{k}" for k in quoted)
    found = con.sql(f"SELECT q.* FROM ({query_sql}) q WHERE EXISTS (SELECT 1 FROM {wanted} g WHERE {match})")
    return conformed(found.to_arrow_table(), schema)
