"""Updates and deletes of one source, in process (DuckDB over Arrow): the change is read as removed and added rows
(:mod:`.change_rows`, netted), each side run through the query itself, then

* a GROUP BY "merges the signed delta" (:func:`~..strategies.aggregate_retract`) with the same SQL Spark runs
  (:func:`~..strategies.retract_sql`): stored − removed + added; a group left with no rows is dropped; a group
  whose MIN/MAX may have lost its extreme, or whose SUM may have lost every non-NULL value, is recomputed here
  from the pinned source's rows of those groups;
* a projection "applies inserts and deletes" (:func:`~..strategies.apply_changes`): (table ⊎ inserted) ∖ deleted as
  multisets, or only the inserted rows appended when no removed row passed the query.

Every type the in-process gate admits is exact (no floating point), so DuckDB's arithmetic and equality are
Spark's; an overflow raises in DuckDB and Spark runs the refresh.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.rows import rows_at, write_files
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.commit import RowsWrite
from mt_magic.runtime.refresh.context import RefreshContext
from mt_magic.runtime.refresh.incremental.changes import ChangeKind, SourceChange
from mt_magic.runtime.refresh.incremental.in_process import eligibility
from mt_magic.runtime.refresh.incremental.in_process.arrow_sql import (
    conformed,
    connect,
    referenced_columns,
    source_rows,
    sum_mass_after,
    table_types,
    touched_partitions,
    unchanged_sources,
    whole_source,
)
from mt_magic.runtime.refresh.incremental.in_process.change_rows import ChangedRows, changed_rows, net
from mt_magic.runtime.refresh.incremental.in_process.guards import DataNotExact, check_readable
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.refresh.incremental.strategies import (
    GONE,
    SIDE_OF,
    UNSAFE,
    combine_sql,
    retract_sql,
    sums_without_nulls,
)
from mt_magic.runtime.refresh.phases import phase
from mt_magic.sql.query.in_process_gate import READABLE, duckdb_sql
from mt_magic.sql.query.rewrite import pin_sources

if TYPE_CHECKING:
    import pyarrow as pa

    from mt_magic.runtime.refresh.inputs import Refresh  # (imported at run time, it would be a cycle)


def row_level_write(refresh: Refresh, plan: RefreshPlan) -> RowsWrite:
    """The data files of a refresh of one source's row-level change, written but not committed (a join's other
    sources, unchanged, are read whole at their pinned snapshots).

    Raises:
        DataNotExact: the change or the table cannot be read here, or a value does not fit (Spark runs it).
    """
    ctx, info, definition, sources = refresh.ctx, refresh.info, refresh.definition, refresh.sources
    (change,) = [c for c in plan.changes if c.kind is ChangeKind.ROW_LEVEL]  # one (eligibility.in_process_plan)
    source = next(s for s in sources if s.name == change.name)
    if change.iceberg is None:
        change = dataclasses.replace(change, iceberg=ctx.catalog.iceberg_table_of(source))
    table = ctx.catalog.iceberg_table_of(info)
    if any(kind.kind not in READABLE for kind in table_types(table).values()):
        raise DataNotExact("a column's type is not exact in process")
    with phase("deltas"):
        others = unchanged_sources(ctx, definition.expanded_query, plan, sources, change.name)
    read = _Read(ctx, info, definition, plan, source, change, table, others)
    with connect(ctx, definition) as con:
        for view, other in others.values():
            con.register(view, other)
        retracting = plan.strategy is Strategy.AGGREGATE_RETRACT
        extremes = any(kind in ("min", "max") for _, kind in plan.query.retract)
        partials = _Partials(con, read) if retracting and extremes else None
        with phase("deltas"):
            limits = eligibility.IN_PROCESS_MAX_ROWS, eligibility.IN_PROCESS_MAX_SCANNED
            rows = net(con, changed_rows(change, read.columns, *limits, partials.add if partials else None))
        with phase("strategy"):
            if retracting:
                result, replaced, scope, mass = _retracted(con, read, rows, partials)
            else:
                result, replaced, scope, mass = _applied(con, read, rows)
    with phase("write"):
        return RowsWrite(table, tuple(write_files(table, result)), result.num_rows, replaced, scope, mass)


@dataclasses.dataclass(frozen=True)
class _Read:
    """What a row-level refresh reads: the table, its definition and plan, the changed source."""

    ctx: RefreshContext
    info: TableInfo
    definition: MaterializedTableDefinition
    plan: RefreshPlan
    source: TableInfo
    change: SourceChange
    table: Any
    others: dict[str, tuple[str, pa.Table]]
    """A join's unchanged sources by name: (their view on the connection, their rows)."""

    @property
    def query(self) -> str:
        return self.definition.expanded_query

    @property
    def columns(self) -> list[str] | None:
        return referenced_columns(self.query, self.source)

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema().as_arrow()

    def through_query(self, con: Any, rows: pa.Table) -> tuple[str, pa.Table]:
        """The query over ``rows`` in place of the changed source, beside the unchanged others: (the view holding
        ``rows``, the result as the table's columns). Exact for a projection and for an inner join whose other
        side did not change: each changed row meets the same other rows before and after."""
        view = f"__mt_rows_{uuid.uuid4().hex[:12]}"
        con.register(view, rows)
        views = {self.change.name: view, **{name: other for name, (other, _) in self.others.items()}}
        term = duckdb_sql(pin_sources(self.query, {}, views))
        return view, conformed(con.sql(term).to_arrow_table(), self.schema)

    def current(self, changed: pa.Table, read: int) -> tuple[pa.Table, tuple[Any, ...], str]:
        """The table's rows the change may touch (the identity partitions of ``changed``, else all) and their files,
        within what the change left of the in-process bound, and the scope line."""
        touched, scope = touched_partitions(changed, self.plan.partition_columns)
        current, files = rows_at(self.table, self.plan.table_snapshot, touched, eligibility.IN_PROCESS_MAX_ROWS - read)
        check_readable(current, f"the table {self.info.name}")
        return conformed(current, self.schema), tuple(files), scope


Result = tuple["pa.Table", "tuple[Any, ...] | None", str, dict[str, float]]
"""The rows to write, the files they replace (``None``: appended), the scope line, the at-risk sums' mass."""


def _retracted(con: Any, read: _Read, rows: ChangedRows, partials: _Partials | None) -> Result:
    """A GROUP BY's stored groups with the removed rows' partial aggregates subtracted and the added rows' added."""
    import pyarrow as pa

    plan, change, schema = read.plan, read.change, read.schema
    names = {field.name.lower(): field.name for field in schema}
    keys = [names[k.lower()] for k in plan.query.merge_keys]
    retract = [(names[c.lower()], kind) for c, kind in plan.query.retract]
    if set(names) != {k.lower() for k in keys} | {c.lower() for c, _ in retract}:
        raise DataNotExact("a column of the table is neither a grouping key nor a retractable aggregate")
    assert change.pinned is not None, "a row-level change has a pinned snapshot"
    added_view, added = read.through_query(con, rows.added)
    _, removed = read.through_query(con, rows.removed)
    whole = whole_source(change.iceberg, change.pinned, read.columns, read.source)
    mass = sum_mass_after(con, read.ctx, read.definition, plan, added_view, table_types(read.table), whole)
    changed = pa.concat_tables([added, removed])
    if not changed.num_rows:
        return changed, None, "", mass
    current, files, scope = read.current(changed, rows.read)
    con.register("__mt_retract", pa.concat_tables([_tagged(current, 0), _tagged(added, 1), _tagged(removed, 2)]))
    non_null = sums_without_nulls([(names[c.lower()], e) for c, e in plan.query.sums], change.iceberg, change.pinned)
    merged = con.sql(duckdb_sql(retract_sql("__mt_retract", keys, retract, non_null)))
    kept = merged.filter(f"NOT {UNSAFE} AND NOT {GONE}").to_arrow_table().select(schema.names)
    unsafe = merged.filter(f"{UNSAFE} AND NOT {GONE}").to_arrow_table().select(keys)
    parts = [conformed(kept, schema)]
    if unsafe.num_rows and partials is not None and rows.seen:
        others = source_rows(change.iceberg, change.pinned, read.columns, read.source, skipped=rows.seen)
        parts.append(partials.groups(unsafe, others))
        scope = " · ".join(filter(None, (scope, f"{unsafe.num_rows} group(s) recomputed")))
    elif unsafe.num_rows:
        source = source_rows(change.iceberg, change.pinned, read.columns, read.source)
        if isinstance(source, pa.Table):
            parts.append(_recomputed(con, read.query, change.name, source, unsafe, keys, schema))
        else:
            parts.append(_recomputed_by_batch(con, read, source, unsafe, keys))
        scope = " · ".join(filter(None, (scope, f"{unsafe.num_rows} group(s) recomputed")))
    return pa.concat_tables(parts), files, scope, mass


def _applied(con: Any, read: _Read, rows: ChangedRows) -> Result:
    """A projection's table with the removed rows' results taken out and the added rows' put in, as multisets."""
    _, inserted = read.through_query(con, rows.added)
    _, deleted = read.through_query(con, rows.removed)
    if not deleted.num_rows:
        return inserted, None, "", {}
    import pyarrow as pa

    current, files, scope = read.current(pa.concat_tables([inserted, deleted]), rows.read)
    con.register("__mt_kept", pa.concat_tables([current, inserted]))
    con.register("__mt_deleted", deleted)
    result = con.sql("SELECT * FROM __mt_kept EXCEPT ALL SELECT * FROM __mt_deleted").to_arrow_table()
    return conformed(result, read.schema), files, scope, {}


def _tagged(rows: pa.Table, side: int) -> pa.Table:
    import pyarrow as pa

    return rows.append_column(SIDE_OF, pa.array([side] * rows.num_rows, type=pa.int32()))


def _recomputed(
    con: Any, query: str, source: str, rows: pa.Table, groups: pa.Table, keys: Sequence[str], schema: pa.Schema
) -> pa.Table:
    """The query over the source's ``rows`` at the pinned snapshot, for the ``groups`` (their keys) only: a group
    with no row left there has none. Keys match as GROUP BY matches them (NULL with NULL)."""
    return _over_batches(con, query, source, [rows], groups, keys, schema)


def _over_batches(
    con: Any,
    query: str,
    source: str,
    batches: Iterable[pa.Table | pa.RecordBatch],
    groups: pa.Table,
    keys: Sequence[str],
    schema: pa.Schema,
) -> pa.Table:
    """:func:`_recomputed` over each of ``batches`` in turn, the query transpiled once: the results, concatenated."""
    import pyarrow as pa

    view, wanted = f"__mt_src_{uuid.uuid4().hex[:12]}", f"__mt_groups_{uuid.uuid4().hex[:12]}"
    query_sql = duckdb_sql(pin_sources(query, {}, {source: view}))
    found = f"SELECT q.* FROM ({query_sql}) q WHERE {_among(wanted, keys)}"
    con.register(wanted, groups)
    parts = []
    try:
        for batch in batches:
            con.register(view, batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch]))
            parts.append(conformed(con.sql(found).to_arrow_table(), schema))
            con.unregister(view)
    finally:
        con.unregister(wanted)
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _among(groups: str, keys: Sequence[str]) -> str:
    """DuckDB: the row ``q``'s group is one of the relation ``groups``' (keys match as GROUP BY matches them)."""
    quoted = ['"' + k.replace('"', '""') + '"' for k in keys]
    match = " AND ".join(f"q.{k} IS NOT DISTINCT FROM g.{k}" for k in quoted)
    return f"EXISTS (SELECT 1 FROM {groups} g WHERE {match})"


def _recomputed_by_batch(
    con: Any, read: _Read, batches: Iterator[pa.RecordBatch], groups: pa.Table, keys: Sequence[str]
) -> pa.Table:
    """:func:`_recomputed` over a source too large to hold: each record batch's partial aggregates of the
    ``groups``, combined as appends' partials are (:func:`~..strategies.combine_sql`: counts and sums add, minima
    and maxima take theirs), so memory holds one batch and the groups' partials."""
    schema = read.schema
    chunks = _chunks(batches, _chunk_rows())
    parts = _over_batches(con, read.query, read.change.name, chunks, groups, keys, schema)
    view = f"__mt_parts_{uuid.uuid4().hex[:12]}"
    con.register(view, parts)
    try:
        merged = combine_sql(view, read.plan.query.merge_keys, read.plan.query.merge)
        return conformed(con.sql(duckdb_sql(merged)).to_arrow_table(), schema)
    finally:
        con.unregister(view)


class _Partials:
    """The query's partial aggregates of every group over the source's live rows at the pinned snapshot, gathered
    while the change's files stream by (:func:`.change_rows.changed_rows`' ``live``). A spread change reads every
    file for its removed positions anyway: a group that lost its extreme is then recomputed from these partials and
    the files the change did not touch, not from the whole source read a second time."""

    def __init__(self, con: Any, read: _Read) -> None:
        self._con, self._read = con, read
        self._view = f"__mt_live_{uuid.uuid4().hex[:12]}"
        self._sql = duckdb_sql(pin_sources(read.query, {}, {read.change.name: self._view}))
        self._held: list[pa.Table] = []
        self._parts: list[pa.Table] = []

    def add(self, batch: pa.RecordBatch) -> None:
        """Take one batch of live rows; every :func:`_chunk_rows` rows run the query over them."""
        import pyarrow as pa

        self._held.append(pa.Table.from_batches([batch]))
        if sum(t.num_rows for t in self._held) >= _chunk_rows():
            self._flush()

    def groups(self, groups: pa.Table, others: pa.Table | Iterator[pa.RecordBatch]) -> pa.Table:
        """The ``groups`` (their keys) recomputed over the rows taken and ``others`` (the source's rows in the files
        not taken), their partials combined as appends' are (:func:`~..strategies.combine_sql`)."""
        import pyarrow as pa

        for chunk in [others] if isinstance(others, pa.Table) else _chunks(others, _chunk_rows()):
            self._held.append(chunk)
            self._flush()
        self._flush()
        schema = self._read.schema
        names = {field.name.lower(): field.name for field in schema}
        keys = [names[k.lower()] for k in self._read.plan.query.merge_keys]
        partials = pa.concat_tables(self._parts) if self._parts else schema.empty_table()
        view, wanted = f"__mt_parts_{uuid.uuid4().hex[:12]}", f"__mt_groups_{uuid.uuid4().hex[:12]}"
        self._con.register(view, partials)
        self._con.register(wanted, groups)
        try:
            found = self._con.sql(f"SELECT q.* FROM {view} q WHERE {_among(wanted, keys)}").to_arrow_table()
        finally:
            self._con.unregister(view)
            self._con.unregister(wanted)
        return self._combined(conformed(found, schema))

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._held:
            return
        rows = pa.concat_tables([t.cast(self._held[0].schema) for t in self._held])
        self._held = []
        self._con.register(self._view, rows)
        try:
            self._parts.append(conformed(self._con.sql(self._sql).to_arrow_table(), self._read.schema))
        finally:
            self._con.unregister(self._view)
        if len(self._parts) >= 8:  # memory holds about the groups, not one partial per chunk
            self._parts = [self._combined(pa.concat_tables(self._parts))]

    def _combined(self, parts: pa.Table) -> pa.Table:
        view = f"__mt_parts_{uuid.uuid4().hex[:12]}"
        self._con.register(view, parts)
        try:
            merged = combine_sql(view, self._read.plan.query.merge_keys, self._read.plan.query.merge)
            return conformed(self._con.sql(duckdb_sql(merged)).to_arrow_table(), self._read.schema)
        finally:
            self._con.unregister(view)


def _chunk_rows() -> int:
    """Rows run through the query at a time when a source is read batch by batch (a quarter of the in-process
    bound): fewer, larger queries, memory still bounded."""
    return max(1, eligibility.IN_PROCESS_MAX_ROWS // 4)


def _chunks(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """``batches`` gathered into tables of about ``rows`` rows: fewer, larger queries, memory still bounded."""
    import pyarrow as pa

    held: list[pa.RecordBatch] = []
    for batch in batches:
        held.append(batch)
        if sum(b.num_rows for b in held) >= rows:
            yield pa.Table.from_batches(held)
            held = []
    if held:
        yield pa.Table.from_batches(held)
