"""Arrow tables through DuckDB as the table's columns: the helpers every in-process strategy shares — the columns a
query reads, the result conformed to the table's types, the identity partitions a result touches, DuckDB in the
table's time zone, a source read whole, and the at-risk sums' mass."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.context import RefreshContext
from mt_magic.runtime.refresh.incremental.delta import delta_terms
from mt_magic.runtime.refresh.incremental.in_process import eligibility
from mt_magic.runtime.refresh.incremental.in_process.guards import DataNotExact, check_readable
from mt_magic.runtime.refresh.incremental.planner import RefreshPlan
from mt_magic.runtime.refresh.incremental.strategies import SCOPED_MAX_VALUES, scope_line
from mt_magic.sql.query.in_process_gate import SparkType, column_names, duckdb_sql, iceberg_type
from mt_magic.sql.query.rewrite import pin_sources

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression


def conformed(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` as the table's columns: by name (case-insensitively), in table order, cast safely (an overflow
    raises rather than wraps), then fully validated (a decimal past its precision, text that is not UTF-8)."""
    import pyarrow as pa

    by_name = {name.lower(): index for index, name in enumerate(rows.column_names)}
    columns = []
    for field in schema:
        index = by_name.get(field.name.lower())
        if index is None:
            raise DataNotExact(f"the result has no column {field.name}")
        columns.append(rows.column(index).cast(field.type))
    conformed = pa.Table.from_arrays(columns, schema=schema)
    check_readable(conformed, "the result")
    return conformed


def referenced_columns(query: str, source: TableInfo) -> list[str] | None:
    """The source columns the query reads (``None``: all of them, for a ``*``)."""
    names = column_names(query)
    if names is None:
        return None
    columns = [name for name, _, _ in source.columns if name.lower() in names]
    return columns or [source.columns[0][0]]  # count(*) alone still needs the rows


def touched_partitions(rows: pa.Table, columns: Sequence[str]) -> tuple[BooleanExpression | None, str]:
    """A pyiceberg filter selecting the identity partitions ``rows`` fall in, and the scope line ("partitions ds
    (2 value(s))"); ``(None, "")`` when the merge is not scoped or touches more than
    :data:`~.strategies.SCOPED_MAX_VALUES` partitions (the whole table is read and rewritten then).

    ``columns`` (:attr:`.planner.RefreshPlan.partition_columns`) are among the merge keys, so a group lies in
    one partition and merging the touched partitions' rows with the delta's groups is the whole change.
    """
    from pyiceberg import expressions
    from pyiceberg.expressions import And, Or

    made: Any = expressions  # 0.10 and 0.12 type IsNull/EqualTo's arguments apart; both take (name, value) when run

    if not columns:
        return None, ""
    by_name = {name.lower(): name for name in rows.column_names}
    names = [by_name[c.lower()] for c in columns]
    touched = set(zip(*(rows.column(name).to_pylist() for name in names), strict=True))
    if len(touched) > SCOPED_MAX_VALUES:
        return None, ""

    def cell(name: str, value: Any) -> BooleanExpression:
        return made.IsNull(name) if value is None else made.EqualTo(name, value)

    def both(left: BooleanExpression, right: BooleanExpression) -> BooleanExpression:
        return And(left, right)

    def either(left: BooleanExpression, right: BooleanExpression) -> BooleanExpression:
        return Or(left, right)

    terms = [reduce(both, [cell(n, v) for n, v in zip(names, values, strict=True)]) for values in touched]
    counts = {n: len({values[i] for values in touched}) for i, n in enumerate(names)}
    return reduce(either, terms), scope_line(counts)


def time_zone(settings: Mapping[str, str] | None, session_conf: Mapping[str, str]) -> str:
    """The zone the table's query runs in (its recorded setting, else the product's session): DuckDB's too (the gate
    lets ``date_trunc`` through only when the recorded zone is UTC)."""
    zone = eligibility.TIME_ZONE
    return (settings or {}).get(zone) or session_conf.get(zone) or "UTC"


def table_types(table: Any) -> dict[str, SparkType]:
    """A pyiceberg table's columns (lower case) and their Spark types."""
    return {f.name.lower(): iceberg_type(str(f.field_type)) for f in table.schema().fields}


def connect(ctx: RefreshContext, definition: MaterializedTableDefinition) -> Any:
    """A DuckDB connection in the table's time zone (:func:`time_zone`); use it as a context manager."""
    import duckdb

    con = duckdb.connect()
    set_time_zone(con, time_zone(definition.sql_settings, ctx.jobs.session_conf))
    return con


def set_time_zone(con: Any, zone: str) -> None:
    """DuckDB's zone as the table's, where DuckDB knows it (Spark also takes offsets such as ``+05:30``, UTC's
    ``+00:00`` included: DuckDB runs in UTC then)."""
    import duckdb

    try:
        con.execute("SET TimeZone = '" + zone.replace("'", "") + "'")
    except duckdb.Error:
        con.execute("SET TimeZone = 'UTC'")


def whole_source(
    source_table: Any, snapshot: int, columns: Sequence[str] | None, info: TableInfo
) -> Callable[[], pa.Table]:
    """Reads every row of the source at ``snapshot`` (within :data:`~.eligibility.IN_PROCESS_MAX_ROWS`) when
    called."""
    from mt_magic.catalog.rows import appended_rows
    from mt_magic.runtime.refresh.incremental.planner import total_records

    def read() -> pa.Table:
        held = total_records(info)
        if held is None or held > eligibility.IN_PROCESS_MAX_ROWS:
            raise DataNotExact(f"no mass recorded for a sum yet, and {info.name} is too large to probe in process")
        rows = appended_rows(source_table, None, snapshot, columns)
        check_readable(rows, f"the source {info.name}")
        return rows

    return read


def source_rows(
    source_table: Any, snapshot: int, columns: Sequence[str] | None, info: TableInfo, skipped: Iterable[str] = ()
) -> pa.Table | Iterator[pa.RecordBatch]:
    """Every row of the source at ``snapshot``: held (:func:`whole_source`) within
    :data:`~.eligibility.IN_PROCESS_MAX_ROWS`, else record batch by batch
    (:func:`~mt_magic.catalog.rows.streamed_rows`) within :data:`~.eligibility.IN_PROCESS_MAX_SCANNED`; batch by
    batch too when the caller has read some data files already (their paths ``skipped``: left out).

    Raises:
        DataNotExact: its row count is not recorded, or it holds more rows than both bounds.
    """
    from mt_magic.catalog.rows import streamed_rows
    from mt_magic.runtime.refresh.incremental.planner import total_records

    held = total_records(info)
    left_out = frozenset(skipped)
    if held is not None and held <= eligibility.IN_PROCESS_MAX_ROWS and not left_out:
        return whole_source(source_table, snapshot, columns, info)()
    if held is None or held > eligibility.IN_PROCESS_MAX_SCANNED:
        raise DataNotExact(f"{info.name} is too large to scan in process")
    return streamed_rows(source_table, snapshot, columns, left_out)


def sum_mass_after(
    con: Any,
    ctx: RefreshContext,
    definition: MaterializedTableDefinition,
    plan: RefreshPlan,
    view: str,
    types: Mapping[str, SparkType],
    whole: Callable[[], pa.Table],
) -> dict[str, float]:
    """The at-risk sums' mass after the delta in ``view`` (:mod:`..sum_mass`): the recorded mass plus the delta's,
    or (none recorded: the first merge after any other refresh) the probe over every row of the source (``whole``).

    Raises:
        DataNotExact: a sum's mass reaches its bound (Spark recomputes the touched groups in its own order of
            adding), or no mass is recorded and the source is too large to read here.
    """
    from mt_magic.runtime.refresh.incremental import sum_mass

    def settings() -> Iterator[Mapping[str, str] | None]:
        yield definition.sql_settings
        yield ctx.jobs.session_conf
        yield {sum_mass.ANSI: str(ctx.jobs.spark.conf.get(sum_mass.ANSI))}

    ansi = sum_mass.ansi_mode(*settings())
    names = {name: str(kind) for name, kind in types.items()}

    def probe(sql: str) -> list[float]:
        found = next(iter(con.sql(duckdb_sql(sql)).limit(1).fetchall()), None)  # DuckDB 2 has no fetchone() here
        return [float(v or 0.0) for v in found or ()]

    def over_delta(query: str) -> list[float]:
        (term,) = delta_terms(query, plan.changes, {plan.changes[0].name: view})
        return probe(term)

    def over_all(query: str) -> list[float]:
        everything = f"__mt_all_{uuid.uuid4().hex[:12]}"
        con.register(everything, whole())
        return probe(pin_sources(query, {}, {plan.changes[0].name: everything}))

    mass, past = sum_mass.after_delta(
        definition.expanded_query, plan.query.sums, plan.sum_mass, names, ansi, over_delta, over_all
    )
    if past:
        raise DataNotExact(f"the sum {past[0]}'s inputs reach its type's bound: Spark recomputes its groups")
    return mass


def unchanged_sources(
    ctx: RefreshContext, query: str, plan: RefreshPlan, sources: Sequence[TableInfo], changed: str
) -> dict[str, tuple[str, pa.Table]]:
    """A join's other tables, read whole at their pinned snapshots (which hold the rows of the consumed ones:
    :func:`.eligibility.in_process_plan` admits only unchanged ones beside the ``changed`` source), by source name:
    (view, rows). Refusing text that is not UTF-8 here keeps Spark's answer: where such text gave a file a STRING
    bound holding U+FFFD, Spark's pushed filter skips the file that a whole read would join (issue 46,
    ``test_text_bounds.py``)."""
    from mt_magic.catalog.rows import appended_rows

    found: dict[str, tuple[str, pa.Table]] = {}
    for change in plan.changes:
        if change.name == changed:
            continue
        info = next(s for s in sources if s.name == change.name)
        if change.pinned is None:
            raise DataNotExact(f"the source {change.name} has no snapshot")
        table = ctx.catalog.iceberg_table_of(info)
        rows = appended_rows(table, None, change.pinned, referenced_columns(query, info))
        check_readable(rows, f"the source {change.name}")
        found[change.name] = (f"__mt_src_{uuid.uuid4().hex[:12]}", rows)
    return found
