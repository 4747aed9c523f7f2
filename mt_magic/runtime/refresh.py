"""One refresh of one materialized table: pin the sources, compute, and commit data + refresh state atomically.

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
from mt_magic.runtime.jobs import SparkJobs
from mt_magic.runtime.status import RefreshKind, RefreshOutcome, RefreshRequest, RefreshTrigger
from mt_magic.sql.rewrite import pin_sources

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

REFRESH_ID_KEY = "mt.refresh-id"
FORMATTER_TRIGGERS = (RefreshTrigger.SCHEDULED, RefreshTrigger.CATCH_UP, RefreshTrigger.CASCADE)


@dataclass(frozen=True)
class RefreshContext:
    """What every refresh needs: Spark jobs, catalog metadata, and the clock."""

    jobs: SparkJobs
    catalog: MaterializedCatalog
    clock: Callable[[], datetime]


def pin_source_states(catalog: MaterializedCatalog, upstream: tuple[str, ...]) -> tuple[SourceState, ...]:
    """The current snapshot of every source, read once at the start of a refresh."""
    states = []
    for name in upstream:
        info = catalog.load(name)
        states.append(SourceState(info.namespace, info.table_name, info.uuid, info.current_snapshot_id,
                                  catalog.spark_name))
    return tuple(states)


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
    """The query result as the table's columns: by name, in table order, cast to the table's types."""
    from pyspark.sql import functions as F

    present = set(df.columns)
    return df.select([
        (F.col(f"`{f.name}`") if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in target.schema.fields
    ])


def _partition_condition(target: DataFrame, partition: Mapping[str, str]) -> Column:
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in target.schema.fields}
    condition = F.lit(True)
    for col, value in partition.items():
        condition = condition & (F.col(f"`{col}`") == F.lit(value).cast(types[col]))
    return condition


def write_with_state(df: DataFrame, table: str, state: RefreshState, refresh_id: str,
                     condition: Column | None) -> None:
    """Overwrite (everything, or the rows matching ``condition``) with the refresh state in the same commit."""
    from pyspark.sql import functions as F

    writer = df.writeTo(table)
    for key, value in {**state.to_summary(), REFRESH_ID_KEY: refresh_id}.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.overwrite(condition if condition is not None else F.lit(True))


def _committed(ctx: RefreshContext, table: str, refresh_id: str) -> tuple[int | None, int, datetime | None]:
    info = ctx.catalog.load(table)
    for snap in reversed(info.snapshots):
        if snap.summary.get(REFRESH_ID_KEY) == refresh_id:
            return snap.snapshot_id, int(snap.summary.get("added-records", "0")), snap.committed_at
    return None, 0, None


def run_full_refresh(ctx: RefreshContext, request: RefreshRequest) -> RefreshOutcome:
    """Recompute the table (or one partition) from sources pinned now; one atomic commit or nothing."""
    started = ctx.clock()
    info, definition = ctx.catalog.load_materialized(request.table)
    states = pin_source_states(ctx.catalog, definition.upstream)
    partition = target_partition(request, definition)
    if is_noop(info, definition, request, states, partition):
        return RefreshOutcome(RefreshKind.NOOP, None, 0, None, "no source changed since the last refresh")
    kind = RefreshKind.PARTITION if partition else RefreshKind.FULL
    strategy = f"partition {partition}" if partition else "full recompute"
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
    snapshot_id, rows, committed_at = _committed(ctx, request.table, refresh_id)
    return RefreshOutcome(kind, snapshot_id, rows, committed_at, strategy)
