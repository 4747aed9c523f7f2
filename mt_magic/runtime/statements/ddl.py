"""CREATE / ALTER / DROP of materialized tables: validate with Spark, then change the catalog atomically.

Every check that can fail (sources, temp views, schema inference, casts, keys, formatters, backfill partitions)
runs before the catalog is touched, and each statement then writes one catalog commit (ALTER … AS: the
appended columns with the definition). CREATE is two when there is a primary key (CREATE TABLE, then
identifier fields), undone by dropping the new table; so a failed statement leaves nothing behind. CREATE,
ALTER … AS and DROP also write the table's Iceberg view, ordered and undone with the table (``iceberg_view``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.errors import (
    DefinitionError,
    DependencyError,
    MaterializedTableExistsError,
    MtMagicError,
    NoSuchMaterializedTableError,
    first_line,
)
from mt_magic.runtime.graph import descendants
from mt_magic.runtime.refresh import incremental
from mt_magic.runtime.refresh.context import (
    ENGINE_OPTION,
    ENGINE_VALUES,
    INCREMENTAL_OPTION,
    INCREMENTAL_VALUES,
    MAX_CHANGE_OPTION,
    incremental_option,
    is_strict,
    max_change_fraction,
)
from mt_magic.runtime.refresh.retention import retention_properties
from mt_magic.runtime.refresh.start import check_kept, kept_tag, resolve_start, restart, with_start
from mt_magic.runtime.spark import semantics
from mt_magic.runtime.spark.quoting import identifier, qualified, string_literal
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.statements import schema as schema_rules
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.formatter import formatter_column
from mt_magic.sql.ddl.options import CONVERT_OPTION
from mt_magic.sql.ddl.statements import CreateMaterializedTable, Freshness, StartMode
from mt_magic.sql.names import Position
from mt_magic.sql.query.rewrite import QueryRewriteError, qualify_sources
from mt_magic.vocabulary import RefreshMode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from mt_magic.sql.ddl.freshness import RefreshSchedule


def date_formatters(options: dict[str, str]) -> dict[str, str]:
    """``partition.fields.<col>.date-formatter`` options as column → pattern (the grammar reads the keys)."""
    return {column: value for key, value in options.items() if (column := formatter_column(key)) is not None}


def _resolve_query(ws: Workspace, statement: str, query: str, origin: Position | None) -> tuple[str, tuple[str, ...]]:
    """Qualify the sources, reject temp views and missing tables, and return (expanded query, sources).

    ``origin``: where the query starts in the cell, so a query sqlglot cannot read is refused at its line and
    column."""
    from mt_magic.sql.query.analysis import analyze_query

    facts = analyze_query(query, statement=statement, origin=origin)
    for source in facts.sources:
        if source.catalog is None and source.namespace is None and _is_temp_view(ws.spark, source.name):
            raise DefinitionError(
                f"{statement}: source {source.name} is a temporary view; materialized tables may only read "
                "catalog tables (a refresh in another session could not see it). Write it to an Iceberg table first."
            )
    known = frozenset({ws.catalog.spark_name.lower(), "spark_catalog"})
    try:
        expanded, upstream = qualify_sources(query, ws.catalog.spark_name, ws.default_namespace, known)
    except QueryRewriteError as exc:
        raise DefinitionError(f"{statement}: {exc}") from exc
    for name in upstream:
        if not ws.catalog.exists(name):
            raise DefinitionError(f"{statement}: source table {name} does not exist in the catalog.")
    return expanded, upstream


def _is_temp_view(spark: SparkSession, name: str) -> bool:
    try:
        return bool(spark.catalog.getTable(identifier(name)).isTemporary)
    except Exception:
        return False


def _infer_schema(ws: Workspace, statement: str, query: str) -> StructType:
    try:
        return ws.spark.sql(query).schema
    except Exception as exc:  # AnalysisException and friends: keep Spark's first line, it names the problem
        raise DefinitionError(f"{statement}: Spark cannot analyse the query: {first_line(exc)}") from exc


def _check_schedule(stmt: CreateMaterializedTable, ws: Workspace) -> RefreshSchedule:
    from mt_magic.sql.ddl.freshness import resolve_schedule

    return resolve_schedule(stmt.freshness, stmt.refresh_mode, ws.rules)


def _check_incremental_option(label: str, options: dict[str, str], mode: RefreshMode, expanded: str) -> None:
    """``'incremental' = 'strict'`` is refused up front when no refresh could ever honour it."""
    value = incremental_option(options)
    if value is not None and value not in INCREMENTAL_VALUES:
        raise DefinitionError(
            f"{label}: WITH ('{INCREMENTAL_OPTION}' = '{options[INCREMENTAL_OPTION]}') is not a known value. Use "
            "'auto' (the default: incremental where correct and cheaper), 'always' (incremental wherever correct), "
            "'strict' (fail rather than recompute) or 'never' (always recompute)."
        )
    raw = options.get(MAX_CHANGE_OPTION)
    try:
        fraction = max_change_fraction(options)
    except ValueError:
        fraction = -1.0
    if fraction is not None and not 0 < fraction <= 1:
        raise DefinitionError(
            f"{label}: WITH ('{MAX_CHANGE_OPTION}' = '{raw}') must be a fraction in (0, 1], e.g. '0.3': past it "
            "a full recompute is chosen over an incremental refresh."
        )
    engine = options.get(ENGINE_OPTION)
    if engine is not None and engine.strip().lower() not in ENGINE_VALUES:
        raise DefinitionError(
            f"{label}: WITH ('{ENGINE_OPTION}' = '{engine}') is not a known value. Use 'auto' (the default: small "
            "append-only refreshes of simple queries run in process, without a Spark job) or 'spark' (every "
            "refresh runs on Spark)."
        )
    why = incremental.strict_violation(mode, expanded) if is_strict(options) else None
    if why is not None:
        raise DefinitionError(
            f"{label}: WITH ('{INCREMENTAL_OPTION}' = 'strict') can never be honoured: {why}. Nothing was "
            "created; remove the option, or change the query (`%mt explain` shows what blocks incremental refresh)."
        )


def build_definition(
    ws: Workspace, stmt: CreateMaterializedTable, table: TableInfo | None = None
) -> tuple[MaterializedTableDefinition, StructType]:
    """Validate a CREATE against Spark and the catalog; nothing is written (``table``: the plain table it
    converts)."""
    label = f"CREATE MATERIALIZED TABLE {stmt.name}"
    schedule = _check_schedule(stmt, ws)
    pinned, given = semantics.split_pinned(label, stmt.options_dict)
    settings = semantics.captured_settings(ws.spark, pinned)
    with semantics.applied(label, ws.spark, settings):  # analysed as its refreshes will run it
        expanded, upstream = _resolve_query(ws, label, stmt.query, stmt.query_position)
        expanded = schema_rules.apply_column_list(label, expanded, stmt.columns, _infer_schema(ws, label, expanded))
        schema = _infer_schema(ws, label, expanded)
        schema_rules.check_typed(label, schema)
        start = resolve_start(ws, label, stmt.start_mode, upstream, table)
    options = {k: v for k, v in given.items() if k.lower() != CONVERT_OPTION}
    check_kept(label, start, expanded)
    _check_incremental_option(label, options, schedule.mode, expanded)
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
    )
    return with_start(definition, start), schema


def create_table(ws: Workspace, stmt: CreateMaterializedTable) -> tuple[str, MaterializedTableDefinition]:
    """Create the (empty) Iceberg table with its definition; the first refresh populates it.

    Raises:
        MaterializedTableExistsError: the name is taken (use CREATE OR ALTER to change its query).
        DefinitionError: the statement cannot be applied; nothing was created.
    """
    name = ws.qualify(stmt.name)
    if ws.catalog.exists(name):
        raise MaterializedTableExistsError(
            f"CREATE MATERIALIZED TABLE {stmt.name}: {name} already exists. Use CREATE OR ALTER MATERIALIZED TABLE "
            "to change its query, or DROP MATERIALIZED TABLE first."
        )
    iceberg_view.check_free(ws, f"CREATE MATERIALIZED TABLE {stmt.name}", name)
    definition, schema = build_definition(ws, stmt)
    schema_rules.create_iceberg_table(ws.spark, name, schema, definition, stmt.comment)
    iceberg_view.register(ws, name, definition)
    return name, definition


def alter_query(
    ws: Workspace,
    name: str,
    query: str,
    columns: tuple = (),
    start_mode: StartMode | None = None,
    with_options: Mapping[str, str] | None = None,
    query_position: Position | None = None,
) -> MaterializedTableDefinition:
    """ALTER … AS / CREATE OR ALTER: evolve the schema (nullable columns appended only), store the new query;
    with ``start_mode`` (CREATE OR ALTER … START_MODE) a new start, else new sources start at the stored one.

    The new definition's SQL settings are this session's (``with_options``: CREATE OR ALTER's WITH may pin some;
    its other options are not changed on an existing table), :mod:`~mt_magic.runtime.spark.semantics`.
    """
    label = f"ALTER MATERIALIZED TABLE {name} AS"
    info, current = ws.catalog.load_materialized(name)
    pinned, _ = semantics.split_pinned(label, with_options or {})
    settings = semantics.captured_settings(ws.spark, pinned)
    with semantics.applied(label, ws.spark, settings):  # analysed as its refreshes will run it
        expanded, upstream = _resolve_query(ws, label, query, query_position)
        expanded = schema_rules.apply_column_list(label, expanded, columns, _infer_schema(ws, label, expanded))
        new_schema = _infer_schema(ws, label, expanded)
        schema_rules.check_typed(label, new_schema)
        added = schema_rules.appended_columns(label, ws.spark.table(qualified(name)).schema, new_schema)
        current = restart(ws, label, current, start_mode, upstream, info, expanded)
    _check_incremental_option(label, dict(current.options), current.refresh_mode, expanded)
    reason = incremental.replanned_mode_reason(current.mode_reason, current.refresh_mode, expanded)
    updated = replace(
        current,
        query=query,
        expanded_query=expanded,
        upstream=upstream,
        mode_reason=reason,
        definition_version=current.definition_version + 1,
        sql_settings=settings,
    )
    appended = schema_rules.arrow_columns(added)
    try:  # one commit: the appended columns and the definition that produces them, or neither (view: undone)
        with iceberg_view.defining(ws, label, name, updated, appended):
            ws.catalog.update_properties(name, updated.to_properties(), appended, kept_tag(updated))
    except (TypeError, ValueError, NotImplementedError) as exc:  # a type Arrow or Iceberg cannot hold
        raise DefinitionError(
            f"{label}: the new column(s) {', '.join(f'{f.name} {f.dataType.simpleString()}' for f in added)} "
            f"cannot be stored in an Iceberg table ({exc}). Nothing changed; cast them, e.g. CAST(NULL AS STRING)."
        ) from exc
    return updated


def update_definition(
    ws: Workspace, name: str, extra: Mapping[str, str] | None = None, **changes: object
) -> MaterializedTableDefinition:
    """Persist changed fields of the definition (suspended flag, freshness, …), and ``extra`` table
    properties, in one commit."""
    _, current = ws.catalog.load_materialized(name)
    updated = replace(current, **changes)  # type: ignore[arg-type]
    ws.catalog.update_properties(name, {**updated.to_properties(), **(extra or {})})
    return updated


def resume(ws: Workspace, name: str, options: Mapping[str, str]) -> MaterializedTableDefinition:
    """``ALTER … RESUME [WITH (…)]``: clear the suspended flag, after checking that no option changes one of the
    table's recorded answer-changing settings.

    Raises:
        DefinitionError: an option gives a recorded setting another value; nothing changed.
    """
    _, current = ws.catalog.load_materialized(name)
    semantics.refuse_conflicts(f"ALTER MATERIALIZED TABLE {name} RESUME WITH", current.sql_settings, options)
    return update_definition(ws, name, suspended=False)


def change_freshness(ws: Workspace, name: str, freshness: Freshness) -> MaterializedTableDefinition:
    """New freshness; the refresh mode stays as it is (Flink keeps the mode of an existing table). The
    snapshot-retention policy follows the new freshness unless WITH set it."""
    from mt_magic.sql.ddl.freshness import resolve_schedule

    _, current = ws.catalog.load_materialized(name)
    schedule = resolve_schedule(freshness, current.refresh_mode, ws.rules)
    retention = retention_properties(freshness.to_timedelta(), current.options)
    return update_definition(
        ws,
        name,
        retention,
        freshness=schedule.freshness.sql(),
        cron=schedule.cron or "",
        interval=freshness.to_timedelta(),
    )


def check_partition(ws: Workspace, name: str, partition: tuple[tuple[str, str], ...]) -> None:
    """A backfill's ``PARTITION (k = 'v', …)`` must name partition columns of the table (checked before the
    manager hears of it: a refresh that could only fail would change the table's status and failure count).

    Raises:
        DefinitionError: a key is not a partition column; the message lists the table's partition columns.
    """
    if not partition:
        return
    _, definition = ws.catalog.load_materialized(name)
    columns = {c.lower() for c in definition.partitioned_by}
    unknown = [key for key, _ in partition if key.lower() not in columns]
    if unknown:
        spec = ", ".join(f"{k} = {string_literal(v)}" for k, v in partition)
        raise DefinitionError(
            f"ALTER MATERIALIZED TABLE {name} REFRESH PARTITION ({spec}): {name} is not partitioned by "
            f"{', '.join(unknown)} (PARTITIONED BY {', '.join(definition.partitioned_by) or 'nothing'}). Name its "
            "partition columns, or refresh the whole table without PARTITION."
        )


def change_refresh_mode(ws: Workspace, name: str, mode: RefreshMode) -> MaterializedTableDefinition:
    """``SET REFRESH_MODE``: a new schedule from the same freshness, taking over from the last committed
    refresh state (a CONTINUOUS table continues incrementally from the snapshots the last refresh consumed).

    Raises:
        FreshnessError: the freshness cannot be a FULL-mode schedule (the message says which would).
        DefinitionError: ``'incremental' = 'strict'`` forbids FULL mode.
    """
    from mt_magic.sql.ddl.freshness import resolve_schedule
    from mt_magic.sql.ddl.parser import parse_interval

    label = f"ALTER MATERIALIZED TABLE {name} SET REFRESH_MODE = {mode.value}"
    _, current = ws.catalog.load_materialized(name)
    try:
        schedule = resolve_schedule(parse_interval(current.freshness), mode, ws.rules)
    except MtMagicError as exc:
        raise DefinitionError(f"{label}: {exc}") from exc
    _check_incremental_option(label, dict(current.options), mode, current.expanded_query)
    reason = incremental.mode_reason(schedule.reason, mode, current.expanded_query)
    return update_definition(
        ws, name, refresh_mode=mode, declared_refresh_mode=mode, cron=schedule.cron or "", mode_reason=reason
    )


def plan_drop(ws: Workspace, name: str, if_exists: bool, cascade: bool) -> list[str]:
    """What a DROP would remove, dependents first; checks everything and changes nothing.

    Returns:
        The tables to drop in order (empty: ``IF EXISTS`` on a missing table).

    Raises:
        NoSuchMaterializedTableError: no such materialized table (and no ``IF EXISTS``).
        DefinitionError: it is a plain Iceberg table.
        DependencyError: other materialized tables read it and ``cascade`` was not given.
    """
    upstream = {i.name: i.definition.upstream for i in ws.catalog.list_materialized() if i.definition}
    if name not in upstream:
        if ws.catalog.exists(name):
            raise DefinitionError(f"DROP MATERIALIZED TABLE {name}: it is a plain Iceberg table; use DROP TABLE.")
        if if_exists:
            return []
        raise NoSuchMaterializedTableError(
            f"DROP MATERIALIZED TABLE {name}: no such materialized table. Use DROP MATERIALIZED TABLE IF EXISTS."
        )
    dependents = descendants(name, upstream)
    if dependents and not cascade:
        raise DependencyError(
            f"DROP MATERIALIZED TABLE {name}: {', '.join(dependents)} read(s) it. Drop those first, or use "
            "`%%materialized --cascade` to drop them too."
        )
    return [*reversed(dependents), name]


def drop_tables(ws: Workspace, victims: list[str]) -> list[str]:
    """Drop (and purge) ``victims`` and their views in order; returns those dropped before any failure re-raises."""
    dropped: list[str] = []
    for victim in victims:
        iceberg_view.drop_with_view(ws, victim)
        dropped.append(victim)
    return dropped
