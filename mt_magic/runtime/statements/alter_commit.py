"""What each ALTER (:mod:`.alter`) and CREATE OR ALTER over a materialized table writes to the catalog: the new
definition decided and checked first, writing nothing (``altered_query``, ``created_over``, ``constrained``,
``freshened``, ``remoded``, ``resumed``: what ``%mt explain`` previews, :mod:`.change`), then one catalog commit
(ALTER … AS: the appended columns with the definition), its Iceberg view version ordered and undone with it
(``iceberg_view``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.errors import (
    DefinitionError,
    MtMagicError,
    closest_names,
)
from mt_magic.runtime.refresh import incremental
from mt_magic.runtime.refresh.audit import without_dropped_rows
from mt_magic.runtime.refresh.retention import retention_properties
from mt_magic.runtime.refresh.start import kept_tag, restart
from mt_magic.runtime.spark import semantics
from mt_magic.runtime.spark.quoting import qualified, string_literal
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.statements import schema as schema_rules
from mt_magic.runtime.statements.definition import (
    check_incremental_option,
    infer_schema,
    resolve_query,
    with_row_identity,
)
from mt_magic.runtime.statements.expectations import check_expectations, with_dropped_rows
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.statements import CreateMaterializedTable, Freshness, StartMode
from mt_magic.sql.names import Position
from mt_magic.sql.query.parsed import text_of
from mt_magic.vocabulary import Expectation, RefreshMode

if TYPE_CHECKING:
    from pyspark.sql.types import StructField

    from mt_magic.catalog.tables import TableInfo


@dataclass(frozen=True)
class AlteredQuery:
    """What ALTER … AS / CREATE OR ALTER would commit (:func:`altered_query`): the table, its new definition and
    the columns appended to its schema. Deciding it writes nothing, so ``%mt explain`` previews exactly what
    :func:`alter_query` writes."""

    name: str
    definition: MaterializedTableDefinition
    added: tuple[StructField, ...]


def altered_query(
    ws: Workspace,
    name: str,
    query: str,
    columns: tuple = (),
    start_mode: StartMode | None = None,
    with_options: Mapping[str, str] | None = None,
    query_position: Position | None = None,
    options: Mapping[str, str] | None = None,
    expectations: tuple[Expectation, ...] | None = None,
) -> AlteredQuery:
    """ALTER … AS / CREATE OR ALTER, decided and checked but not written: evolve the schema (nullable columns
    appended only), the new query; with ``start_mode`` (CREATE OR ALTER … START_MODE) a new start, else new
    sources start at the stored one; with ``options`` the table's new options (CREATE OR ALTER moving it to another
    scheduler); ``expectations``: CREATE OR ALTER's (``None``: ALTER … AS keeps the table's).

    The new definition's SQL settings are this session's (``with_options``: CREATE OR ALTER's WITH may pin some;
    its other options are not changed on an existing table), :mod:`~mt_magic.runtime.spark.semantics`.

    Raises:
        MtMagicError: what the statement is refused for (query, schema, start); nothing was written.
    """
    label = f"ALTER MATERIALIZED TABLE {name} AS"
    info, current = ws.catalog.load_materialized(name)
    pinned, _ = semantics.split_pinned(label, with_options or {})
    settings = semantics.captured_settings(ws.spark, pinned)
    with semantics.applied(label, ws.spark, settings):  # analysed as its refreshes will run it
        expanded, upstream = resolve_query(ws, label, query, query_position)
        inferred = infer_schema(ws, label, expanded, query, query_position)
        expanded = schema_rules.apply_column_list(label, expanded, columns, inferred)
        stored_schema = ws.spark.table(qualified(name)).schema
        expanded, new_schema = with_row_identity(ws, label, expanded, schema_rules.hidden_count(stored_schema))
        schema_rules.check_typed(label, new_schema)
        added = schema_rules.appended_columns(label, stored_schema, new_schema)
        expected = current.expectations if expectations is None else expectations
        check_expectations(ws, label, text_of(expanded), expected)
        expanded = with_dropped_rows(expanded, expected)
        current = restart(ws, label, current, start_mode, upstream, info, expanded)
    check_incremental_option(label, dict(current.options), current.refresh_mode, expanded)
    reason = incremental.replanned_mode_reason(current.mode_reason, current.refresh_mode, expanded)
    updated = replace(
        current,
        query=query,
        expanded_query=expanded,
        upstream=upstream,
        mode_reason=reason,
        definition_version=current.definition_version + 1,
        sql_settings=settings,
        options=current.options if options is None else dict(options),
        expectations=expected,
    )
    return AlteredQuery(name, updated, tuple(added))


def created_over(
    ws: Workspace, name: str, stmt: CreateMaterializedTable, options: Mapping[str, str] | None = None
) -> AlteredQuery:
    """CREATE OR ALTER of the existing materialized table ``name``, decided as :func:`altered_query` from the
    statement's query, column list, START_MODE, WITH and expectations (``options``: the table's options when it
    moves to another scheduler). The statement and its ``%mt explain`` preview both decide it here."""
    return altered_query(
        ws,
        name,
        stmt.query,
        stmt.columns,
        stmt.start_mode,
        stmt.options_dict,
        query_position=stmt.query_position,
        options=options,
        expectations=stmt.expectations,
    )


def constrained(
    ws: Workspace, name: str, add: Expectation | None = None, drop: str | None = None
) -> MaterializedTableDefinition:
    """``ALTER … ADD CONSTRAINT … EXPECT`` / ``DROP CONSTRAINT``, decided and checked, not written: the definition
    with the expectation added or removed, its stored query refiltered (a new definition version: the next
    refresh recomputes, so rows a DROP ROW expectation now keeps or drops move in or out).

    Raises:
        DefinitionError: a name already taken or not there, or a condition Spark refuses; nothing was written.
    """
    label = f"ALTER MATERIALIZED TABLE {name} {'ADD' if add else 'DROP'} CONSTRAINT"
    _, current = ws.catalog.load_materialized(name)
    names = [e.name.lower() for e in current.expectations]
    taken = next((e.name for e in current.expectations if add is not None and e.name.lower() == add.name.lower()), None)
    if taken is not None:
        raise DefinitionError(
            f"{name} already has an expectation {taken}",
            statement=label,
            fix=f"DROP CONSTRAINT {taken} first, or choose another name",
        )
    if drop is not None and drop.lower() not in names:
        raise DefinitionError(
            f"{name} has no expectation {drop}",
            statement=label,
            did_you_mean=[e.name for e in current.expectations if e.name.lower() in closest_names(drop, names)],
            fix=f"name one of its expectations: {', '.join(e.name for e in current.expectations) or 'it has none'}",
        )
    kept = tuple(e for e in current.expectations if drop is None or e.name.lower() != drop.lower())
    expected = (*kept, add) if add is not None else kept
    stored = without_dropped_rows(current.expanded_query)
    with semantics.applied(label, ws.spark, current.sql_settings or {}):
        check_expectations(ws, label, stored, expected)
    return replace(
        current,
        expectations=expected,
        expanded_query=text_of(with_dropped_rows(stored, expected)),
        definition_version=current.definition_version + 1,
    )


def alter_query(ws: Workspace, altered: AlteredQuery) -> MaterializedTableDefinition:
    """ALTER … AS / CREATE OR ALTER as :func:`altered_query` decided it, in one commit: the appended columns with
    the definition that produces them, or neither (its Iceberg view version undone)."""
    name, updated, added = altered.name, altered.definition, altered.added
    label = f"ALTER MATERIALIZED TABLE {name} AS"
    appended = schema_rules.arrow_columns(list(added))
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
    ws: Workspace,
    name: str,
    extra: Mapping[str, str] | None = None,
    *,
    loaded: tuple[TableInfo, MaterializedTableDefinition] | None = None,
    **changes: object,
) -> MaterializedTableDefinition:
    """Persist changed fields of the definition (suspended flag, freshness, …), and ``extra`` table
    properties, in one commit, from one load of the table (``loaded``: the caller's, just read)."""
    info, current = loaded or ws.catalog.load_materialized(name)
    updated = replace(current, **changes)  # type: ignore[arg-type]
    ws.catalog.update_properties(name, {**updated.to_properties(), **(extra or {})}, loaded=info)
    return updated


def resumed(
    ws: Workspace,
    name: str,
    options: Mapping[str, str],
    loaded: tuple[TableInfo, MaterializedTableDefinition] | None = None,
) -> MaterializedTableDefinition:
    """``ALTER … RESUME [WITH (…)]`` decided, not written: the definition with the suspended flag cleared, after
    checking that no option changes one of the table's recorded answer-changing settings (``loaded``: the table
    as the caller just read it).

    Raises:
        DefinitionError: an option gives a recorded setting another value; nothing changed.
    """
    _, current = loaded or ws.catalog.load_materialized(name)
    semantics.refuse_conflicts(f"ALTER MATERIALIZED TABLE {name} RESUME WITH", current.sql_settings, options)
    return replace(current, suspended=False)


def resume(ws: Workspace, name: str, options: Mapping[str, str]) -> MaterializedTableDefinition:
    """``ALTER … RESUME [WITH (…)]`` (:func:`resumed`), written, from one load of the table.

    Raises:
        DefinitionError: an option gives a recorded setting another value; nothing changed.
    """
    loaded = ws.catalog.load_materialized(name)
    resumed(ws, name, options, loaded)
    return update_definition(ws, name, loaded=loaded, suspended=False)


def freshened(
    ws: Workspace,
    name: str,
    freshness: Freshness,
    loaded: tuple[TableInfo, MaterializedTableDefinition] | None = None,
) -> tuple[MaterializedTableDefinition, dict[str, str]]:
    """``SET FRESHNESS`` decided, not written: (the definition with the new freshness and schedule, the
    snapshot-retention properties that follow it). The refresh mode stays as it is (Flink keeps the mode of an
    existing table); the retention follows the new freshness unless WITH set it."""
    from mt_magic.sql.ddl.freshness import resolve_schedule

    _, current = loaded or ws.catalog.load_materialized(name)
    schedule = resolve_schedule(freshness, current.refresh_mode, ws.rules)
    retention = retention_properties(freshness.to_timedelta(), current.options)
    updated = replace(
        current,
        freshness=schedule.freshness.sql(),
        cron=schedule.cron or "",
        interval=freshness.to_timedelta(),
        mode_reason=_freshened_mode_reason(ws, current, freshness),
    )
    return updated, retention


def mode_kept(ws: Workspace, definition: MaterializedTableDefinition, freshness: Freshness) -> str | None:
    """Why the table keeps a mode that a new table with ``freshness`` would not get (``SET FRESHNESS`` keeps an
    existing table's mode, as Flink does); ``None`` when the mode was declared or would be inferred anyway."""
    from mt_magic.sql.ddl.freshness import describe_freshness, humanize

    inferred = ws.rules.infer_mode(freshness)
    if definition.declared_refresh_mode is not None or inferred is definition.refresh_mode:
        return None
    sign = "≥" if inferred is RefreshMode.FULL else "<"
    return (
        f"{definition.refresh_mode.value} kept: SET FRESHNESS keeps an existing table's mode (freshness "
        f"{describe_freshness(freshness)} {sign} {humanize(ws.rules.threshold)} threshold would make a new table "
        f"{inferred.value}; SET REFRESH_MODE = {inferred.value} changes it)"
    )


def _freshened_mode_reason(ws: Workspace, current: MaterializedTableDefinition, freshness: Freshness) -> str:
    """The mode reason after ``SET FRESHNESS``: a declared mode's stays; an inferred one is inferred again from the
    new freshness, or says why the mode was kept (:func:`mode_kept`)."""
    from mt_magic.sql.ddl.freshness import resolve_schedule

    if current.declared_refresh_mode is not None:
        return current.mode_reason
    reason = mode_kept(ws, current, freshness) or resolve_schedule(freshness, None, ws.rules).reason
    return incremental.mode_reason(reason, current.refresh_mode, current.expanded_query)


def change_freshness(ws: Workspace, name: str, freshness: Freshness) -> MaterializedTableDefinition:
    """New freshness (:func:`freshened`), written in one commit, from one load of the table."""
    loaded = ws.catalog.load_materialized(name)
    updated, retention = freshened(ws, name, freshness, loaded)
    return update_definition(
        ws,
        name,
        retention,
        loaded=loaded,
        freshness=updated.freshness,
        cron=updated.cron,
        interval=updated.interval,
        mode_reason=updated.mode_reason,
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
            f"{', '.join(unknown)} (PARTITIONED BY {', '.join(definition.partitioned_by) or 'nothing'})",
            fix="name its partition columns, or refresh the whole table without PARTITION",
        )


def remoded(
    ws: Workspace,
    name: str,
    mode: RefreshMode,
    loaded: tuple[TableInfo, MaterializedTableDefinition] | None = None,
) -> MaterializedTableDefinition:
    """``SET REFRESH_MODE`` decided, not written: a new schedule from the same freshness, taking over from the last
    committed refresh state (a CONTINUOUS table continues incrementally from the snapshots the last refresh
    consumed).

    Raises:
        FreshnessError: the freshness cannot be a FULL-mode schedule (the message says which would).
        DefinitionError: ``'incremental' = 'strict'`` forbids FULL mode.
    """
    from mt_magic.sql.ddl.freshness import resolve_schedule
    from mt_magic.sql.ddl.parser import parse_interval

    label = f"ALTER MATERIALIZED TABLE {name} SET REFRESH_MODE = {mode.value}"
    _, current = loaded or ws.catalog.load_materialized(name)
    try:
        schedule = resolve_schedule(parse_interval(current.freshness), mode, ws.rules)
    except MtMagicError as exc:
        raise DefinitionError(f"{label}: {exc}") from exc
    check_incremental_option(label, dict(current.options), mode, current.expanded_query)
    reason = incremental.mode_reason(schedule.reason, mode, current.expanded_query)
    return replace(current, refresh_mode=mode, declared_refresh_mode=mode, cron=schedule.cron or "", mode_reason=reason)


def change_refresh_mode(ws: Workspace, name: str, mode: RefreshMode) -> MaterializedTableDefinition:
    """``SET REFRESH_MODE`` (:func:`remoded`), written in one commit, from one load of the table.

    Raises:
        FreshnessError: the freshness cannot be a FULL-mode schedule (the message says which would).
        DefinitionError: ``'incremental' = 'strict'`` forbids FULL mode.
    """
    loaded = ws.catalog.load_materialized(name)
    updated = remoded(ws, name, mode, loaded)
    return update_definition(
        ws,
        name,
        loaded=loaded,
        refresh_mode=mode,
        declared_refresh_mode=mode,
        cron=updated.cron,
        mode_reason=updated.mode_reason,
    )
