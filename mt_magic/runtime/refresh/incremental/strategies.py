"""The incremental strategies: each turns a :class:`RefreshPlan` and the registered deltas into one write.

Nothing here commits; :mod:`.commit` does, once. Every DataFrame is lazy until that commit, except the
small affected-slice collection (one action over the delta) that scoped strategies need first.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, reduce
from typing import TYPE_CHECKING, Any

from mt_magic.runtime.refresh.commit import TARGET, Write, WriteMode
from mt_magic.runtime.refresh.context import conform
from mt_magic.runtime.refresh.incremental import sum_mass
from mt_magic.runtime.refresh.incremental.delta import DeltaViews, delta_terms
from mt_magic.runtime.refresh.incremental.multisets import except_all
from mt_magic.runtime.refresh.incremental.planner import ADAPTIVE_MIN_ROWS, RefreshPlan
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy
from mt_magic.runtime.refresh.incremental.slices import Slices, SliceValues, all_of, collect_slices, sliceable_type
from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.sql.query.result_rewrite import (
    key_probe,
    window_probe,
    with_input_filter,
    without_having,
)
from mt_magic.sql.query.rewrite import pin_sources
from mt_magic.sql.query.tree import DIALECT

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

JOIN_KEY = "__mt_join_key"


@dataclass(frozen=True)
class Execution:
    """The write a strategy produced, and the strategy that actually ran (a merge can become a recompute)."""

    write: Write
    strategy: Strategy


@dataclass(frozen=True)
class TableLayout:
    """What decides how an unpartitioned table's touched slices are replaced (:func:`_in_place`)."""

    rows: int | None
    """The table's rows at the snapshot the refresh read (``None``: its summary does not say)."""
    data_files: int | None
    merge_on_read: bool
    """``write.merge.mode`` = merge-on-read: a ``MERGE`` writes delete files for the rows it removes."""
    max_fraction: float | None = None
    """ADAPTIVE: past this fraction of ``rows`` touched, a recompute writing the table once is cheaper than
    replacing them (the MERGE reads the table, deletes those rows and writes them again); ``None`` under
    ``'incremental' = 'always'``."""


@dataclass(frozen=True)
class StrategyContext:
    """Everything a strategy reads: the child session, the plan, the query and the registered deltas."""

    session: SparkSession
    plan: RefreshPlan
    query: str
    table: str
    views: DeltaViews
    single_task: bool = False
    """The delta and the table are small enough for one task: read them as one partition each, so the merge's
    aggregations need no shuffle and the whole refresh is one Spark stage (:func:`.attempt.sized_options`)."""
    layout: TableLayout = TableLayout(None, None, False)
    """The table's size, files and merge mode, and ADAPTIVE's bound on the rows a replacement touches."""

    @cached_property
    def current(self) -> DataFrame:
        """The table as of the snapshot the plan read (the commit validates it is still current)."""
        return self.one_task(table_at(self.session, self.table, self.plan.table_snapshot))

    def one_task(self, df: DataFrame) -> DataFrame:
        """``df`` as a single partition in single-task mode: an aggregation over it then needs no shuffle."""
        return df.coalesce(1) if self.single_task else df

    @cached_property
    def types(self) -> dict[str, str]:
        """The table's column → Spark type name."""
        return {f.name: f.dataType.simpleString() for f in self.current.schema.fields}

    def column(self, name: str) -> str:
        """The table's spelling of an output column name."""
        return next((c for c in self.types if c.lower() == name.lower()), name)

    def frames(self, query: str, deltas: dict[str, str]) -> list[DataFrame]:
        target = self.current
        terms = delta_terms(query, self.plan.changes, deltas, self.plan.query.branches, self.views.empty)
        return [conform(self.session.sql(t), target) for t in terms]

    def pinned(self, query: str) -> str:
        return pin_sources(query, {c.name: c.pinned for c in self.plan.changes})

    def pinned_to_keys(self, query: str, keys: SliceValues) -> str:
        """The query at the pinned snapshots with every source restricted to the join keys ``keys``.

        Exact for a keyed join: a result row with key K reads only sources' rows with key K, and a NULL key
        matches nothing, so the restricted query's rows are exactly the full query's rows with those keys.
        Literal filters on each source push down into its scan, also through a FULL join.

        A source whose key column has another type than the keys (``f.b = d.i``: BOOLEAN with INT, which the
        join compares in a type Spark chooses) is read whole: ``i IN (true)`` is no filter Spark accepts, and a
        cast of either side would guess the join's comparison. Unfiltered, it only adds rows of other keys,
        which the caller's ``where`` over the touched keys drops.
        """
        from pyspark.sql import functions as F

        views = {}
        for index, key in enumerate(self.plan.query.join_key):
            pinned = next(c.pinned for c in self.plan.changes if c.name == key.source)
            table = (
                table_at(self.session, key.source, pinned)
                if pinned is not None
                else self.session.table(qualified(key.source))
            )
            types = {f.name.lower(): f.dataType.simpleString() for f in table.schema.fields}
            if types.get(key.column.lower()) != keys.type_name:
                continue  # read whole, at its pinned snapshot (pin_sources)
            view = f"__mt_keyed_{index}_{uuid.uuid4().hex[:12]}"
            table.where(keys.member(F.col(identifier(key.column)))).createOrReplaceTempView(view)
            self.views.filtered.append(view)
            views[key.source] = view
        return pin_sources(query, {c.name: c.pinned for c in self.plan.changes}, views)

    def union(self, frames: list[DataFrame]) -> DataFrame:
        return self.one_task(reduce(lambda a, b: a.union(b), frames)) if frames else self.empty()

    def empty(self) -> DataFrame:
        from pyspark.sql import functions as F

        fields = self.current.schema.fields
        return self.session.range(0).select([F.lit(None).cast(f.dataType).alias(f.name) for f in fields])


def _cached(df: DataFrame) -> DataFrame:
    from pyspark import StorageLevel

    return df.persist(StorageLevel.MEMORY_AND_DISK)


def _partition_slices(ctx: StrategyContext, touched: DataFrame) -> dict[str, SliceValues] | Fallback | None:
    """Values of the partition columns in ``touched``; ``None`` when the write cannot be scoped.

    A :class:`Fallback` when a touched value is a string that is not valid UTF-8: Iceberg keeps an identity
    partition's value as text, so the table reads it back with U+FFFD and its rows cannot be matched with the
    change's (a recompute is stored the same way as any full refresh).
    """
    columns = [ctx.column(c) for c in ctx.plan.partition_columns]
    if not columns:
        return None
    types = ctx.types
    slices = collect_slices(touched, {c: types[c] for c in columns})
    if FallbackReason.VALUE_WITHOUT_LITERAL in slices.unlisted.values():
        return Fallback((FallbackReason.VALUE_WITHOUT_LITERAL,), ", ".join(slices.unlisted))
    return None if slices.unlisted else slices.found


@dataclass(frozen=True)
class PartitionScope:
    """The table partitions a change touches, for a write scoped to them."""

    region: Column
    """The table's rows in those partitions."""
    condition: Column
    """The same rows as an overwrite condition Iceberg translates."""
    scope: str
    empty: bool
    """The change touches no partition (nothing to write)."""


def _partition_scope(ctx: StrategyContext, changed: DataFrame) -> PartitionScope | Fallback | None:
    """The partitions holding a row of ``changed`` (read once: cache it first); ``None`` when the write cannot be
    scoped (:func:`_partition_slices`)."""
    values = _partition_slices(ctx, changed)
    if values is None or isinstance(values, Fallback):
        return values
    return PartitionScope(
        all_of([v.member() for v in values.values()]),
        all_of([v.overwrite_condition() for v in values.values()]),
        _scoped(values),
        any(v.empty for v in values.values()),
    )


def scope_line(counts: Mapping[str, int], what: str = "partitions") -> str:
    """E.g. "partitions ds (2 value(s))": the region a scoped write replaced, from each column's value count."""
    return f"{what} " + ", ".join(f"{c} ({n} value(s))" for c, n in counts.items())


def _scoped(values: dict[str, SliceValues], what: str = "partitions") -> str:
    return scope_line({c: len(v.values) + int(v.has_null) for c, v in values.items()}, what)


def no_change(ctx: StrategyContext, mass: Mapping[str, float] | None = None) -> Execution:
    """Record the new source snapshots, and the sums' mass (by default the recorded one: no input row changed)."""
    kept = ctx.plan.sum_mass if mass is None else mass
    return Execution(Write(ctx.empty(), WriteMode.APPEND, sum_mass=kept), Strategy.NO_LOGICAL_CHANGE)


def append_delta(ctx: StrategyContext) -> Execution:
    """Projection over appends: the new rows are the delta terms' rows."""
    return Execution(
        Write(ctx.union(ctx.frames(ctx.query, ctx.views.inserted)), WriteMode.APPEND), Strategy.APPEND_DELTA
    )


def apply_changes(ctx: StrategyContext) -> Execution | Fallback:
    """Projection with row-level changes: (table ⊎ inserted) ∖ deleted, as multisets, every value as stored
    (:func:`.multisets.except_all`: Spark's ``EXCEPT ALL`` would turn each -0.0 the table keeps into 0.0)."""
    inserted = ctx.union(ctx.frames(ctx.query, ctx.views.inserted))
    deleted = ctx.union(ctx.frames(ctx.query, ctx.views.deleted))
    if ctx.plan.partition_columns:
        inserted, deleted = _cached(inserted), _cached(deleted)
        ctx.views.cached.extend([inserted, deleted])
        values = _partition_slices(ctx, inserted.union(deleted))
        if isinstance(values, Fallback):
            return values
        if values is not None:
            if any(v.empty for v in values.values()):
                return no_change(ctx)
            region = all_of([v.member() for v in values.values()])
            df = except_all(ctx.one_task(ctx.current.where(region).union(inserted)), deleted)
            condition = all_of([v.overwrite_condition() for v in values.values()])
            return Execution(Write(df, WriteMode.OVERWRITE, condition, _scoped(values)), Strategy.APPLY_CHANGES)
    df = except_all(ctx.one_task(ctx.current.union(inserted)), deleted)
    return Execution(Write(df, WriteMode.OVERWRITE), Strategy.APPLY_CHANGES)


def _rollup_keys_non_null(ctx: StrategyContext) -> bool:
    """Rolled-up keys must never be NULL in the input, or a rolled-up row could be mistaken for a group."""
    try:
        schema = ctx.session.sql(ctx.pinned(key_probe(ctx.query, ctx.plan.query.rollup_keys))).schema
    except Exception:  # the probe could not be analysed (e.g. an alias used as a key): assume nullable
        return False
    return not any(f.nullable for f in schema.fields)


def combine_sql(relation: str, keys: Sequence[str], merge: Sequence[tuple[str, str]]) -> str:
    """The merge of stored groups with the delta's partial aggregates (both in ``relation``), as Spark SQL.

    One group per merge key; each merged column combined by its function (counts and sums add, minima and
    maxima take theirs); a DISTINCT-only query keeps each distinct row. Run by Spark here and, transpiled,
    by DuckDB in process (:mod:`.in_process`).
    """
    if not merge:
        return f"SELECT DISTINCT * FROM {relation}"
    columns = [identifier(k) for k in keys] + [f"{f}({identifier(c)}) AS {identifier(c)}" for c, f in merge]
    grouped = f" GROUP BY {', '.join(identifier(k) for k in keys)}" if keys else ""
    return f"SELECT {', '.join(columns)} FROM {relation}{grouped}"


def _probe(ctx: StrategyContext, terms: Sequence[str]) -> list[float]:
    """A mass probe's values, added up over ``terms`` (each one row: one value per summed expression)."""
    rows = [ctx.session.sql(term).first() for term in terms]
    return [sum(float(v or 0.0) for v in column) for column in zip(*(r for r in rows if r is not None), strict=True)]


def _sum_mass(ctx: StrategyContext) -> tuple[dict[str, float], list[str]]:
    """The at-risk sums' mass after the appended rows, probed by Spark (:func:`.sum_mass.after_delta`)."""
    ansi = sum_mass.ansi_mode({sum_mass.ANSI: str(ctx.session.conf.get(sum_mass.ANSI))})
    plan = ctx.plan
    return sum_mass.after_delta(
        ctx.query,
        plan.query.sums,
        plan.sum_mass,
        {name.lower(): type_name for name, type_name in ctx.types.items()},
        ansi,
        lambda probe: _probe(
            ctx, delta_terms(probe, plan.changes, ctx.views.inserted, plan.query.branches, ctx.views.empty)
        ),
        lambda probe: _probe(ctx, [ctx.pinned(probe)]),
    )


def _recompute_past_bound(ctx: StrategyContext, mass: Mapping[str, float]) -> Execution | Fallback:
    """The touched groups recomputed by Spark's query (its own order of adding), or a full recompute when no
    output column locates a group."""
    if not ctx.plan.query.slice_columns:
        return Fallback((FallbackReason.SUM_NEAR_BOUND,))
    result = affected_groups(ctx)
    if isinstance(result, Fallback):
        return result
    scope = f"{result.write.scope} · {sum_mass.NOTE}".lstrip(" ·")
    return Execution(replace(result.write, scope=scope, sum_mass=mass), result.strategy)


def _combine(ctx: StrategyContext, frame: DataFrame) -> DataFrame:
    view = f"__mt_merge_{uuid.uuid4().hex[:12]}"
    ctx.one_task(frame).createOrReplaceTempView(view)
    ctx.views.filtered.append(view)
    keys = [ctx.column(k) for k in ctx.plan.query.merge_keys]
    merge = [(ctx.column(c), f) for c, f in ctx.plan.query.merge]
    return conform(ctx.session.sql(combine_sql(identifier(view), keys, merge)), ctx.current)


def aggregate_merge(ctx: StrategyContext) -> Execution | Fallback:
    """Decomposable aggregates over appends: combine the delta's partial aggregates with stored groups."""
    if ctx.plan.query.rollup_keys and not _rollup_keys_non_null(ctx):
        if ctx.plan.query.slice_columns:
            return affected_groups(ctx)
        return Fallback((FallbackReason.GROUPS_NOT_LOCATABLE,), "rolled-up grouping keys may be NULL")
    mass, past = _sum_mass(ctx)
    if past:
        return _recompute_past_bound(ctx, mass)
    partial = ctx.union(ctx.frames(ctx.query, ctx.views.inserted))
    if ctx.plan.partition_columns:
        partial = _cached(partial)
        ctx.views.cached.append(partial)
        scoped = _partition_scope(ctx, partial)
        if isinstance(scoped, Fallback):
            return scoped
        if scoped is not None:
            if scoped.empty:
                return no_change(ctx, mass)
            df = _combine(ctx, ctx.current.where(scoped.region).union(partial))
            write = Write(df, WriteMode.OVERWRITE, scoped.condition, scoped.scope, mass)
            return Execution(write, Strategy.AGGREGATE_MERGE)
    df = _combine(ctx, ctx.current.union(partial))
    return Execution(Write(df, WriteMode.OVERWRITE, sum_mass=mass), Strategy.AGGREGATE_MERGE)


def _touched_join_keys(ctx: StrategyContext, type_name: str) -> tuple[Slices, Column]:
    """The join-key values in every changed source's delta, and the output expression that locates them."""
    from pyspark.sql import functions as F

    frames = [
        ctx.session.table(identifier(views[key.source])).select(
            F.col(identifier(key.column)).cast(type_name).alias(JOIN_KEY)
        )
        for key in ctx.plan.query.join_key
        for views in (ctx.views.inserted, ctx.views.deleted)
        if key.source in views
    ]
    assert frames, "an affected-keys refresh has a changed source"
    found = collect_slices(reduce(lambda a, b: a.union(b), frames), {JOIN_KEY: type_name})
    names = [ctx.column(c) for c in ctx.plan.query.slice_columns]
    located = [F.col(identifier(c)) for c in names]
    label = names[0] if len(names) == 1 else ", ".join(names)
    # one column, JOIN_KEY: listed or not
    values = {label: replace(found.found[JOIN_KEY], column=names[0])} if JOIN_KEY in found.found else {}
    unlisted = {label: found.unlisted[JOIN_KEY]} if JOIN_KEY in found.unlisted else {}
    return Slices(values, unlisted), located[0] if len(located) == 1 else F.coalesce(*located)


def _touched(ctx: StrategyContext, columns: list[str]) -> tuple[Slices, Column | None]:
    """The slice values the change touches; for join keys also the expression they locate rows by."""
    types = ctx.types
    if ctx.plan.strategy is Strategy.AFFECTED_KEYS:
        return _touched_join_keys(ctx, types[columns[0]])
    if ctx.plan.strategy is Strategy.AFFECTED_WINDOWS:
        probe = window_probe(ctx.query)
    else:
        probe = ctx.query if ctx.plan.query.branches else without_having(ctx.query)
    touched = ctx.frames(probe, ctx.views.inserted) + ctx.frames(probe, ctx.views.deleted)
    return collect_slices(ctx.union(touched), {c: types[c] for c in columns}), None


SLICED = (Strategy.AFFECTED_KEYS, Strategy.AFFECTED_WINDOWS)
"""Strategies that always run as an affected-slice recompute (their label names the slice)."""


SCOPED_MAX_VALUES = 50
"""Inside the table partitions a change touches, most values of a finer slice column worth listing.

Recomputing only the touched groups of a partition saves aggregation work but not the partition's scan
(unless the data is clustered by the group columns), and every listed value is a literal Spark parses,
analyses and evaluates on both the table and the source. Measured on 2 M rows (one day of ten touched,
``benchmarks/bench_incremental.py``): 200 touched items took 1.1 s, 2,000 took 2.5 s, the whole day 0.9 s.
Past this many values (a cautious bound below the 200 measured) the slice is the whole partition — coarser,
so still exact."""


def _coarsened(values: dict[str, SliceValues], partitions: list[str], keyed: bool) -> dict[str, SliceValues]:
    """``values`` without the finer slice columns when the touched partitions already bound the write and
    those columns list more than :data:`SCOPED_MAX_VALUES` values (a join key is never split: kept whole)."""
    if keyed or not partitions or not all(p in values for p in partitions):
        return values
    finer = [c for c in values if c not in partitions]
    if all(len(values[c].values) <= SCOPED_MAX_VALUES for c in finer):
        return values
    return {p: values[p] for p in partitions}


def affected_groups(ctx: StrategyContext) -> Execution | Fallback:
    """Collect the slice values the change touches, recompute those slices at the new snapshots, replace.

    Slices are aggregate groups, window partitions or join keys (:class:`~.shape.QueryShape`); which
    one only changes how the touched values are found (:func:`_touched`).
    """
    types = ctx.types
    columns = [ctx.column(c) for c in ctx.plan.query.slice_columns]
    columns = [c for c in columns if sliceable_type(types[c])]
    keyed = bool(ctx.plan.query.join_key)  # a join key is located by all its columns at once (COALESCE)
    if not columns or (keyed and len(columns) < len(ctx.plan.query.slice_columns)):
        return Fallback((FallbackReason.GROUPS_NOT_LOCATABLE,), "no group column of a sliceable type")
    slices, located = _touched(ctx, columns)
    values = slices.found  # an unlisted column only makes the slice coarser, while another one is listed
    if not values:
        return Fallback((slices.why_unlisted(),), ", ".join(slices.unlisted))
    if any(v.empty for v in values.values()):
        return no_change(ctx)
    partitions = [ctx.column(c) for c in ctx.plan.partition_columns]
    values = _coarsened(values, partitions, keyed)
    replaced = all_of([v.member(located) for v in values.values()])
    fresh = _recomputed(ctx, values, replaced, keyed)
    strategy = ctx.plan.strategy if ctx.plan.strategy in SLICED else Strategy.AFFECTED_GROUPS
    if partitions and all(p in values for p in partitions):
        scope = {p: values[p] for p in partitions}
        region = all_of([v.member() for v in scope.values()])
        df = fresh if len(scope) == len(values) else ctx.current.where(region & ~replaced).union(fresh)
        condition = all_of([v.overwrite_condition() for v in scope.values()])
        if strategy is Strategy.AFFECTED_GROUPS:
            strategy = Strategy.AFFECTED_PARTITIONS
        return Execution(Write(df, WriteMode.OVERWRITE, condition, _scoped(scope)), strategy)
    what = {Strategy.AFFECTED_KEYS: "join keys", Strategy.AFFECTED_WINDOWS: "window partitions"}.get(strategy, "groups")
    rows = _replaced_rows(values, [ctx.column(c) for c in ctx.plan.query.slice_columns] if keyed else None)
    in_place = _in_place(ctx, replaced, rows)
    if isinstance(in_place, Fallback):
        return in_place
    if in_place and rows is not None:  # only the rows of the touched slices are replaced (one MERGE)
        write = Write(fresh, WriteMode.REPLACE_ROWS, None, f"{_scoped(values, what)} · {ROWS_NOTE}", replaced=rows)
        return Execution(write, strategy)
    df = ctx.current.where(~replaced).union(fresh)
    return Execution(Write(df, WriteMode.OVERWRITE, None, _scoped(values, what)), strategy)


def _recomputed(ctx: StrategyContext, values: dict[str, SliceValues], replaced: Column, keyed: bool) -> DataFrame:
    """The query's rows of the slices ``values`` lists, at the pinned snapshots (``replaced`` selects them)."""
    predicates = [values[ctx.column(c)].predicate(key) for c, key in ctx.plan.query.pushdown if ctx.column(c) in values]
    query = with_input_filter(ctx.query, [p for p in predicates if p is not None])
    sql = ctx.pinned_to_keys(query, next(iter(values.values()))) if keyed else ctx.pinned(query)
    return conform(ctx.session.sql(sql), ctx.current).where(replaced)


UNSAFE, GONE, SIDE_OF = "__mt_unsafe", "__mt_gone", "__mt_from"
EXACT_TYPES = frozenset(
    {"tinyint", "smallint", "int", "bigint", "string", "date", "timestamp", "timestamp_ntz", "boolean"}
)
"""Result types (with ``decimal(p,s)``) a retraction computes exactly as Spark's aggregate would: integers
(wrapping as Spark's sum does, ANSI off), decimals (exact below the sum's bound, :mod:`.sum_mass`), and the
ordered types MIN and MAX compare. Floating point keeps its group recompute: NaN, -0.0 and the adding order make
Spark's answer order-dependent."""


def retract_sql(relation: str, keys: Sequence[str], retract: Sequence[tuple[str, str]], non_null: set[str]) -> str:
    """One row per group of ``relation`` (the table's rows, the added rows' and the removed rows' partial
    aggregates, tagged 0, 1 and 2 in ``__mt_from``): each column's new value, whether the group must be recomputed
    (``__mt_unsafe``) and whether it has no rows left (``__mt_gone``). Spark SQL.

    Args:
        retract: (column, kind) — ``rows`` (``count(*)``), ``count``, ``sum``, ``filtered sum`` (``FILTER (WHERE …)``:
            NULL when no row passes, whatever its values), ``min``, ``max``.
        non_null: unfiltered sum columns whose summed expression is never NULL (NULL only with no rows).
    """

    def at(column: str, side: int) -> str:
        return f"{identifier(f'{column}__{side}')}"

    sides = [
        f"first(IF({SIDE_OF} = {side}, {identifier(c)}, NULL), true) AS {at(c, side)}"
        for c, _ in retract
        for side in (0, 1, 2)
    ]
    rows = next(c for c, kind in retract if kind == "rows")
    remaining = f"(coalesce({at(rows, 0)}, 0) - coalesce({at(rows, 2)}, 0) + coalesce({at(rows, 1)}, 0))"
    values, unsafe = [], [f"{remaining} < 0"]
    for column, kind in retract:
        old, added, removed = at(column, 0), at(column, 1), at(column, 2)
        if kind in ("rows", "count"):
            value = f"coalesce({old}, 0) - coalesce({removed}, 0) + coalesce({added}, 0)"
        elif kind in ("sum", "filtered sum"):
            kept = f"CASE WHEN {old} IS NULL THEN {added} WHEN {added} IS NULL THEN {old} ELSE {old} + {added} END"
            value = (
                f"CASE WHEN {removed} IS NULL THEN {kept} WHEN {added} IS NULL THEN {old} - {removed} "
                f"ELSE ({old} - {removed}) + {added} END"
            )
            unsafe.append(f"({removed} IS NOT NULL AND {old} IS NULL)")
            if kind != "sum" or column not in non_null:  # every counted value may be gone: a recompute tells
                unsafe.append(f"({removed} IS NOT NULL AND {added} IS NULL)")
        else:
            extreme, beaten = ("greatest", ">=") if kind == "max" else ("least", "<=")
            value = f"{extreme}({old}, {added})"  # Spark's greatest and least skip NULLs
            # the extreme may have gone with a removed row, unless an added row reaches it (then it is the new one)
            unsafe.append(
                f"({removed} IS NOT NULL AND ({old} IS NULL OR {removed} {beaten} {old}) "
                f"AND NOT coalesce({added} {beaten} {old}, false))"
            )
        values.append(f"{value} AS {identifier(column)}")
    grouped = ", ".join(identifier(k) for k in keys)
    return (
        f"SELECT {grouped}, {', '.join(values)}, {' OR '.join(unsafe)} AS {UNSAFE}, {remaining} = 0 AS {GONE} "
        f"FROM (SELECT {grouped}, {', '.join(sides)} FROM {relation} GROUP BY {grouped})"
    )


def _non_null_sums(ctx: StrategyContext) -> set[str]:
    """The sum columns whose summed expression is never NULL at the pinned snapshot: Spark's analysis calls it
    non-nullable (no job runs), or it is a source column that no live data file counts a NULL in (the files'
    ``null_value_counts``: deletes only remove rows, so a count of 0 in every file means no NULL anywhere)."""
    sums = [(ctx.column(c), e) for c, e in ctx.plan.query.sums]
    if not sums:
        return set()
    try:
        fields = ctx.session.sql(ctx.pinned(key_probe(ctx.query, [e for _, e in sums]))).schema.fields
    except Exception:  # the probe could not be analysed: assume every sum nullable (a recompute decides)
        return set()
    found = {c for (c, _), f in zip(sums, fields, strict=True) if not f.nullable}
    (change,) = ctx.plan.changes  # a retraction has one source
    return found | sums_without_nulls(sums, change.iceberg, change.pinned)


def sums_without_nulls(sums: Sequence[tuple[str, str]], table: Any, snapshot: int | None) -> set[str]:
    """The (column, summed expression) sums whose expression is a source column that no data file of ``table``
    (pyiceberg) live at ``snapshot`` counts a NULL in (:func:`_columns_without_nulls`)."""
    without = _columns_without_nulls(table, snapshot)
    return {c for c, e in sums if e.replace("`", "").split(".")[-1].lower() in without}


def _columns_without_nulls(table: Any, snapshot: int | None) -> frozenset[str]:
    """The top-level columns (lower case) of a pyiceberg ``table`` that no data file live at ``snapshot`` counts a
    NULL in; empty when a file has no such count (metrics off) or the table is not at hand."""
    if table is None or snapshot is None:
        return frozenset()
    ids = {field.field_id: field.name.lower() for field in table.schema().fields}
    nulls: set[int] = set()  # a NULL counted, or no count
    try:
        for task in table.scan(snapshot_id=snapshot).plan_files():
            counts = task.file.null_value_counts or {}
            nulls |= {i for i in ids if counts.get(i, 1) != 0}
    except ValueError:  # pyiceberg refuses to plan a snapshot holding an equality delete
        return frozenset()
    return frozenset(name for i, name in ids.items() if i not in nulls)


def aggregate_retract(ctx: StrategyContext) -> Execution | Fallback:
    """A GROUP BY over one source after updates and deletes: subtract the removed rows' partial aggregates from the
    stored groups, add the added rows', drop the groups left with no rows, and recompute at the pinned snapshot
    only the groups whose MIN/MAX lost its extreme or whose SUM may have lost every non-NULL value."""
    from pyspark.sql import functions as F

    plan = ctx.plan.query
    types = ctx.types
    retract = [(ctx.column(c), kind) for c, kind in plan.retract]
    keys = [ctx.column(k) for k in plan.merge_keys]
    exact = all(types[c] in EXACT_TYPES or types[c].startswith("decimal(") for c, _ in retract)
    located = {k: types[k] for k in keys if sliceable_type(types[k])}
    if not exact or not located or set(types) != {*keys, *(c for c, _ in retract)}:
        return affected_groups(ctx)
    mass, past = _sum_mass(ctx)
    if past:
        return _recompute_past_bound(ctx, mass)
    tagged = [
        _combine(ctx, ctx.union(ctx.frames(ctx.query, views))).withColumn(SIDE_OF, F.lit(side))
        for side, views in ((1, ctx.views.inserted), (2, ctx.views.deleted))
    ]
    stored, condition, scopes = ctx.current, None, []
    if ctx.plan.partition_columns:  # only the partitions holding a changed group are read and overwritten
        changed = _cached(tagged[0].unionByName(tagged[1]))
        ctx.views.cached.append(changed)
        scoped = _partition_scope(ctx, changed)
        if isinstance(scoped, Fallback):
            return scoped
        if scoped is not None:
            if scoped.empty:
                return no_change(ctx, mass)
            stored, condition = ctx.current.where(scoped.region), scoped.condition
            scopes.append(scoped.scope)
    relation = f"__mt_retract_{uuid.uuid4().hex[:12]}"
    ctx.one_task(
        reduce(lambda a, b: a.unionByName(b), [stored.withColumn(SIDE_OF, F.lit(0)), *tagged])
    ).createOrReplaceTempView(relation)
    ctx.views.filtered.append(relation)
    merged = _cached(ctx.session.sql(retract_sql(identifier(relation), keys, retract, _non_null_sums(ctx))))
    ctx.views.cached.append(merged)
    columns = [identifier(c) for c in types]
    kept = merged.where(~F.col(UNSAFE) & ~F.col(GONE))
    slices = collect_slices(merged.where(F.col(UNSAFE) & ~F.col(GONE)), located)
    values = {} if any(v.empty for v in slices.found.values()) else slices.found  # empty: no group to recompute
    if slices.unlisted and not slices.found:
        return affected_groups(ctx)
    if values:
        region = all_of([v.member() for v in values.values()])
        kept = kept.where(~region).select(*columns).union(_recomputed(ctx, values, region, False).select(*columns))
        scopes.append(f"{_scoped(values, 'groups')} recomputed")
    else:
        kept = kept.select(*columns)
    write = Write(conform(kept, ctx.current), WriteMode.OVERWRITE, condition, " · ".join(scopes), mass)
    return Execution(write, Strategy.AGGREGATE_RETRACT)


def _in_place(ctx: StrategyContext, replaced: Column, rows: str | None) -> bool | Fallback:
    """Whether the touched slices' rows are replaced in place (one MERGE) rather than the table rewritten, or a
    recompute (ADAPTIVE: they hold more than its fraction of a table of :data:`ADAPTIVE_MIN_ROWS` or more).

    Merge-on-read replaces in place always: it writes delete files for those rows only. Copy-on-write rewrites
    every data file holding one, so in place only when some data file holds none: when all do, the MERGE rewrites
    the whole table and joins it with the new rows too, more work than the overwrite. The rows and files touched
    are counted on the table in one query reading the slice columns, when a decision needs them.
    """
    layout = ctx.layout
    adaptive = layout.max_fraction is not None and (layout.rows or 0) >= ADAPTIVE_MIN_ROWS
    files = rows is not None and not layout.merge_on_read and (layout.data_files or 0) > 1
    if not adaptive and not files:
        return rows is not None and layout.merge_on_read
    if rows is not None:
        at = int(ctx.plan.table_snapshot)
        counted = ctx.session.sql(
            f"SELECT count(*) AS n, count(DISTINCT _file) AS f FROM {qualified(ctx.table)} VERSION AS OF {at} "
            f"AS {TARGET} WHERE {rows}"
        ).first()
        touched, touched_files = (int(counted["n"]), int(counted["f"])) if counted is not None else (0, 0)
    else:
        touched, touched_files = ctx.current.where(replaced).count(), 0
    if adaptive and layout.rows and layout.max_fraction is not None and touched > layout.max_fraction * layout.rows:
        return Fallback(
            (FallbackReason.CHEAPER_TO_RECOMPUTE,),
            f"the change touches {touched:,} of the table's {layout.rows:,} rows ({touched / layout.rows:.0%}), "
            f"past {layout.max_fraction:.0%}",
        )
    return rows is not None and (layout.merge_on_read or touched_files < (layout.data_files or 0))


ROWS_NOTE = "their rows replaced in place"
"""The scope note of a write that replaced only the touched slices' rows (:attr:`WriteMode.REPLACE_ROWS`)."""


def _replaced_rows(values: dict[str, SliceValues], key_columns: list[str] | None) -> str | None:
    """The touched slices' rows of the table as a SQL predicate on the ``MERGE`` target (the rows
    ``SliceValues.member`` selects); ``None`` when a value has no SQL literal (the whole table is rewritten).

    Args:
        key_columns: for a join key, the output columns that locate it (the first non-NULL of them).
    """
    if key_columns is not None:
        located = [f"{TARGET}.{identifier(c)}" for c in key_columns]
        key_sql = located[0] if len(located) == 1 else f"coalesce({', '.join(located)})"
        predicates = [v.predicate(key_sql) for v in values.values()]
    else:
        predicates = [v.predicate(f"{TARGET}.{identifier(v.column)}") for v in values.values()]
    if not predicates or any(p is None for p in predicates):
        return None
    return " AND ".join(f"({p.sql(dialect=DIALECT)})" for p in predicates if p is not None)


def execute(ctx: StrategyContext) -> Execution | Fallback:
    """Run the plan's strategy (lazily, except the affected-slice action) and return its write."""
    strategy = ctx.plan.strategy
    if strategy is Strategy.NO_LOGICAL_CHANGE:
        return no_change(ctx)
    if strategy is Strategy.APPEND_DELTA:
        return append_delta(ctx)
    if strategy is Strategy.APPLY_CHANGES:
        return apply_changes(ctx)
    if strategy is Strategy.AGGREGATE_MERGE:
        return aggregate_merge(ctx)
    if strategy is Strategy.AGGREGATE_RETRACT:
        return aggregate_retract(ctx)
    return affected_groups(ctx)
