"""The vocabulary of incremental refresh: which strategy ran, or why a refresh recomputed fully.

Both enums carry their human sentence as the value, so a reason shown on the card, written into the snapshot
summary (``mt.strategy``) or raised by the strict option reads the same everywhere.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Strategy(enum.Enum):
    """How an incremental refresh computes the new table from the change (cheapest correct one wins)."""

    APPEND_DELTA = "append the delta"
    """Projection/filter (inner joins through delta terms) over appended rows: the new result rows are the
    query over the delta, appended in one commit."""
    APPLY_CHANGES = "apply inserts and deletes"
    """Projection/filter (inner joins through delta terms) with row-level source changes: table ⊎ inserted ∖
    deleted as multisets, rewritten in one commit (only the affected partitions when the table is partitioned)."""
    AGGREGATE_MERGE = "merge the aggregated delta"
    """GROUP BY with COUNT/SUM/MIN/MAX over appends: the query over the delta gives partial aggregates per
    group, combined with the stored groups (count and sum add, min and max take the extreme)."""
    AFFECTED_GROUPS = "recompute the affected groups"
    """Any other GROUP BY (COUNT DISTINCT, AVG, HAVING, MIN/MAX after deletes, …): the group keys the change
    touches are collected, only those groups are recomputed at the new snapshots and replaced."""
    AFFECTED_PARTITIONS = "recompute the affected partitions"
    """Affected-groups recompute on a partitioned table whose partition columns are group keys: only the
    partitions the change touches are read back and overwritten."""
    NO_LOGICAL_CHANGE = "record the new source snapshots"
    """The sources changed only physically (compaction) or the change cannot reach the result: the commit
    carries the new refresh state and no data."""

    @property
    def label(self) -> str:
        return self.value


class FallbackReason(enum.Enum):
    """Why a CONTINUOUS refresh recomputed fully instead of incrementally."""

    # --- the query's shape (known before the table exists; ``%mt explain`` shows them)
    WINDOW_FUNCTION = "window functions need the whole input, so every refresh recomputes fully"
    """``… OVER (…)`` anywhere in the query."""
    LIMIT = "LIMIT keeps rows that depend on the whole input, so every refresh recomputes fully"
    """``LIMIT`` anywhere in the query."""
    ORDER_BY = "ORDER BY orders the whole result, so every refresh recomputes fully"
    """``ORDER BY`` of a query (not inside a window)."""
    NONDETERMINISTIC = (
        "non-deterministic functions (rand(), uuid(), current_timestamp(), …) give new values on "
        "every run, so earlier results cannot be reused"
    )
    """A function whose value changes between runs or rows."""
    SET_OPERATION = "set operations (UNION, INTERSECT, EXCEPT) are not maintained incrementally"
    """``UNION [ALL]``, ``INTERSECT``, ``EXCEPT`` anywhere in the query."""
    OUTER_JOIN = (
        "outer joins are not maintained incrementally: a new match can retract a NULL-padded row, so "
        "every refresh recomputes fully"
    )
    """``LEFT``/``RIGHT``/``FULL [OUTER] JOIN``."""
    SEMI_ANTI_JOIN = "semi and anti joins depend on whether any match exists, so every refresh recomputes fully"
    """``LEFT SEMI JOIN`` / ``LEFT ANTI JOIN``."""
    SUBQUERY_EXPRESSION = (
        "subqueries in expressions (IN (SELECT …), EXISTS, scalar subqueries) are not maintained incrementally"
    )
    """A subquery outside FROM/JOIN."""
    SELF_JOIN = (
        "a source is read more than once (a self-join, or a CTE used twice), which the delta terms do not handle"
    )
    """The same table appears more than once once CTEs are expanded."""
    NESTED_AGGREGATION = (
        "aggregation or DISTINCT below the outermost SELECT (in a subquery or CTE) is not maintained incrementally"
    )
    """GROUP BY, an aggregate or DISTINCT in a subquery, CTE or around a set operation."""
    GROUPS_NOT_LOCATABLE = (
        "no output column identifies the groups (e.g. a global COUNT(DISTINCT …), AVG or "
        "HAVING, or only rolled-up keys), so changed groups cannot be found in the table"
    )
    """Not mergeable, and no group-key column to recompute affected groups by."""
    TABLE_FUNCTION = "table-valued functions and LATERAL VIEW generators are not maintained incrementally"
    """``FROM range(…)``, ``LATERAL VIEW explode(…)``."""
    STAR_OVER_AGGREGATE = "the result columns of an aggregating query must be named (no *)"
    """``SELECT *`` at the level that aggregates."""

    # --- the sources' history since the consumed snapshots
    MERGE_ON_READ_DELETES = (
        "a source has merge-on-read delete files, which Iceberg's changelog cannot read; "
        "use copy-on-write deletes/updates/merges on sources, or compact them"
    )
    """Delete files were added since the consumed snapshot (or exist in a table with row-level changes)."""
    SCHEMA_CHANGED = "a source's schema changed since the last refresh"
    """The consumed and the pinned snapshot were written with different schema ids."""
    SNAPSHOT_EXPIRED = "the source snapshot the last refresh consumed was expired, so the change since is unknown"
    """The consumed snapshot id is no longer in the source's metadata."""
    HISTORY_REWRITTEN = (
        "the source snapshot the last refresh consumed is no longer in the table's history "
        "(rollback or replace), so the change since is unknown"
    )
    """The consumed snapshot exists but is not an ancestor of the current one."""
    SOURCE_RECREATED = "a source was dropped and re-created since the last refresh (its table uuid changed)"
    """The source's uuid differs from the one in the refresh state."""
    CHEAPER_TO_RECOMPUTE = "a full recompute is cheaper than applying this much change"
    """``'incremental' = 'auto'``: the change is past ``incremental.max-change-fraction`` of the changed sources."""
    SOURCE_NOT_RECORDED = "the last refresh state does not list every source of the query"
    """A source is missing from the last refresh state (e.g. written by an older version)."""

    # --- the materialized table's own state
    DEFINITION_CHANGED = "the query changed (ALTER … AS) since the last refresh"
    """The last refresh ran an older definition version."""
    PARTIAL_LAST_REFRESH = (
        "the last refresh recomputed one partition only, so the table matches no single "
        "source state; one full refresh re-establishes it"
    )
    """The last refresh was a partition refresh (backfill or formatter)."""
    TABLE_MODIFIED = "the table was written outside refreshes since the last refresh"
    """A non-refresh commit (other than compaction) follows the last refresh."""
    TOO_MANY_AFFECTED_GROUPS = "the change touches so many groups that recomputing everything is cheaper"
    """More affected key values than an affected-groups recompute handles."""
    START_WINDOW = (
        "the table starts later than its sources' history (START_MODE), and this change may reach rows before "
        "the start or needs whole sources, so it recomputes over the rows since the start"
    )
    """A table with a start position whose change is row-level, or whose strategy reads more than the delta."""

    @property
    def sentence(self) -> str:
        return self.value

    def __str__(self) -> str:
        return f"{self.sentence} [{self.name}]"


@dataclass(frozen=True)
class Fallback:
    """The decision to recompute fully, with every reason found (the first one is shown)."""

    reasons: tuple[FallbackReason, ...]
    detail: str = ""
    """Which source or column the first reason is about, when it is about one."""

    def __post_init__(self) -> None:
        if not self.reasons:
            raise ValueError("a fallback needs at least one reason")

    @property
    def reason(self) -> FallbackReason:
        return self.reasons[0]

    def describe(self) -> str:
        """One line: the first reason's sentence, its subject, and how many more reasons there are."""
        text = self.reason.sentence + (f" ({self.detail})" if self.detail else "")
        if len(self.reasons) > 1:
            text += f"; also: {', '.join(r.name.lower().replace('_', ' ') for r in self.reasons[1:])}"
        return text
