"""What a definition query's shape allows, before any source changes: the static half of the planner.

Pure: it reads :class:`~mt_magic.sql.query.facts.QueryFacts` (sqlglot facts) and decides which strategies are
correct for appends and for row-level changes, or every reason the query can never be maintained
incrementally. The same plan feeds CREATE's mode reason, ``%mt explain`` and each refresh.

Correctness rests on two properties of the supported shapes:

* a projection/filter/inner-join query is *multilinear* in its sources (as multisets), so its change is the
  union of delta terms Q(S₁new … Sᵢ₋₁new, ΔSᵢ, Sᵢ₊₁old …);
* an aggregating query's output row depends only on its group's input rows, and a key-derived output
  column (a grouping expression or a function of them) has one value per group, so replacing every row
  whose key columns take a value the change touched — by the recomputed rows with those values — is exact.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy
from mt_magic.sql.query.facts import JoinKind, OutputColumn, OutputKind, QueryFacts

COMBINE = {"count": "sum", "sum": "sum", "min": "min", "max": "max"}
"""Decomposable aggregates → how partial results combine (counts and sums add)."""


class QueryShape(enum.Enum):
    """The two shapes incremental refresh maintains."""

    PROJECTION = "projection/filter"
    """Select-project-(inner-)join: no aggregation anywhere."""
    AGGREGATE = "aggregation"
    """GROUP BY, aggregates or SELECT DISTINCT in the outermost SELECT, a projection/join below it."""


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
    rollup_keys: tuple[str, ...] = ()
    """Grouping expressions missing from some grouping set: a merge needs them non-nullable."""
    slice_columns: tuple[str, ...] = ()
    """Output columns that locate groups (key-derived), for affected-groups recompute."""
    pushdown: tuple[tuple[str, str], ...] = ()
    """(output column, grouping expression) pairs whose filter may be added to the aggregation's input."""
    joins: int = 0

    @property
    def mergeable(self) -> bool:
        """Aggregate merge is correct over appends (a DISTINCT-only query merges by its keys alone)."""
        return bool(self.merge or self.merge_keys)

    def strategy_for(self, kind: ChangeKind) -> Strategy | None:
        """The strategy for a change of this kind (before runtime checks), ``None`` when none is correct."""
        if self.fallback is not None or kind in (ChangeKind.NONE, ChangeKind.RULES_OUT):
            return None
        if self.shape is QueryShape.PROJECTION:
            return Strategy.APPEND_DELTA if kind is ChangeKind.APPENDS else Strategy.APPLY_CHANGES
        if kind is ChangeKind.APPENDS and self.mergeable:
            return Strategy.AGGREGATE_MERGE
        return Strategy.AFFECTED_GROUPS if self.slice_columns else None

    def describe(self) -> str:
        """One line for the card, e.g. "incremental (merge the aggregated delta on appends; …)"."""
        if self.fallback is not None:
            return f"fallback: {self.fallback.describe()}"
        on_appends = self.strategy_for(ChangeKind.APPENDS)
        on_changes = self.strategy_for(ChangeKind.ROW_LEVEL)
        if on_changes is on_appends:
            parts = [f"{on_appends.label} on any change" if on_appends else "full recompute on any change"]
        else:
            parts = [
                f"{on_appends.label} on appends" if on_appends else "full recompute on appends",
                f"{on_changes.label} on updates/deletes" if on_changes else "full recompute on updates/deletes",
            ]
        joined = f", delta joins over {self.joins} sources" if self.joins > 1 else ""
        return f"incremental ({'; '.join(parts)}{joined})"


def _shape_reasons(facts: QueryFacts) -> list[FallbackReason]:
    checks = [
        (bool(facts.window_functions), FallbackReason.WINDOW_FUNCTION),
        (facts.limit, FallbackReason.LIMIT),
        (facts.order_by, FallbackReason.ORDER_BY),
        (bool(facts.nondeterministic), FallbackReason.NONDETERMINISTIC),
        (bool(facts.set_operations) or facts.result is None, FallbackReason.SET_OPERATION),
        (any(j.kind in (JoinKind.LEFT, JoinKind.RIGHT, JoinKind.FULL) for j in facts.joins), FallbackReason.OUTER_JOIN),
        (any(j.kind in (JoinKind.SEMI, JoinKind.ANTI) for j in facts.joins), FallbackReason.SEMI_ANTI_JOIN),
        (facts.expression_subqueries > 0, FallbackReason.SUBQUERY_EXPRESSION),
        (bool(facts.repeated_sources), FallbackReason.SELF_JOIN),
        (bool(facts.table_functions) or facts.lateral_views, FallbackReason.TABLE_FUNCTION),
        (facts.result is not None and facts.result.nested_aggregation, FallbackReason.NESTED_AGGREGATION),
    ]
    return [reason for failed, reason in checks if failed]


def _combine(column: OutputColumn) -> str | None:
    call = column.aggregate
    if column.kind is not OutputKind.AGGREGATE or call is None or call.distinct:
        return None
    return COMBINE.get(call.name)


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
    return QueryPlan(
        shape=QueryShape.AGGREGATE,
        merge=merge if mergeable else (),
        merge_keys=keyed if mergeable else (),
        rollup_keys=tuple(k for k in result.group_keys if k not in common) if multiple_sets else (),
        slice_columns=slices,
        pushdown=pushdown,
        joins=joins,
    )


def plan_query(facts: QueryFacts) -> QueryPlan:
    """The static plan of a query: strategies by change kind, or every reason none applies."""
    reasons = _shape_reasons(facts)
    joins = len(facts.sources)
    if reasons:
        return QueryPlan(None, Fallback(tuple(reasons)), joins=joins)
    assert facts.result is not None
    if not facts.result.aggregated:
        return QueryPlan(QueryShape.PROJECTION, joins=joins)
    return _aggregate_plan(facts, joins)
