"""``%mt explain``: how a materialized table (existing, or a CREATE not yet run) would be refreshed, and why.

Metadata only — sqlglot facts, the static plan, table properties and snapshot summaries through pyiceberg —
so explaining never starts a Spark job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.audit import on_spark
from mt_magic.runtime.refresh.context import is_strict
from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.in_process import engine_line, partitioning_reason
from mt_magic.runtime.refresh.incremental.in_process.eligibility import declared_columns, table_columns
from mt_magic.runtime.refresh.incremental.planner import plan_refresh
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy
from mt_magic.runtime.refresh.incremental.row_identity import storage_query
from mt_magic.runtime.refresh.incremental.shape import QueryPlan, QueryShape, plan_query
from mt_magic.runtime.status import RefreshRecord
from mt_magic.sql.ddl.options import CONVERT_OPTION
from mt_magic.sql.ddl.statements import CreateMaterializedTable
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.in_process_gate import spark_sql_type
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshMode, is_hidden_column

if TYPE_CHECKING:
    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.runtime.workspace import Workspace

ROW_LEVEL_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")


@dataclass(frozen=True)
class SourcePlan:
    """How one source's changes reach the table."""

    name: str
    on_appends: str
    on_changes: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Explanation:
    """What refreshes of one materialized table do; ``str()`` is the text ``%mt explain`` prints."""

    table: str
    mode: RefreshMode
    """``CONTINUOUS`` or ``FULL``."""
    strict: bool
    plan: QueryPlan
    sources: tuple[SourcePlan, ...]
    partition_columns: tuple[str, ...] = ()
    next_refresh: str = ""
    """For an existing table: what a refresh started now would do."""
    engine: str = ""
    """Where incremental refreshes of appends run (:func:`.in_process.engine_line`); empty when none do."""
    spark_jobs: str = ""
    """How many Spark jobs the table's newest refreshes of each kind ran (:func:`spark_jobs_line`); empty when this
    process measured none."""

    @property
    def on_appends(self) -> Strategy | None:
        return self.plan.strategy_for(ChangeKind.APPENDS)

    @property
    def on_changes(self) -> Strategy | None:
        return self.plan.strategy_for(ChangeKind.ROW_LEVEL)

    @property
    def fallback_reasons(self) -> tuple[FallbackReason, ...]:
        return self.plan.fallback.reasons if self.plan.fallback else ()

    def _strategy_lines(self) -> list[str]:
        if self.plan.fallback is not None:
            reasons = [f"    - {r.sentence} [{r.name}]" for r in self.fallback_reasons]
            return ["  every refresh recomputes fully:", *reasons]
        scoped = [
            c
            for c in self.partition_columns
            if c.lower() in {k.lower() for k in (*self.plan.slice_columns, *self.plan.merge_keys)}
        ]
        lines = []
        for label, strategy in (("on appends", self.on_appends), ("on updates/deletes", self.on_changes)):
            text = strategy.label if strategy else f"full recompute ({FallbackReason.GROUPS_NOT_LOCATABLE.sentence})"
            lines.append(f"  {label + ':':<20}{text}")
        if self.plan.slice_columns:
            labels: dict[QueryShape | None, str] = {
                QueryShape.KEYED_JOIN: "join key shown by:",
                QueryShape.WINDOW: "window partitions:",
            }
            label = labels.get(self.plan.shape, "groups located by:")
            lines.append(
                f"  {label:<20}{', '.join(self.plan.slice_columns)}"
                + (" (hidden: users do not see it)" if any(map(is_hidden_column, self.plan.slice_columns)) else "")
                + (f" (input filtered by {', '.join(c for c, _ in self.plan.pushdown)})" if self.plan.pushdown else "")
            )
        if scoped and len(scoped) == len(self.partition_columns):
            lines.append(f"  {'writes:':<20}only the partitions the change touches ({', '.join(scoped)})")
        return lines

    def __str__(self) -> str:
        head = f"{self.table}: {self.mode.value}"
        if self.mode is not RefreshMode.CONTINUOUS:
            head += " — every refresh recomputes (incremental refresh applies to CONTINUOUS tables)"
        elif self.strict:
            head += " — 'incremental' = 'strict': a refresh that cannot be incremental fails"
        shape = self.plan.shape.value if self.plan.shape else "not incrementally maintainable"
        lines = [
            head,
            f"  {'query:':<20}{shape}"
            + (f", delta joins over {self.plan.joins} sources" if self.plan.delta_joins else ""),
        ]
        lines += self._strategy_lines()
        if self.engine:
            lines.append(f"  {'engine:':<20}{self.engine}")
        if self.spark_jobs:
            lines.append(f"  {'spark jobs:':<20}{self.spark_jobs}")
        lines.append("  sources:")
        for source in self.sources:
            lines.append(f"    {source.name}: appends → {source.on_appends}; updates/deletes → {source.on_changes}")
            lines += [f"      note: {n}" for n in source.notes]
        if self.next_refresh:
            lines.append(f"  {'next refresh:':<20}{self.next_refresh}")
        return "\n".join(lines)


def spark_jobs_line(records: Sequence[RefreshRecord]) -> str:
    """The Spark jobs the newest measured refresh of each strategy ran, from ``records`` (newest first), e.g.
    "full 2 · incremental: apply inserts and deletes 4 · incremental: merge the signed delta, in process 0"
    (empty: none measured; another process's refreshes are not measured here).

    >>> from datetime import datetime, timedelta, timezone
    >>> from mt_magic.runtime.status import Decision, Measured
    >>> from mt_magic.vocabulary import RefreshKind, RefreshTrigger
    >>> def record(strategy, jobs):
    ...     kind = RefreshKind.FULL if strategy.startswith("full") else RefreshKind.INCREMENTAL
    ...     decision = Decision(kind, strategy, measured=Measured(spark_jobs=jobs))
    ...     return RefreshRecord(kind, RefreshTrigger.MANUAL, datetime.now(timezone.utc), timedelta(0), 0, 1,
    ...                          strategy=strategy, decision=decision)
    >>> spark_jobs_line([record("full recompute", 2), record("full: fallback — …", 3), record("incremental: x", 4)])
    'full 2 · incremental: x 4'
    """
    newest: dict[str, int] = {}
    for record in records:
        jobs = record.decision.measured.spark_jobs if record.decision is not None else None
        strategy = "full" if record.kind is RefreshKind.FULL else record.strategy.split(" · ")[0]
        if record.engine is RefreshEngine.IN_PROCESS:
            strategy += ", in process"
        if jobs is not None and strategy and strategy not in newest:
            newest[strategy] = jobs
    return " · ".join(f"{strategy} {jobs}" for strategy, jobs in newest.items())


def _source_plan(info: TableInfo | None, name: str) -> SourcePlan:
    if info is None:
        return SourcePlan(name, "?", "?", ("the table does not exist",))
    notes = []
    mor = [k for k in ROW_LEVEL_MODES if info.properties.get(k, "copy-on-write") == "merge-on-read"]
    deletes = int((info.snapshots[-1].summary.get("total-delete-files", "0") if info.snapshots else "0") or 0)
    on_changes = "changelog (copy-on-write)"
    if mor:
        notes.append(
            f"{', '.join(mor)} = merge-on-read: such writes add delete files, read from the data files they touch"
        )
    if deletes or mor:
        on_changes = "rows of the data files the delete files touch, at both snapshots (merge-on-read)"
        on_changes += f"; {deletes} delete file(s) present" if deletes else ""
    if info.definition is not None:
        notes.append("a materialized table: its overwriting refreshes arrive here as row-level changes")
    return SourcePlan(name, "incremental append scan", on_changes, tuple(notes))


def _load(ws: Workspace, name: str) -> TableInfo | None:
    try:
        return ws.catalog.load(name)
    except Exception:
        return None


def _describe_next(
    ws: Workspace, info: TableInfo, definition: MaterializedTableDefinition, sources: list[TableInfo | None]
) -> str:
    """What a refresh of ``info`` started now would do under ``definition`` (its own, or a change's not yet
    written: the refresh's own decision, :func:`plan_refresh`)."""
    if info.last_refresh() is None:
        return "the first refresh (full) has not committed yet"
    if any(s is None for s in sources):
        return "a source is missing: the refresh will fail"
    plan = plan_refresh(info, definition, [s for s in sources if s is not None])
    if isinstance(plan, Fallback):
        return f"full: fallback — {plan.describe()}"
    if plan.strategy is Strategy.NO_LOGICAL_CHANGE and all(c.consumed == c.pinned for c in plan.changes):
        return "nothing to do (no source changed)"
    return f"incremental: {plan.strategy.label} (" + "; ".join(c.describe() for c in plan.changes if c.changed) + ")"


def explain(ws: Workspace, target: CreateMaterializedTable | str) -> Explanation:
    """Explain the refreshes of a materialized table.

    Args:
        ws: the kernel's workspace (catalog and defaults).
        target: a parsed CREATE (explained before it runs) or the qualified name of an existing table.

    Raises:
        NoSuchMaterializedTableError: ``target`` names no materialized table.
        MtMagicError: the statement's query or freshness is invalid.
    """
    from mt_magic.sql.ddl.freshness import resolve_schedule
    from mt_magic.sql.query.rewrite import qualify_sources

    if not isinstance(target, CreateMaterializedTable):
        info, definition = ws.catalog.load_materialized(target)
        return explain_definition(ws, info, definition)
    name = ws.qualify(target.name)
    label = f"CREATE MATERIALIZED TABLE {target.name}"
    analyze_query(target.query, statement=label, origin=target.query_position)  # refused where it is
    known = frozenset({ws.catalog.spark_name.lower(), "spark_catalog"})
    query, upstream = qualify_sources(target.query, ws.catalog.spark_name, ws.default_namespace, known)
    if CONVERT_OPTION not in {k.lower() for k in target.options_dict}:
        query = storage_query(query)  # the hidden key columns CREATE would add
    mode = resolve_schedule(target.freshness, target.refresh_mode, ws.rules).mode
    sources = [_load(ws, s) for s in upstream]
    plan = plan_query(analyze_query(query))
    maintained = mode is RefreshMode.CONTINUOUS and plan.fallback is None
    options = on_spark(target.options_dict, target.expectations)
    partitioning = partitioning_reason(("bucket",) if target.distribution is not None else ())
    return Explanation(
        table=name,
        mode=mode,
        strict=is_strict(options),
        plan=plan,
        sources=tuple(_source_plan(i, n) for i, n in zip(sources, upstream, strict=True)),
        partition_columns=tuple(target.partitioned_by),
        engine=engine_line(options, plan, partitioning, query, sources, declared_columns(target.columns), None)
        if maintained
        else "",
    )


def explain_definition(
    ws: Workspace,
    info: TableInfo,
    definition: MaterializedTableDefinition,
    appended: Sequence[tuple[str, str]] = (),
) -> Explanation:
    """Explain the refreshes of the existing table ``info`` under ``definition``: its own, or the one a change
    (``ALTER … AS``, ``SET REFRESH_MODE``, …) would write, previewed before it is (``inspect.change_preview``), with
    the columns it would append (``appended``: name and Spark SQL type) among the table's."""
    query, upstream, mode = definition.expanded_query, definition.upstream, definition.refresh_mode
    partitioning = partitioning_reason(info.partition_transforms, info.partition_spec_count)
    options = {**info.properties, **dict(definition.options), "format-version": str(info.format_version)}
    options = on_spark(options, definition.expectations)  # a table with expectations refreshes on Spark
    sources = [_load(ws, s) for s in upstream]
    plan = plan_query(analyze_query(query))
    maintained = mode is RefreshMode.CONTINUOUS and plan.fallback is None
    continuous = mode is RefreshMode.CONTINUOUS
    columns = [*table_columns(info), *((name, spark_sql_type(kind)) for name, kind in appended)]
    return Explanation(
        table=info.name,
        mode=mode,
        strict=is_strict(options),
        plan=plan,
        sources=tuple(_source_plan(i, n) for i, n in zip(sources, upstream, strict=True)),
        partition_columns=definition.partitioned_by,
        next_refresh=_describe_next(ws, info, definition, sources) if continuous else "",
        engine=engine_line(options, plan, partitioning, query, sources, columns, definition.sql_settings)
        if maintained
        else "",
    )


REASON_SEPARATOR = " · "
"""Between the schedule's reason and the static plan in a stored mode reason."""


def mode_reason(schedule_reason: str, mode: RefreshMode, expanded_query: str) -> str:
    """CREATE's mode reason with the static plan, e.g. "… → CONTINUOUS · incremental (… on appends; …)"."""
    if mode is not RefreshMode.CONTINUOUS:
        return schedule_reason
    try:
        plan = plan_query(analyze_query(expanded_query))
    except Exception:  # the reason is informative only; Spark has already validated the query
        return schedule_reason
    return f"{schedule_reason}{REASON_SEPARATOR}{plan.describe()}"


def replanned_mode_reason(stored: str, mode: RefreshMode, expanded_query: str) -> str:
    """A stored mode reason with its plan part redone for a new query (ALTER … AS); the schedule part stays."""
    return mode_reason(stored.split(REASON_SEPARATOR, 1)[0], mode, expanded_query)


def strict_violation(mode: RefreshMode, expanded_query: str) -> str | None:
    """Why ``'incremental' = 'strict'`` can never hold for this table, or ``None`` when it can."""
    if mode is not RefreshMode.CONTINUOUS:
        return f"the table refreshes in {mode.value} mode, which always recomputes"
    plan = plan_query(analyze_query(expanded_query))
    return plan.fallback.describe() if plan.fallback is not None else None
