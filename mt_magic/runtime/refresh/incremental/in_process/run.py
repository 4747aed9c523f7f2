"""One refresh in process: read the delta (and for a merge the table) with pyiceberg, run the strategy's own SQL
on DuckDB, check the data (:mod:`.guards`), write the data files — everything but the catalog commit, which
:func:`mt_magic.runtime.refresh.commit.commit` does. Appends run here; updates and deletes of a GROUP BY's source
in :mod:`.row_level`. Any failure here returns ``None``: the refresh runs on Spark."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from mt_magic.runtime.refresh.commit import RowsWrite
from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.in_process import eligibility
from mt_magic.runtime.refresh.incremental.in_process.arrow_sql import (
    conformed,
    connect,
    referenced_columns,
    sum_mass_after,
    table_types,
    touched_partitions,
    unchanged_sources,
    whole_source,
)
from mt_magic.runtime.refresh.incremental.in_process.guards import check_readable
from mt_magic.runtime.refresh.incremental.in_process.row_level import row_level_write
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.incremental.strategies import combine_sql
from mt_magic.runtime.refresh.phases import phase
from mt_magic.sql.query.in_process_gate import duckdb_sql
from mt_magic.sql.query.rewrite import pin_sources

if TYPE_CHECKING:
    from mt_magic.runtime.refresh.inputs import Refresh  # (imported at run time, it would be a cycle)

log = logging.getLogger(__name__)


def in_process_write(refresh: Refresh, plan: RefreshPlan) -> RowsWrite | None:
    """The data files of an eligible refresh (:func:`.eligibility.in_process_plan`), computed and written without
    Spark but not committed; ``None`` when they could not be — for any reason, data the engines do not hold alike
    included (the refresh then runs on Spark; no snapshot was committed). The table and its sources are read
    through their metadata as the refresh loaded it at its start, not loaded again."""
    try:
        if any(c.kind is ChangeKind.ROW_LEVEL for c in plan.changes):
            return row_level_write(refresh, plan)
        return _write(refresh, plan)
    except Exception as exc:  # the accelerator never fails a refresh: Spark runs it
        log.info("refresh of %s runs on Spark: in process it failed before the commit: %s", refresh.table, exc)
        return None


def _write(refresh: Refresh, plan: RefreshPlan) -> RowsWrite:
    from mt_magic.catalog.rows import appended_rows, rows_at, write_files

    ctx, info, definition, sources = refresh.ctx, refresh.info, refresh.definition, refresh.sources
    change = next(c for c in plan.changes if c.kind is ChangeKind.APPENDS)
    source = next(s for s in sources if s.name == change.name)
    view = f"__mt_ins_{uuid.uuid4().hex[:12]}"
    with phase("deltas"):
        source_table = ctx.catalog.iceberg_table_of(source)
        assert change.pinned is not None, "an append change has a pinned snapshot"
        columns = referenced_columns(definition.expanded_query, source)
        delta = appended_rows(source_table, change.consumed, change.pinned, columns)
        check_readable(delta, f"the delta of {change.name}")
        others = unchanged_sources(ctx, definition.expanded_query, plan, sources, change.name)
    with phase("strategy"):
        table = ctx.catalog.iceberg_table_of(info)
        schema = table.schema().as_arrow()
        types = table_types(table)
        views = {change.name: view, **{name: other_view for name, (other_view, _) in others.items()}}
        term = pin_sources(definition.expanded_query, {}, views)
        with connect(ctx, definition) as con:
            con.register(view, delta)
            for other_view, rows in others.values():
                con.register(other_view, rows)
            partial = conformed(con.sql(duckdb_sql(term)).to_arrow_table(), schema)
            replaced: tuple[Any, ...] | None = None
            scope, rows = "", partial
            mass: dict[str, float] = {}
            if plan.strategy is Strategy.AGGREGATE_MERGE:
                whole = whole_source(source_table, change.pinned, columns, source)
                mass = sum_mass_after(con, ctx, definition, plan, view, types, whole)
            if plan.strategy is Strategy.AGGREGATE_MERGE and partial.num_rows:
                touched, scope = touched_partitions(partial, plan.partition_columns)
                max_rows = eligibility.IN_PROCESS_MAX_ROWS - delta.num_rows
                current, files = rows_at(table, plan.table_snapshot, touched, max_rows)
                check_readable(current, f"the table {info.name}")
                con.register("__mt_current", current)
                con.register("__mt_partial", partial)
                merged = combine_sql(
                    "(SELECT * FROM __mt_current UNION ALL SELECT * FROM __mt_partial)",
                    plan.query.merge_keys,
                    plan.query.merge,
                )
                rows, replaced = conformed(con.sql(duckdb_sql(merged)).to_arrow_table(), schema), tuple(files)
    with phase("write"):
        return RowsWrite(table, tuple(write_files(table, rows)), rows.num_rows, replaced, scope, mass)
