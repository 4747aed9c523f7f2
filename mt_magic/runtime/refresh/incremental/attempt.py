"""One incremental refresh end to end: plan from metadata, register deltas, run the strategy, commit once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.audit import without_dropped_rows
from mt_magic.runtime.refresh.commit import RowsWrite, Write
from mt_magic.runtime.refresh.context import (
    DEFAULT_MAX_CHANGE,
    IncrementalPolicy,
    incremental_policy,
    max_change_fraction,
)
from mt_magic.runtime.refresh.incremental.delta import register_deltas
from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS, in_process_plan, in_process_write
from mt_magic.runtime.refresh.incremental.planner import (
    RefreshPlan,
    cheaper_to_recompute,
    plan_refresh,
    total_records,
    why_incremental,
)
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy
from mt_magic.runtime.refresh.incremental.strategies import StrategyContext, TableLayout, execute
from mt_magic.runtime.refresh.inputs import Refresh
from mt_magic.runtime.refresh.phases import phase
from mt_magic.runtime.refresh.start import window_fallback
from mt_magic.runtime.status import Decision, Estimates, RefreshOutcome
from mt_magic.vocabulary import RefreshEngine, RefreshKind


def describe(strategy: Strategy, plan: RefreshPlan, scope: str = "") -> str:
    """The outcome's strategy line, e.g. "incremental: merge the aggregated delta · delta join (1 of 2 changed)"."""
    text = f"incremental: {strategy.label}"
    if len(plan.changes) > 1:
        changed = sum(1 for c in plan.changes if c.changed)
        what = "delta join (" if plan.query.delta_joins else "("
        text += f" · {what}{changed} of {len(plan.changes)} sources changed)"
    if scope:
        text += f" · {scope}"
    return text


def table_layout(info: TableInfo, definition: MaterializedTableDefinition) -> TableLayout:
    """The table's rows and data files (its summary), merge mode, and ADAPTIVE's bound on the rows a replacement
    touches: its change fraction (or :data:`DEFAULT_MAX_CHANGE`); none under ``'incremental' = 'always'``."""
    summary = info.snapshots[-1].summary if info.snapshots else {}
    files = summary.get("total-data-files", "")
    adaptive = incremental_policy(definition.options) is IncrementalPolicy.AUTO
    return TableLayout(
        total_records(info),
        int(files) if files.isdigit() else None,
        info.properties.get("write.merge.mode", "copy-on-write") == "merge-on-read",
        (max_change_fraction(definition.options) or DEFAULT_MAX_CHANGE) if adaptive else None,
    )


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
ADAPTIVE = "spark.sql.adaptive.enabled"
ROWS_PER_SHUFFLE_PARTITION = 1_000_000
SIZED_STRATEGIES = frozenset(
    {Strategy.APPEND_DELTA, Strategy.APPLY_CHANGES, Strategy.AGGREGATE_MERGE, Strategy.AGGREGATE_RETRACT}
)
"""Strategies that read only the delta and the table itself, so the rows they shuffle are known up front."""


def sized_options(plan: RefreshPlan, info: TableInfo, options: Mapping[str, str], configured: int) -> dict[str, str]:
    """The run's session options, with the shuffle sized to the rows this refresh reads.

    A small delta merged into a small table needs one shuffle partition, not the session's setting: each
    extra task is fixed overhead on a refresh that may run every few seconds. Only for strategies whose
    input is the delta plus the table (no joins), and never over an explicit setting. When one partition
    is enough, adaptive execution is off too: it would run every shuffle stage as a job of its own (three
    jobs for a merge instead of one) to re-plan data that is small anyway, and the strategy reads the delta
    and the table as one partition each, so the merge needs no shuffle at all (one stage).
    """
    table_rows = info.snapshots[-1].summary.get("total-records", "") if info.snapshots else "0"
    if (
        SHUFFLE_PARTITIONS in options
        or plan.strategy not in SIZED_STRATEGIES
        or plan.query.joins > 1  # the number of sources: more than one is a join
        or not table_rows.isdigit()
    ):
        return dict(options)
    rows = sum(c.rows for c in plan.changes) + int(table_rows)
    partitions = max(1, min(configured, -(-rows // ROWS_PER_SHUFFLE_PARTITION)))
    sized = {**options, SHUFFLE_PARTITIONS: str(partitions)}
    if partitions == 1 and ADAPTIVE not in options:
        sized[ADAPTIVE] = "false"
    return sized


@dataclass(frozen=True)
class Chosen:
    """An incremental refresh's plan and where it runs, as weighed before anything is read."""

    plan: RefreshPlan
    in_process: bool
    estimates: Estimates | None
    kept: str
    """Why the refresh stays incremental although its own estimates favour a recompute (or empty)."""

    def decided(self, refresh: Refresh, text: str) -> Decision:
        return refresh.seen.decided(RefreshKind.INCREMENTAL, text + self.kept, self.estimates)


def run_incremental(refresh: Refresh) -> RefreshOutcome | Fallback:
    """Refresh incrementally, or return why a full refresh is needed (nothing was committed then)."""
    with phase("plan"):
        chosen = choose(refresh)
    if isinstance(chosen, Fallback):
        return chosen
    if chosen.in_process:
        rows = in_process_write(refresh, chosen.plan)
        if rows is not None:
            text = f"{describe(chosen.plan.strategy, chosen.plan, rows.scope)} · {IN_PROCESS}"
            return _committed(refresh, chosen, rows, text)
        with phase("plan"):  # priced again for the engine that will run it: Spark's costs are not DuckDB's
            chosen = choose(refresh, on_spark=True)
        if isinstance(chosen, Fallback):
            return chosen
    return _on_spark(refresh, chosen)


def choose(refresh: Refresh, on_spark: bool = False) -> Chosen | Fallback:
    """The plan, its engine and ADAPTIVE's choice, from metadata alone, or why the refresh recomputes
    (``on_spark``: the in-process path could not run it)."""
    definition, sources = refresh.definition, refresh.sources
    plan = plan_refresh(refresh.info, definition, sources)
    if isinstance(plan, Fallback):
        return plan
    windowed = window_fallback(definition, plan)
    if windowed is not None:
        return windowed
    in_process = not on_spark and in_process_plan(plan, refresh.info, sources, definition) is None
    engine = RefreshEngine.IN_PROCESS if in_process else RefreshEngine.SPARK
    replaces = plan.strategy.replaces_rows and not in_process  # in process: priced as a merge (cost_model)
    estimates = refresh.seen.estimates(incremental=True, engine=engine, replaces_rows=replaces)
    kept = ""
    if incremental_policy(definition.options) is IncrementalPolicy.AUTO:
        model = refresh.seen.model(engine, replaces)
        fraction = max_change_fraction(definition.options)
        cheaper = cheaper_to_recompute(plan, sources, fraction, model, in_process=in_process)
        if cheaper is not None:
            return dataclasses.replace(cheaper, estimates=estimates)
        if estimates is not None and estimates.favour_full:
            why = why_incremental(plan, sources, fraction, model, in_process=in_process)
            kept = f" · incremental although estimated dearer: {why}"
    return Chosen(plan, in_process, estimates, kept)


def _on_spark(refresh: Refresh, chosen: Chosen) -> RefreshOutcome | Fallback:
    """The strategy's delta plan on Spark, committed once; a value Spark refuses on the way falls back."""
    ctx, request, plan = refresh.ctx, refresh.request, chosen.plan
    configured = int(
        ctx.jobs.session_conf.get(SHUFFLE_PARTITIONS) or ctx.jobs.spark.conf.get(SHUFFLE_PARTITIONS) or "200"
    )
    options = sized_options(plan, refresh.info, dict(request.options), configured)
    single_task = SHUFFLE_PARTITIONS not in request.options and options.get(SHUFFLE_PARTITIONS) == "1"
    session = ctx.jobs.child_session(options, settings=refresh.definition.sql_settings)
    with ctx.jobs.job_group(request.job_group, f"incremental refresh {request.table}"):
        with phase("deltas"):
            views = register_deltas(session, plan.changes, bool(plan.query.branches), single_task)
        try:
            with phase("strategy"):
                layout = table_layout(refresh.info, refresh.definition)
                query = without_dropped_rows(refresh.definition.expanded_query)  # the commit filters, counting
                strategy_context = StrategyContext(session, plan, query, request.table, views, single_task, layout)
                result = execute(strategy_context)
            if isinstance(result, Fallback):
                return result
            return _committed(refresh, chosen, result.write, describe(result.strategy, plan, result.write.scope))
        except Exception as exc:
            reason = refused_value(exc)
            if reason is None:
                raise
            return Fallback((reason,), _spark_error(exc))
        finally:
            views.release()


OVERFLOW_ERRORS = ("[ARITHMETIC_OVERFLOW]", "[NUMERIC_VALUE_OUT_OF_RANGE", "[CAST_OVERFLOW")
"""Spark's error classes for a value past its type (ANSI mode): raised before the commit, nothing written."""


VALUE_ERRORS = (
    "[CAST_INVALID_INPUT]",
    "[DIVIDE_BY_ZERO]",
    "[INTERVAL_DIVIDED_BY_ZERO]",
    "[INVALID_ARRAY_INDEX",
    "[INVALID_INDEX_OF_ZERO]",
)
"""Spark's error classes for a value an expression refuses (ANSI mode): raised before the commit, nothing written."""


def refused_value(exc: BaseException) -> FallbackReason | None:
    """Why an incremental refresh that Spark failed on a value recomputes instead, or ``None`` for other errors.

    An incremental refresh adds in another order than the query (a delta's partial sum, then the stored one), and
    evaluates the query's expressions over other rows (a delta term reads the sources after the changed one at the
    snapshots the last refresh consumed: rows the query at the pinned snapshots no longer holds, which the last
    refresh's own plan may never have evaluated, e.g. beside an empty join side), so under ANSI mode it can fail
    where the query over the pinned snapshots does not. Such a refresh recomputes, and fails only if the query
    itself does."""
    text = str(exc)
    if any(marker in text for marker in OVERFLOW_ERRORS):
        return FallbackReason.INCREMENTAL_OVERFLOW
    if any(marker in text for marker in VALUE_ERRORS):
        return FallbackReason.INCREMENTAL_VALUE_REFUSED
    return None


def _spark_error(exc: BaseException) -> str:
    """Spark's error class (``[CAST_INVALID_INPUT]``), without its message: the message quotes the refused value, a
    row of a source, and this text goes into the decision record (catalog metadata that ``read-metadata`` alone reads),
    lineage and Airflow's events."""
    text = str(exc)
    starts = [text.find(marker) for marker in (*OVERFLOW_ERRORS, *VALUE_ERRORS) if marker in text]
    if not starts:
        return type(exc).__name__
    start = min(starts)
    return text[start : text.index("]", start) + 1] + " (Spark's message, which quotes the value, is not kept)"


def _committed(refresh: Refresh, chosen: Chosen, write: Write | RowsWrite, text: str) -> RefreshOutcome:
    """Commit the write with the new refresh state (one snapshot), unless the refresh was cancelled meanwhile."""
    decision = chosen.decided(refresh, text)
    return refresh.commit(write, RefreshKind.INCREMENTAL, text, decision, read_snapshot=chosen.plan.table_snapshot)
