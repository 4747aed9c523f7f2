"""What a definition query's shape allows, before any source changes: the static half of the planner.

Pure: it reads :class:`~mt_magic.sql.query.facts.QueryFacts` (sqlglot facts) and decides which strategies are
correct for appends and for row-level changes, or every reason the query can never be maintained
incrementally. The same plan feeds CREATE's mode reason, ``%mt explain`` and each refresh.

Correctness rests on two properties of the supported shapes:

* a projection/filter/inner-join query is *multilinear* in its sources (as multisets), so its change is the
  union of delta terms Q(S₁new … Sᵢ₋₁new, ΔSᵢ, Sᵢ₊₁old …); a UNION ALL of such branches over disjoint
  sources is their sum, so its term for Sᵢ is Sᵢ's branch term with the other branches empty (a UNION is
  DISTINCT over that sum: an aggregation by every column);
* an aggregating query's output row depends only on its group's input rows, and a key-derived output
  column (a grouping expression or a function of them) has one value per group, so replacing every row
  whose key columns take a value the change touched — by the recomputed rows with those values — is exact;
* the same slice argument holds for a window's partitions (a row's window values depend only on its
  partition) and for outer, semi and anti joins on one equi-join key (a result row's joined rows, and the
  absence of matches that NULL-extends it, all have its key value; a NULL key never matches, so each
  NULL-key row depends on its own source row only, and the NULL slice is recomputed whole);
* a keyed join is still linear in its *preserved* tables (present in every result row: the FROM table of
  LEFT, SEMI and ANTI joins, the right table of a RIGHT join, inner-joined tables): with the other tables
  fixed, each of their rows yields its own result rows. A change to preserved tables alone is therefore a
  sum of delta terms — appended or applied, not recomputed by key.
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy
from mt_magic.sql.query.facts import JoinKind, KeyColumn, OutputColumn, OutputKind, QueryFacts
from mt_magic.sql.query.result_rewrite import summed_expression

COMBINE = {"count": "sum", "sum": "sum", "min": "min", "max": "max"}
"""Decomposable aggregates → how partial results combine (counts and sums add)."""


class QueryShape(enum.Enum):
    """The two shapes incremental refresh maintains."""

    PROJECTION = "projection/filter"
    """Select-project-(inner-)join: no aggregation anywhere."""
    AGGREGATE = "aggregation"
    """GROUP BY, aggregates or SELECT DISTINCT in the outermost SELECT, a projection/join below it."""
    KEYED_JOIN = "outer/semi/anti join on one key"
    """A projection of LEFT/RIGHT/FULL/SEMI/ANTI joins of tables sharing one equi-join key, shown in the output."""
    WINDOW = "window functions over partitions"
    """Window functions partitioned by an output column (possibly filtered by an outer SELECT: top-N)."""


@dataclass(frozen=True)
class QueryPlan:
    """The strategies a query's shape allows, or why it allows none."""

    shape: QueryShape | None
    fallback: Fallback | None = None
    """Set when the shape rules incremental refresh out for every change."""
    merge: tuple[tuple[str, str], ...] = ()
    """Aggregate-merge columns: (output column, combine function); empty when merging is not correct."""
    merge_keys: tuple[str, ...] = ()
    """Output columns the merge groups by (group keys and expressions of them)."""
    sums: tuple[tuple[str, str], ...] = ()
    """The merged ``sum`` columns: (output column, the summed expression in the result SELECT's scope)."""
    rollup_keys: tuple[str, ...] = ()
    """Grouping expressions missing from some grouping set: a merge needs them non-nullable."""
    slice_columns: tuple[str, ...] = ()
    """Output columns that locate groups (key-derived), for affected-groups recompute."""
    pushdown: tuple[tuple[str, str], ...] = ()
    """(output column, grouping expression) pairs whose filter may be added to the aggregation's input."""
    join_key: tuple[KeyColumn, ...] = ()
    """A keyed join's key column in each source (their values in the deltas are the affected keys)."""
    branches: tuple[frozenset[str], ...] = ()
    """A UNION's sources per branch: a delta term reads the other branches' sources as empty."""
    linear_sources: frozenset[str] = frozenset()
    """A keyed join's preserved tables (lower case): a change to these alone is a sum of delta terms."""
    joins: int = 0
    retract: tuple[tuple[str, str], ...] = ()
    """The merge columns with what each retracts as (``rows``: ``count(*)``; ``count``, ``sum``, ``filtered sum``,
    ``min``, ``max``)
    when row-level changes merge too (:func:`_retractable`); empty otherwise."""

    @property
    def mergeable(self) -> bool:
        """Aggregate merge is correct over appends (a DISTINCT-only query merges by its keys alone)."""
        return bool(self.merge or self.merge_keys)

    @property
    def delta_joins(self) -> bool:
        """Several sources joined (inner) whose change is a sum of delta terms, one per source."""
        summed = self.shape in (QueryShape.PROJECTION, QueryShape.AGGREGATE) and not self.branches
        return summed and self.joins > 1

    def linear_in(self, changed: Collection[str]) -> bool:
        """Whether a keyed join's change to ``changed`` (source names) alone is a sum of delta terms."""
        return bool(changed) and all(name.lower() in self.linear_sources for name in changed)

    def strategy_for(self, kind: ChangeKind, changed: Collection[str] = ()) -> Strategy | None:
        """The strategy for a change of this kind to the ``changed`` sources (before runtime checks), ``None``
        when none is correct. Without ``changed``: the strategy for a change to any source."""
        if self.fallback is not None or kind in (ChangeKind.NONE, ChangeKind.RULES_OUT):
            return None
        if self.shape is QueryShape.KEYED_JOIN and not self.linear_in(changed):
            return Strategy.AFFECTED_KEYS
        if self.shape is QueryShape.WINDOW:
            return Strategy.AFFECTED_WINDOWS
        if self.shape in (QueryShape.PROJECTION, QueryShape.KEYED_JOIN):
            return Strategy.APPEND_DELTA if kind is ChangeKind.APPENDS else Strategy.APPLY_CHANGES
        if kind is ChangeKind.APPENDS and self.mergeable:
            return Strategy.AGGREGATE_MERGE
        if kind is ChangeKind.ROW_LEVEL and self.retract:
            return Strategy.AGGREGATE_RETRACT
        return Strategy.AFFECTED_GROUPS if self.slice_columns else None

    def describe(self) -> str:
        """One line for the card, e.g. "incremental (merge the aggregated delta on appends; …)"."""
        if self.fallback is not None:
            return f"fallback: {self.fallback.describe()}"
        if self.linear_sources:  # a keyed join: by which tables changed, not by the kind of change
            names = ", ".join(sorted(self.linear_sources))
            terms = f"{Strategy.APPEND_DELTA.label} / {Strategy.APPLY_CHANGES.label}"
            verb = "changes" if len(self.linear_sources) == 1 else "change"
            return f"incremental ({terms} when only {names} {verb}; {Strategy.AFFECTED_KEYS.label} otherwise)"
        on_appends = self.strategy_for(ChangeKind.APPENDS)
        on_changes = self.strategy_for(ChangeKind.ROW_LEVEL)
        if on_changes is on_appends:
            parts = [f"{on_appends.label} on any change" if on_appends else "full recompute on any change"]
        else:
            parts = [
                f"{on_appends.label} on appends" if on_appends else "full recompute on appends",
                f"{on_changes.label} on updates/deletes" if on_changes else "full recompute on updates/deletes",
            ]
        joined = f", delta joins over {self.joins} sources" if self.delta_joins else ""
        return f"incremental ({'; '.join(parts)}{joined})"


OUTER_KINDS = (JoinKind.LEFT, JoinKind.RIGHT, JoinKind.FULL, JoinKind.SEMI, JoinKind.ANTI)


def _operator_reasons(facts: QueryFacts) -> list[FallbackReason]:
    """Why windows or outer/semi/anti joins cannot be located by output columns (empty when they can)."""
    windows, keys = facts.window_keys, facts.join_keys
    aggregated = facts.result is not None and facts.result.aggregated
    reasons = []
    if windows is not None:
        if not windows.partitioned or aggregated or keys is not None:
            reasons.append(FallbackReason.WINDOW_FUNCTION)
        elif not windows.locating:
            reasons.append(FallbackReason.WINDOW_PARTITION_NOT_SHOWN)
    if keys is not None and keys.not_in:
        reasons.append(FallbackReason.NOT_IN_SUBQUERY)
    if any(j.kind in OUTER_KINDS for j in facts.joins) or (keys is not None and keys.subqueries):
        if keys is None or aggregated or windows is not None:
            reasons.append(FallbackReason.OUTER_JOIN)
        elif keys.columns is None:
            reasons.append(FallbackReason.JOIN_KEY_NOT_SHARED)
        elif not keys.locating:
            reasons.append(FallbackReason.JOIN_KEY_NOT_SHOWN)
    return reasons


def _plain_union(facts: QueryFacts) -> bool:
    """A UNION [ALL] chain whose branches are projections/inner joins (each a sum of delta terms)."""
    union = facts.union
    if union is None or union.mixed:
        return False
    plans = [plan_query(b) for b in union.branches]
    return all(p.shape is QueryShape.PROJECTION and p.fallback is None for p in plans)


def _semi_subqueries(facts: QueryFacts) -> int:
    """Expression subqueries maintained as semi/anti joins (only when the join key locates rows)."""
    keys = facts.join_keys
    return keys.subqueries if keys is not None and keys.columns is not None else 0


def _shape_reasons(facts: QueryFacts) -> list[FallbackReason]:
    checks = [
        (facts.limit, FallbackReason.LIMIT),
        (facts.order_by, FallbackReason.ORDER_BY),
        (bool(facts.nondeterministic), FallbackReason.NONDETERMINISTIC),
        (bool(facts.text_not_utf8), FallbackReason.TEXT_NOT_UTF8),
        (
            not _plain_union(facts) and (bool(facts.set_operations) or facts.result is None),
            FallbackReason.SET_OPERATION,
        ),
        (facts.expression_subqueries > _semi_subqueries(facts), FallbackReason.SUBQUERY_EXPRESSION),
        (bool(facts.repeated_sources), FallbackReason.SELF_JOIN),
        (bool(facts.table_functions) or facts.lateral_views, FallbackReason.TABLE_FUNCTION),
        (facts.result is not None and facts.result.nested_aggregation, FallbackReason.NESTED_AGGREGATION),
    ]
    return _operator_reasons(facts) + [reason for failed, reason in checks if failed]


def _combine(column: OutputColumn) -> str | None:
    call = column.aggregate
    if column.kind is not OutputKind.AGGREGATE or call is None or call.distinct:
        return None
    return COMBINE.get(call.name)


def _summed(column: OutputColumn) -> str:
    """The expression a ``sum`` column adds up (``""`` for any other column)."""
    call = column.aggregate
    return summed_expression(call.sql) if call is not None and call.name == "sum" else ""


def _aggregate_plan(facts: QueryFacts, joins: int) -> QueryPlan:
    result = facts.result
    assert result is not None
    if result.outputs is None or any(o.name is None for o in result.outputs):
        return QueryPlan(QueryShape.AGGREGATE, Fallback((FallbackReason.STAR_OVER_AGGREGATE,)), joins=joins)
    named = [(str(o.name), o) for o in result.outputs]
    keyed = tuple(n for n, o in named if o.kind in (OutputKind.GROUP_KEY, OutputKind.KEY_EXPRESSION))
    exposed = {o.group_key for _, o in named if o.kind is OutputKind.GROUP_KEY}
    combine = [(n, _combine(o)) for n, o in named if n not in keyed]
    merge = tuple((n, f) for n, f in combine if f is not None)
    mergeable = (
        not result.having
        and all(k in exposed for k in result.group_keys)
        and len(merge) == len(combine)
        and not (result.distinct and combine)
    )
    common = set(result.common_group_keys)
    pushdown = tuple(
        (n, str(o.group_key)) for n, o in named if o.kind is OutputKind.GROUP_KEY and o.group_key in common
    )
    slices = keyed if result.grouping_set_count <= 1 or pushdown else ()
    if not mergeable and not slices:
        return QueryPlan(QueryShape.AGGREGATE, Fallback((FallbackReason.GROUPS_NOT_LOCATABLE,)), joins=joins)
    multiple_sets = result.grouping_set_count > 1
    retract = _retractable(named, keyed) if mergeable and not multiple_sets and joins <= 1 and keyed else ()
    return QueryPlan(
        shape=QueryShape.AGGREGATE,
        merge=merge if mergeable else (),
        merge_keys=keyed if mergeable else (),
        sums=tuple((n, _summed(o)) for n, o in named if n in dict(merge) and _summed(o)) if mergeable else (),
        rollup_keys=tuple(k for k in result.group_keys if k not in common) if multiple_sets else (),
        slice_columns=slices,
        pushdown=pushdown,
        joins=joins,
        retract=retract,
    )


COUNT_ROWS = frozenset({"count(*)", "count(1)"})


def _retractable(named: list[tuple[str, OutputColumn]], keyed: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """What each aggregate column retracts as, when a GROUP BY over one source can subtract removed rows: every
    aggregate is COUNT, SUM, MIN or MAX (no DISTINCT) and one is an unfiltered ``count(*)``, which says when a
    group has no rows left. Sums and counts subtract; a MIN or MAX whose removed value could have been the
    group's extreme, and a SUM whose non-NULL values may all be gone, are recomputed by group
    (:func:`~.strategies.aggregate_retract`). Empty when not retractable."""
    kinds = []
    for name, column in named:
        if name in keyed:
            continue
        call = column.aggregate
        if call is None or call.distinct or call.name not in COMBINE:
            return ()
        counts_rows = call.name == "count" and not call.filtered and call.sql.replace(" ", "").lower() in COUNT_ROWS
        kind = "filtered sum" if call.name == "sum" and call.filtered else call.name  # NULL when no row passes
        kinds.append((name, "rows" if counts_rows else kind))
    return tuple(kinds) if any(kind == "rows" for _, kind in kinds) else ()


def plan_query(facts: QueryFacts) -> QueryPlan:
    """The static plan of a query: strategies by change kind, or every reason none applies."""
    reasons = _shape_reasons(facts)
    joins = len(facts.sources)
    if reasons:
        return QueryPlan(None, Fallback(tuple(reasons)), joins=joins)
    if facts.union is not None:
        return _union_plan(facts, joins)
    assert facts.result is not None
    keys = facts.join_keys
    if keys is not None and keys.columns is not None:
        return QueryPlan(
            QueryShape.KEYED_JOIN,
            slice_columns=keys.locating,
            join_key=keys.columns,
            linear_sources=frozenset(name.lower() for name in keys.preserved),
            joins=joins,
        )
    if facts.window_keys is not None:
        return QueryPlan(QueryShape.WINDOW, slice_columns=facts.window_keys.locating, joins=joins)
    if not facts.result.aggregated:
        return QueryPlan(QueryShape.PROJECTION, joins=joins)
    return _aggregate_plan(facts, joins)


def _union_plan(facts: QueryFacts, joins: int) -> QueryPlan:
    """UNION ALL is the sum of its branches (delta terms per branch); UNION is DISTINCT over that sum, so it
    merges over appends and recomputes the touched rows (every output column locates them) otherwise."""
    union = facts.union
    assert union is not None
    branches = tuple(frozenset(str(s) for s in b.sources) for b in union.branches)
    if not union.distinct:
        return QueryPlan(QueryShape.PROJECTION, branches=branches, joins=joins)
    names = facts.output_columns
    if names is None or any(n is None for n in names):
        return QueryPlan(QueryShape.AGGREGATE, Fallback((FallbackReason.STAR_OVER_AGGREGATE,)), joins=joins)
    keys = tuple(str(n) for n in names)
    return QueryPlan(QueryShape.AGGREGATE, merge_keys=keys, slice_columns=keys, branches=branches, joins=joins)
