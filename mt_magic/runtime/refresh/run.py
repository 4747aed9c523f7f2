"""One refresh of one materialized table: pin the sources, compute, and commit data + refresh state atomically.

:func:`run_refresh` dispatches: a CONTINUOUS table whose last refresh left a state is refreshed
incrementally (:mod:`mt_magic.runtime.refresh.incremental`) when its query and its sources' history allow, else it
recomputes fully and records why (``mt.strategy``); with ``'incremental' = 'strict'`` in WITH, a refresh that
would fall back fails instead. The first refresh, partition refreshes and FULL mode always recompute.

The refresh state (which source snapshots were read, why and when) is attached to the data commit through
Iceberg's ``snapshot-property.*`` write options, so the commit and its bookkeeping cannot diverge: a crash
before the commit leaves the previous snapshot (and state) current; a crash after it repeats nothing.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition, SourceState
from mt_magic.catalog.tables import TableInfo
from mt_magic.catalog.views import ForeignVersion, MaterializedViews, predates_view_versions
from mt_magic.errors import InvalidTableError, RefreshError
from mt_magic.runtime.refresh.audit import on_spark, without_dropped_rows
from mt_magic.runtime.refresh.commit import Write, WriteMode
from mt_magic.runtime.refresh.context import (
    IncrementalPolicy,
    RefreshContext,
    conform,
    incremental_policy,
    is_strict,
    load_sources,
    source_state,
)
from mt_magic.runtime.refresh.incremental.attempt import run_incremental
from mt_magic.runtime.refresh.inputs import Refresh
from mt_magic.runtime.refresh.phases import phase, recording
from mt_magic.runtime.refresh.seen import seen_at_start
from mt_magic.runtime.refresh.spark_metrics import spark_cost
from mt_magic.runtime.refresh.start import kept_rows, window_views
from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.runtime.status import Decision, Estimates, RefreshOutcome, RefreshRequest
from mt_magic.sql.query.rewrite import pin_sources
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshMode, RefreshTrigger

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

FORMATTER_TRIGGERS = (RefreshTrigger.SCHEDULED, RefreshTrigger.CATCH_UP, RefreshTrigger.CASCADE)


def target_partition(request: RefreshRequest, definition: MaterializedTableDefinition) -> dict[str, str]:
    """The partition a refresh overwrites: the backfill's, the formatter's for scheduled FULL runs, or none."""
    if request.partition:
        return dict(request.partition)
    full = definition.refresh_mode is RefreshMode.FULL
    if full and definition.date_formatters and request.trigger in FORMATTER_TRIGGERS:
        from mt_magic.sql.ddl.formatter import DateFormatter

        return {
            col: DateFormatter(pattern).format(request.scheduled_time)
            for col, pattern in definition.date_formatters.items()
        }
    return {}


def is_noop(
    info: TableInfo,
    definition: MaterializedTableDefinition,
    request: RefreshRequest,
    states: tuple[SourceState, ...],
    partition: Mapping[str, str],
) -> bool:
    """True when the table already reflects exactly these source snapshots with this definition."""
    if request.trigger in (RefreshTrigger.MANUAL, RefreshTrigger.INITIAL) or request.partition:
        return False
    last = info.last_refresh()
    if last is None:
        return False
    snapshot, state = last
    if state.definition_version != definition.definition_version or predates_view_versions(snapshot.summary):
        return False
    if state.kind is RefreshKind.PARTITION and dict(state.partition) != dict(partition):
        return False
    return all(state.snapshot_of(s.qualified_name, s.uuid) == s.snapshot_id for s in states) and len(
        state.source_states
    ) == len(states)


def _partition_condition(target: DataFrame, partition: Mapping[str, str]) -> Column:
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in target.schema.fields}
    condition = F.lit(True)
    for col, value in partition.items():
        condition = condition & (F.col(identifier(col)) == F.lit(value).cast(types[col]))
    return condition


def query_rows(
    session: SparkSession,
    info: TableInfo,
    definition: MaterializedTableDefinition,
    states: tuple[SourceState, ...],
    windows: Mapping[str, str],
    target: DataFrame,
    dropping: bool = True,
) -> DataFrame:
    """The table's rows as its query gives them over ``states`` (and the rows it keeps), shaped as ``target``:
    what ``verify`` compares the table with, and with ``dropping=False`` what a recompute computes (before the
    ``DROP ROW`` filter, which its commit applies and counts: :attr:`.commit.Write.kept`)."""
    query = definition.expanded_query if dropping else without_dropped_rows(definition.expanded_query)
    pinned = pin_sources(query, {s.qualified_name: s.snapshot_id for s in states}, windows)
    df = conform(session.sql(pinned), target)
    kept = kept_rows(session, info, definition)
    return df if kept is None else df.unionByName(conform(kept, target))


def _recompute(
    refresh: Refresh,
    partition: Mapping[str, str],
    strategy: str | None = None,
    estimates: Estimates | None = None,
) -> RefreshOutcome:
    """Recompute the table (or one partition) from the pinned sources; one atomic commit or nothing.

    Args:
        estimates: each candidate's estimated cost where a recompute was weighed against an incremental
            refresh (ADAPTIVE); else a recompute's alone is recorded.
    """
    ctx, request, definition = refresh.ctx, refresh.request, refresh.definition
    kind = RefreshKind.PARTITION if partition else RefreshKind.FULL
    strategy = strategy or (f"partition {partition}" if partition else "full recompute")
    decision = refresh.seen.decided(kind, strategy, estimates)
    session: SparkSession = ctx.jobs.child_session(dict(request.options), settings=definition.sql_settings)
    job = ctx.jobs.job_group(request.job_group, f"refresh {request.table}")
    with job, window_views(session, ctx.catalog, definition, refresh.states) as windows:
        with phase("analyze"):
            target = session.table(qualified(request.table))
            df = query_rows(session, refresh.info, definition, refresh.states, windows, target, dropping=False)
            condition = None
            if partition:
                condition = _partition_condition(target, partition)
                df = df.where(condition)
        return refresh.commit(Write(df, WriteMode.OVERWRITE, condition), kind, strategy, decision, partition=partition)


def audited_on_spark(definition: MaterializedTableDefinition) -> MaterializedTableDefinition:
    """A table with expectations refreshes on Spark (its rows are counted and staged there: :mod:`.audit`)."""
    if not definition.audited:
        return definition
    return dataclasses.replace(definition, options=on_spark(definition.options, definition.expectations))


def tries_incremental(
    request: RefreshRequest, info: TableInfo, definition: MaterializedTableDefinition, partition: Mapping[str, str]
) -> bool:
    """CONTINUOUS, not the first refresh, not a partition refresh, and a previous refresh state to start from."""
    return (
        definition.refresh_mode is RefreshMode.CONTINUOUS
        and not partition
        and request.trigger is not RefreshTrigger.INITIAL
        and info.last_refresh() is not None
    )


def run_refresh(ctx: RefreshContext, request: RefreshRequest, force_full: bool = False) -> RefreshOutcome:
    """Refresh incrementally where the table's mode, query and sources allow, else recompute (and say why).

    Args:
        force_full: recompute even where an incremental refresh would be possible (benchmarks compare both).

    The outcome carries its phases (:mod:`.phases`): where this refresh's time went, and its decision record
    (:mod:`.seen`) with what it cost: the whole refresh's wall time and its Spark jobs' task time and bytes
    read (:mod:`.spark_metrics`; not measured without a job group).

    Raises:
        RefreshError: ``'incremental' = 'strict'`` and this refresh would have fallen back; nothing was written.
        RefreshConflictError: another writer committed to the table meanwhile; nothing was written.
    """
    began = time.perf_counter()
    with recording() as spans:
        outcome = _refresh(ctx, request, force_full)
    decision = outcome.decision
    if decision is not None:
        decision = _measured(decision, ctx, request, outcome, time.perf_counter() - began)
    return dataclasses.replace(outcome, phases=tuple(spans), decision=decision)


def _measured(
    decision: Decision, ctx: RefreshContext, request: RefreshRequest, outcome: RefreshOutcome, wall_s: float
) -> Decision:
    """``decision`` with the refresh's wall time and, where Spark ran, its jobs, their task time and bytes read (in
    process: no Spark job, and the bytes pyiceberg read are not counted; a no-op read nothing)."""
    task_s: float | None = 0.0
    jobs: int | None = 0
    read: int | None = 0 if outcome.engine is RefreshEngine.NONE else None
    if outcome.engine is RefreshEngine.SPARK:
        cost = spark_cost(ctx.jobs, request.job_group)
        task_s, read, jobs = (cost.task_seconds, cost.bytes_read, cost.jobs) if cost is not None else (None,) * 3
    measured = dataclasses.replace(
        decision.measured, wall_s=wall_s, spark_task_s=task_s, spark_jobs=jobs, bytes_read=read
    )
    return dataclasses.replace(decision, measured=measured)


def refused(foreign: ForeignVersion) -> InvalidTableError:
    """The refusal of a refresh that could not record the view's current version (another engine's): it would
    leave the table invalid by the materialized-view spec, and only a statement can mend it."""
    engine = foreign.engine or "an engine that names none"
    return InvalidTableError(
        f"its view {foreign.view} is at version {foreign.version_id}, written by {engine}, whose query, namespace or "
        "storage-table is not the table's definition, so a refresh would leave the table invalid by the "
        "materialized-view spec. Nothing was refreshed",
        statement=foreign.table,
        fix=f"CREATE OR ALTER MATERIALIZED TABLE {foreign.table} … AS SELECT … to make mt_magic's definition the "
        f"view's current version again, or DROP MATERIALIZED TABLE {foreign.table}",
    )


def _refresh(ctx: RefreshContext, request: RefreshRequest, force_full: bool) -> RefreshOutcome:
    started = ctx.clock()
    with phase("metadata"):
        info, definition = ctx.catalog.load_materialized(request.table)
        sources = load_sources(ctx.catalog, request.table, definition.upstream)
        seen = seen_at_start(info, sources)
    states = tuple(source_state(s, ctx.catalog.spark_name) for s in sources)
    refresh = Refresh(ctx, request, info, definition, sources, states, started, seen)
    partition = target_partition(request, definition)
    last = info.last_refresh()
    views = MaterializedViews(ctx.catalog)  # an invalid table is refreshed, or refused when that cannot mend it
    valid, foreign = (
        (True, None)
        if last is None
        else views.valid_for_refresh(request.table, info.uuid, definition.definition_version, last)
    )
    if foreign is not None:
        raise refused(foreign)
    if valid and is_noop(info, definition, request, states, partition):
        reason = "no source changed since the last refresh"
        return RefreshOutcome(
            RefreshKind.NOOP,
            None,
            0,
            None,
            reason,
            engine=RefreshEngine.NONE,
            decision=seen.decided(RefreshKind.NOOP, reason),
        )
    never = incremental_policy(definition.options) is IncrementalPolicy.NEVER
    if force_full or never or not tries_incremental(request, info, definition, partition):
        strategy = "full: 'incremental' = 'never'" if never and not partition else None
        return _recompute(refresh, partition, strategy)
    result = run_incremental(refresh.with_definition(audited_on_spark(definition)))
    if isinstance(result, RefreshOutcome):
        return result
    if is_strict(definition.options):
        raise RefreshError(
            f"'incremental' = 'strict' forbids a full refresh, but {result.describe()} [{result.reason.name}]. "
            "Nothing was written",
            statement=request.table,
            fix="change the query or the sources, or drop the option",
        )
    return _recompute(refresh, partition, f"full: fallback — {result.describe()}", result.estimates)
