"""A definition checked against Spark and the catalog before anything is written: the query's sources (no temp
views, no missing tables), its schema as Spark infers it under the recorded SQL settings, the schedule, the
incremental options; :func:`build_definition` is what CREATE and CREATE OR ALTER (converting too) store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.errors import DefinitionError, MtMagicError
from mt_magic.options import CONVERT, ENGINE, INCREMENTAL, MAX_CHANGE
from mt_magic.runtime.refresh import incremental
from mt_magic.runtime.refresh.context import is_strict
from mt_magic.runtime.refresh.incremental.row_identity import storage_query
from mt_magic.runtime.refresh.start import check_kept, resolve_start, with_start
from mt_magic.runtime.spark import semantics
from mt_magic.runtime.spark.quoting import is_temp_view
from mt_magic.runtime.statements import schema as schema_rules
from mt_magic.runtime.statements.expectations import check_expectations, with_dropped_rows
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.formatter import formatter_column
from mt_magic.sql.ddl.statements import CreateMaterializedTable
from mt_magic.sql.names import Position
from mt_magic.sql.query.parsed import ParsedQuery, Q, parse_query, text_of
from mt_magic.sql.query.rewrite import QueryRewriteError, qualify_sources
from mt_magic.vocabulary import RefreshMode

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from mt_magic.sql.ddl.freshness import RefreshSchedule


Sources = tuple[ParsedQuery, tuple[str, ...]]
"""A query with its sources qualified, and those sources (:func:`qualified_sources` of the parsed query)."""


def date_formatters(options: dict[str, str]) -> dict[str, str]:
    """``partition.fields.<col>.date-formatter`` options as column → pattern (the grammar reads the keys)."""
    return {column: value for key, value in options.items() if (column := formatter_column(key)) is not None}


def resolve_query(ws: Workspace, statement: str, query: str, origin: Position | None) -> tuple[str, tuple[str, ...]]:
    """Qualify the sources, reject temp views and missing tables, and return (expanded query, sources): the text of
    :func:`resolve_parsed`'s query (which this process remembers, so the rules it is handed to parse nothing)."""
    expanded, upstream = resolve_parsed(ws, statement, query, origin)
    return expanded.text, upstream


def resolve_parsed(
    ws: Workspace, statement: str, query: str, origin: Position | None, sources: Sources | None = None
) -> Sources:
    """Parse the query once, qualify its sources, reject temp views and missing tables, and return (expanded query,
    sources).

    ``origin``: where the query starts in the cell, so a query sqlglot cannot read is refused at its line and
    column. ``sources``: the query already qualified (:func:`create_sources`), not qualified again."""
    from mt_magic.sql.query.analysis import analyze_query

    parsed = parse_query(query, statement=statement, origin=origin)
    facts = analyze_query(parsed)
    for source in facts.sources:
        if source.catalog is None and source.namespace is None and is_temp_view(ws.spark, source.name):
            raise DefinitionError(
                f"source {source.name} is a temporary view; materialized tables may only read catalog tables (a "
                "refresh in another session could not see it)",
                statement=statement,
                position=_where(query, source.name, origin),
                fix="write it to an Iceberg table first, and read that",
            )
    expanded, upstream = sources or qualified_sources(ws, statement, parsed)
    for name in upstream:
        if not ws.catalog.exists(name):
            near, fix = missing_name(ws, name)
            raise DefinitionError(
                f"source table {name} does not exist in the catalog",
                statement=statement,
                position=_where(query, name.rsplit(".", 1)[-1], origin),
                did_you_mean=near,
                fix=fix,
            )
    return expanded, upstream


def _where(written: str, name: str, origin: Position | None) -> Position | None:
    """The cell's line and column of the first ``name`` (one identifier) in the query as written (``None`` without
    ``origin``: a query that is not in a cell has no line and column to show)."""
    from mt_magic.runtime.spark.analysis_errors import offset_in
    from mt_magic.sql.ddl.lexing import Source

    offset = None if origin is None else offset_in(written, name, 0)
    return None if offset is None else Source(written).position(offset).inside(origin)


def qualified_sources(ws: Workspace, statement: str, query: Q) -> tuple[Q, tuple[str, ...]]:
    """(the query with every source fully qualified, the sources), resolved as statements resolve names; whether
    the sources exist is not checked here.

    Raises:
        DefinitionError: a source name cannot be qualified.
    """
    known = frozenset({ws.catalog.spark_name.lower(), "spark_catalog"})
    try:
        return qualify_sources(query, ws.catalog.spark_name, ws.default_namespace, known)
    except QueryRewriteError as exc:  # what and how (a name part, or sqlglot's reading), said by the statement
        raise DefinitionError(exc.problem, statement=statement or None, offending=exc.offending, fix=exc.fix) from exc


def create_sources(ws: Workspace, stmt: CreateMaterializedTable) -> Sources | None:
    """A CREATE's query parsed and its sources qualified, once per statement: what its grant check, its cell's
    check and :func:`build_definition` read (``None``: a query that cannot be read or qualified, refused by
    :func:`build_definition` at its place in the cell)."""
    label = f"CREATE MATERIALIZED TABLE {stmt.name}"
    try:
        parsed = parse_query(stmt.query, statement=label, origin=stmt.query_position)
        return qualified_sources(ws, label, parsed)
    except MtMagicError:
        return None


def missing_name(ws: Workspace, name: str) -> tuple[tuple[str, ...], str | None]:
    """(did you mean, Fix) of a table name that is not in the catalog: the closest name of its namespace, or how to
    list them."""
    namespace = name.rsplit(".", 1)[0]
    near = ws.catalog.closest_to(name)
    if near:
        return (near[0],), None
    return (), f"check the name; SHOW TABLES IN {namespace} lists the tables there (unqualified names are in it)"


def missing_fix(ws: Workspace, name: str) -> str:
    """The formatter's ``Fix: …`` of :func:`missing_name`, for a message that adds text after it (the service's)."""
    near, fix = missing_name(ws, name)
    return DefinitionError(fix=None if near else fix, did_you_mean=near).fix_line()


def infer_schema(
    ws: Workspace, statement: str, query: str, written: str | None = None, origin: Position | None = None
) -> StructType:
    """The schema Spark infers for ``query``. ``written``: the query as the user wrote it, starting at ``origin`` of
    the cell (``query`` is its rewrite), so a refusal says where in the cell the problem is."""
    try:
        return ws.spark.sql(query).schema
    except Exception as exc:  # AnalysisException and friends
        raise analysis_error(ws, statement, exc, query, written, origin) from exc


def analysis_error(
    ws: Workspace, statement: str, exc: BaseException, query: str, written: str | None, origin: Position | None
) -> DefinitionError:
    """Spark's refusal of ``query`` as the statement's error: the cell's line and column of the token Spark points
    at (found again in ``written``), Spark's problem without its plan, and a Fix."""
    from mt_magic.runtime.spark.analysis_errors import placed_refusal

    refusal = placed_refusal(exc, query, written, origin, ws.spark)
    return DefinitionError(
        f"Spark cannot analyse the query: {refusal.problem}",
        statement=statement,
        position=refusal.position,
        fix=refusal.fix,
    )


def with_row_identity(ws: Workspace, label: str, expanded: Q, keep: int = 0, hide: bool = True) -> tuple[Q, StructType]:
    """The query a new definition stores and its schema: ``expanded`` with the hidden key columns its
    incremental refreshes need (:mod:`~mt_magic.runtime.refresh.incremental.row_identity`; ``keep``: the hidden
    columns the table has), after refusing user columns named with their reserved prefix. ``hide=False``
    (converting a plain table, whose columns stay as they are) adds none; nor does a storage query Spark cannot
    analyse (the user's query is kept, and recomputes as before)."""
    schema = infer_schema(ws, label, text_of(expanded))
    schema_rules.check_column_names(label, schema)
    stored = storage_query(expanded, keep) if hide else expanded
    if text_of(stored) == text_of(expanded):
        return expanded, schema
    try:
        return stored, infer_schema(ws, label, text_of(stored))
    except DefinitionError:
        return expanded, schema


def check_schedule(stmt: CreateMaterializedTable, ws: Workspace) -> RefreshSchedule:
    from mt_magic.sql.ddl.freshness import resolve_schedule

    return resolve_schedule(stmt.freshness, stmt.refresh_mode, ws.rules)


def check_incremental_option(label: str, options: dict[str, str], mode: RefreshMode, expanded: str) -> None:
    """The incremental options' values (the registry's check, again for definitions the grammar did not read),
    and ``'incremental' = 'strict'`` refused up front when no refresh could ever honour it."""
    for declared in (INCREMENTAL, MAX_CHANGE, ENGINE):
        value = declared.raw(options)
        problem = None if value is None else declared.check(value)
        if problem is not None:
            raise DefinitionError(
                problem.describe(), statement=label, fix=problem.fix, did_you_mean=problem.did_you_mean
            )
    why = incremental.strict_violation(mode, expanded) if is_strict(options) else None
    if why is not None:
        raise DefinitionError(
            f"WITH ('{INCREMENTAL.key}' = 'strict') can never be honoured: {why}. Nothing was created",
            statement=label,
            fix="remove the option, or change the query (`%mt explain` shows what blocks incremental refresh)",
        )


BuiltDefinition = tuple[MaterializedTableDefinition, "StructType"]
"""A CREATE's definition and the new table's schema, validated and not written (:func:`build_definition`)."""


def build_definition(
    ws: Workspace, stmt: CreateMaterializedTable, table: TableInfo | None = None, sources: Sources | None = None
) -> BuiltDefinition:
    """Validate a CREATE against Spark and the catalog; nothing is written (``table``: the plain table it
    converts; ``sources``: its query as its check qualified it, :func:`create_sources`)."""
    label = f"CREATE MATERIALIZED TABLE {stmt.name}"
    schedule = check_schedule(stmt, ws)
    pinned, given = semantics.split_pinned(label, stmt.options_dict)
    settings = semantics.captured_settings(ws.spark, pinned)
    with semantics.applied(label, ws.spark, settings):  # analysed as its refreshes will run it
        parsed, upstream = resolve_parsed(ws, label, stmt.query, stmt.query_position, sources)  # the one parse
        inferred = infer_schema(ws, label, parsed.text, stmt.query, stmt.query_position)
        parsed = schema_rules.apply_column_list(label, parsed, stmt.columns, inferred)
        parsed, schema = with_row_identity(ws, label, parsed, hide=table is None)
        schema_rules.check_typed(label, schema)
        check_expectations(ws, label, parsed.text, stmt.expectations)
        parsed = with_dropped_rows(parsed, stmt.expectations)
        start = resolve_start(ws, label, stmt.start_mode, upstream, table)
    expanded = parsed.text  # the rules below read it by its text, which this process remembers with its tree
    options = {k: v for k, v in given.items() if k.lower() != CONVERT.key}
    check_kept(label, start, expanded)
    check_incremental_option(label, options, schedule.mode, expanded)
    formatters = date_formatters(options)
    buckets = stmt.distribution
    schema_rules.check_keys(
        label, schema, stmt.primary_key, stmt.partitioned_by, formatters, buckets.columns if buckets else ()
    )
    definition = MaterializedTableDefinition(
        query=stmt.query,
        expanded_query=expanded,
        freshness=schedule.freshness.sql(),
        interval=schedule.freshness.to_timedelta(),
        refresh_mode=schedule.mode,
        declared_refresh_mode=stmt.refresh_mode,
        mode_reason=incremental.mode_reason(schedule.reason, schedule.mode, expanded),
        cron=schedule.cron or "",
        options=options,
        date_formatters=formatters,
        upstream=upstream,
        primary_key=stmt.primary_key.columns if stmt.primary_key else (),
        partitioned_by=stmt.partitioned_by,
        bucket_columns=buckets.columns if buckets else (),
        buckets=buckets.buckets if buckets else 0,
        sql_settings=settings,
        expectations=stmt.expectations,
    )
    return with_start(definition, start), schema
