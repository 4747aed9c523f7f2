"""One refresh of one materialized table: pin the sources, compute, and commit data + refresh state atomically.

:func:`run_refresh` dispatches: a CONTINUOUS table whose last refresh left a state is refreshed
incrementally (:mod:`mt_magic.runtime.incremental`) when its query and its sources' history allow, else it
recomputes fully and records why (``mt.strategy``); with ``'incremental' = 'strict'`` in WITH, a refresh that
would fall back fails instead. The first refresh, partition refreshes and FULL mode always recompute.

The refresh state (which source snapshots were read, why and when) is attached to the data commit through
Iceberg's ``snapshot-property.*`` write options, so the commit and its bookkeeping cannot diverge: a crash
before the commit leaves the previous snapshot (and state) current; a crash after it repeats nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition, RefreshState, SourceState
from mt_magic.catalog.tables import MaterializedCatalog, TableInfo
from mt_magic.errors import RefreshError
from mt_magic.runtime.jobs import SparkJobs
from mt_magic.runtime.sql_text import identifier
from mt_magic.runtime.status import RefreshKind, RefreshOutcome, RefreshRequest, RefreshTrigger
from mt_magic.sql.rewrite import pin_sources

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

REFRESH_ID_KEY = "mt.refresh-id"
INCREMENTAL_OPTION = "incremental"
"""WITH option: ``'strict'`` makes a CONTINUOUS refresh fail rather than fall back to a full recompute;
``'auto'`` (the default) falls back and records why."""
INCREMENTAL_VALUES = ("strict", "auto")
FORMATTER_TRIGGERS = (RefreshTrigger.SCHEDULED, RefreshTrigger.CATCH_UP, RefreshTrigger.CASCADE)


@dataclass(frozen=True)
class RefreshContext:
    """What every refresh needs: Spark jobs, catalog metadata, and the clock."""

    jobs: SparkJobs
    catalog: MaterializedCatalog
    clock: Callable[[], datetime]


def load_sources(catalog: MaterializedCatalog, upstream: tuple[str, ...]) -> tuple[TableInfo, ...]:
    """Every source's metadata, read once at the start of a refresh: its current snapshot is the pinned one."""
    return tuple(catalog.load(name) for name in upstream)


def source_state(info: TableInfo, catalog_name: str) -> SourceState:
    return SourceState(info.namespace, info.table_name, info.uuid, info.current_snapshot_id, catalog_name)


def pin_source_states(catalog: MaterializedCatalog, upstream: tuple[str, ...]) -> tuple[SourceState, ...]:
    """The current snapshot of every source, read once at the start of a refresh."""
    return tuple(source_state(info, catalog.spark_name) for info in load_sources(catalog, upstream))


def target_partition(request: RefreshRequest, definition: MaterializedTableDefinition) -> dict[str, str]:
    """The partition a refresh overwrites: the backfill's, the formatter's for scheduled FULL runs, or none."""
    if request.partition:
        return dict(request.partition)
    if definition.refresh_mode == "FULL" and definition.date_formatters and request.trigger in FORMATTER_TRIGGERS:
        from mt_magic.sql.formatter import DateFormatter

        return {col: DateFormatter(pattern).format(request.scheduled_time)
                for col, pattern in definition.date_formatters.items()}
    return {}


def is_noop(info: TableInfo, definition: MaterializedTableDefinition, request: RefreshRequest,
            states: tuple[SourceState, ...], partition: Mapping[str, str]) -> bool:
    """True when the table already reflects exactly these source snapshots with this definition."""
    if request.trigger in (RefreshTrigger.MANUAL, RefreshTrigger.INITIAL) or request.partition:
        return False
    last = info.last_refresh()
    if last is None:
        return False
    _, state = last
    if state.definition_version != definition.definition_version:
        return False
    if state.kind == RefreshKind.PARTITION.value and dict(state.partition) != dict(partition):
        return False
    return all(state.snapshot_of(s.qualified_name) == s.snapshot_id for s in states) and len(
        state.source_states) == len(states)


def conform(df: DataFrame, target: DataFrame) -> DataFrame:
    """The query result as the table's columns: by name, in table order, cast to the table's types.

    One ``selectExpr`` (a single call into the JVM), not a Column per field: this runs on every refresh.
    Struct types go through Columns: their type strings do not quote nested field names.
    """
    from pyspark.sql import functions as F

    present = set(df.columns)
    fields = target.schema.fields
    if any("struct<" in f.dataType.simpleString() for f in fields):
        return df.select([
            (F.col(identifier(f.name)) if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in fields
        ])
    return df.selectExpr(*[
        f"CAST({identifier(f.name) if f.name in present else 'NULL'} AS {f.dataType.simpleString()}) "
        f"AS {identifier(f.name)}"
        for f in fields
    ])


def incremental_option(options: Mapping[str, str]) -> str | None:
    """The ``'incremental'`` WITH option, normalised (``None`` when not given)."""
    value = options.get(INCREMENTAL_OPTION)
    return None if value is None else value.strip().lower()


def is_strict(options: Mapping[str, str]) -> bool:
    return incremental_option(options) == "strict"


def _partition_condition(target: DataFrame, partition: Mapping[str, str]) -> Column:
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in target.schema.fields}
    condition = F.lit(True)
    for col, value in partition.items():
        condition = condition & (F.col(identifier(col)) == F.lit(value).cast(types[col]))
    return condition


def write_with_state(df: DataFrame, table: str, state: RefreshState, refresh_id: str,
                     condition: Column | None) -> None:
    """Overwrite (everything, or the rows matching ``condition``) with the refresh state in the same commit."""
    from pyspark.sql import functions as F

    writer = df.writeTo(table)
    for key, value in {**state.to_summary(), REFRESH_ID_KEY: refresh_id}.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.overwrite(condition if condition is not None else F.lit(True))


def committed_snapshot(ctx: RefreshContext, table: str, refresh_id: str) -> tuple[int | None, int, datetime | None]:
    """(snapshot id, added records, commit time) of the commit tagged ``refresh_id``."""
    info = ctx.catalog.load(table)
    for snap in reversed(info.snapshots):
        if snap.summary.get(REFRESH_ID_KEY) == refresh_id:
            return snap.snapshot_id, int(snap.summary.get("added-records", "0")), snap.committed_at
    return None, 0, None


def _recompute(ctx: RefreshContext, request: RefreshRequest, definition: MaterializedTableDefinition,
               states: tuple[SourceState, ...], partition: Mapping[str, str], started: datetime,
               strategy: str | None = None) -> RefreshOutcome:
    """Recompute the table (or one partition) from the pinned sources; one atomic commit or nothing."""
    kind = RefreshKind.PARTITION if partition else RefreshKind.FULL
    strategy = strategy or (f"partition {partition}" if partition else "full recompute")
    state = RefreshState(states, started, kind.value, request.trigger.value, request.scheduled_time,
                         definition.definition_version, partition, strategy)
    refresh_id = uuid.uuid4().hex
    session: SparkSession = ctx.jobs.child_session(dict(request.options))
    with ctx.jobs.job_group(request.job_group, f"refresh {request.table}"):
        pinned = pin_sources(definition.expanded_query, {s.qualified_name: s.snapshot_id for s in states})
        target = session.table(request.table)
        df = conform(session.sql(pinned), target)
        condition = None
        if partition:
            condition = _partition_condition(target, partition)
            df = df.where(condition)
        ctx.jobs.check_cancelled(request.job_group)
        write_with_state(df, request.table, state, refresh_id, condition)
    snapshot_id, rows, committed_at = committed_snapshot(ctx, request.table, refresh_id)
    return RefreshOutcome(kind, snapshot_id, rows, committed_at, strategy)


def run_full_refresh(ctx: RefreshContext, request: RefreshRequest) -> RefreshOutcome:
    """Recompute the table (or one partition) from sources pinned now; one atomic commit or nothing."""
    started = ctx.clock()
    info, definition = ctx.catalog.load_materialized(request.table)
    states = pin_source_states(ctx.catalog, definition.upstream)
    partition = target_partition(request, definition)
    if is_noop(info, definition, request, states, partition):
        return RefreshOutcome(RefreshKind.NOOP, None, 0, None, "no source changed since the last refresh")
    return _recompute(ctx, request, definition, states, partition, started)


def tries_incremental(request: RefreshRequest, info: TableInfo, definition: MaterializedTableDefinition,
                      partition: Mapping[str, str]) -> bool:
    """CONTINUOUS, not the first refresh, not a partition refresh, and a previous refresh state to start from."""
    return (definition.refresh_mode == "CONTINUOUS" and not partition
            and request.trigger is not RefreshTrigger.INITIAL and info.last_refresh() is not None)


def run_refresh(ctx: RefreshContext, request: RefreshRequest) -> RefreshOutcome:
    """Refresh incrementally where the table's mode, query and sources allow, else recompute (and say why).

    Raises:
        RefreshError: ``'incremental' = 'strict'`` and this refresh would have fallen back; nothing was written.
    """
    from mt_magic.runtime.incremental.runner import run_incremental  # builds on this module

    started = ctx.clock()
    info, definition = ctx.catalog.load_materialized(request.table)
    sources = load_sources(ctx.catalog, definition.upstream)
    states = tuple(source_state(s, ctx.catalog.spark_name) for s in sources)
    partition = target_partition(request, definition)
    if is_noop(info, definition, request, states, partition):
        return RefreshOutcome(RefreshKind.NOOP, None, 0, None, "no source changed since the last refresh")
    if not tries_incremental(request, info, definition, partition):
        return _recompute(ctx, request, definition, states, partition, started)
    result = run_incremental(ctx, request, info, definition, sources, states, started)
    if isinstance(result, RefreshOutcome):
        return result
    if is_strict(definition.options):
        raise RefreshError(
            f"{request.table}: 'incremental' = 'strict' forbids a full refresh, but {result.describe()} "
            f"[{result.reason.name}]. Nothing was written; change the query or the sources, or drop the option."
        )
    return _recompute(ctx, request, definition, states, partition, started, f"full: fallback — {result.describe()}")
