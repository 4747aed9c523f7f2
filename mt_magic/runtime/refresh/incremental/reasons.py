"""The vocabulary of incremental refresh: which strategy ran, or why a refresh recomputed fully.

Both enums carry their human sentence as the value, so a reason shown on the card, written into the snapshot
summary (``mt.strategy``) or raised by the strict option reads the same everywhere.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mt_magic.runtime.refresh.decision_summary import Estimates


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
    AGGREGATE_RETRACT = "merge the signed delta"
    """GROUP BY over one source with COUNT(*) and COUNT/SUM/MIN/MAX, after updates and deletes: the query over the
    removed rows is subtracted from the stored groups and the query over the added rows merged in; a group whose
    MIN or MAX lost its extreme, or whose SUM may have lost every non-NULL value, is recomputed at the new
    snapshots, and a group left with no rows is dropped."""
    AFFECTED_GROUPS = "recompute the affected groups"
    """Any other GROUP BY (COUNT DISTINCT, AVG, HAVING, MIN/MAX after deletes, …): the group keys the change
    touches are collected, only those groups are recomputed at the new snapshots and replaced."""
    AFFECTED_PARTITIONS = "recompute the affected partitions"
    """Affected-groups recompute on a partitioned table whose partition columns are group keys: only the
    partitions the change touches are read back and overwritten."""
    AFFECTED_KEYS = "recompute the affected join keys"
    """Outer, semi and anti joins on one equi-join key shown in the output: the key values in the sources'
    deltas are collected, the result rows with those keys deleted and the query's rows with them inserted."""
    AFFECTED_WINDOWS = "recompute the affected window partitions"
    """Window functions (and top-N filters over them) partitioned by an output column: the partition values
    the change touches are collected and only those partitions are recomputed and replaced."""
    NO_LOGICAL_CHANGE = "record the new source snapshots"
    """The sources changed only physically (compaction) or the change cannot reach the result: the commit
    carries the new refresh state and no data."""

    @property
    def label(self) -> str:
        return self.value

    @staticmethod
    def of_line(line: str) -> Strategy | None:
        """The strategy an incremental refresh's strategy line names (``"incremental: apply inserts and deletes ·
        …"``), ``None`` for a strategy this version does not know (and for another refresh's line, which names none:
        ``"full: …"``). The one reader of strategy lines: history's cost estimates and ADAPTIVE's records."""
        rest = line.removeprefix("incremental: ")
        return next((s for s in Strategy if rest.startswith(s.label)), None)

    @property
    def replaces_rows(self) -> bool:
        """Reads the table's touched rows and writes them again (on Spark several jobs, where a recompute runs one:
        ADAPTIVE's Spark prior, :data:`~mt_magic.runtime.refresh.cost_model.PRIOR_INCREMENTAL_SPARK`)."""
        return self in {
            Strategy.APPLY_CHANGES,
            Strategy.AGGREGATE_RETRACT,
            Strategy.AFFECTED_GROUPS,
            Strategy.AFFECTED_PARTITIONS,
            Strategy.AFFECTED_KEYS,
            Strategy.AFFECTED_WINDOWS,
        }


class FallbackReason(enum.Enum):
    """Why a CONTINUOUS refresh recomputed fully instead of incrementally."""

    # --- the query's shape (known before the table exists; ``%mt explain`` shows them)
    WINDOW_FUNCTION = (
        "a window without PARTITION BY (or windows in several SELECTs, or over GROUP BY or an outer join) "
        "needs the whole input, so every refresh recomputes fully"
    )
    """``… OVER (…)`` that affected-partition recompute cannot handle."""
    WINDOW_PARTITION_NOT_SHOWN = (
        "window functions are maintained by recomputing the window partitions a change touches, but no "
        "output column is a PARTITION BY column shared by every window: add it to the SELECT list"
    )
    """Every window is partitioned, but the partition is not visible in the table."""
    LIMIT = "LIMIT keeps rows that depend on the whole input, so every refresh recomputes fully"
    """``LIMIT`` anywhere in the query."""
    ORDER_BY = "ORDER BY orders the whole result, so every refresh recomputes fully"
    """``ORDER BY`` of a query (not inside a window)."""
    NONDETERMINISTIC = (
        "non-deterministic functions (rand(), uuid(), current_timestamp(), …) give new values on "
        "every run, so earlier results cannot be reused"
    )
    """A function whose value changes between runs or rows."""
    TEXT_NOT_UTF8 = (
        "a STRING constant is not valid UTF-8 (CAST(unhex('FF') AS STRING)), which Iceberg reads as other text where "
        "a filter reaches its scans, so Spark's answer depends on the plan and every refresh recomputes"
    )
    """``CAST(<constant bytes> AS STRING)`` of bytes that are not UTF-8 (:mod:`mt_magic.sql.query.text_constants`)."""
    SET_OPERATION = (
        "INTERSECT, EXCEPT, set operations inside a subquery, and UNION whose branches aggregate, rank or "
        "outer-join are not maintained incrementally (a UNION [ALL] of projections and inner joins is)"
    )
    """A set operation other than a top-level UNION [ALL] chain of projection/inner-join branches."""
    OUTER_JOIN = (
        "an outer, semi or anti join inside a subquery or CTE, or under GROUP BY, DISTINCT or a window, "
        "is not maintained incrementally (a projection of such a join is)"
    )
    """``LEFT``/``RIGHT``/``FULL``/``SEMI``/``ANTI`` joins anywhere but directly in a projection's FROM."""
    JOIN_KEY_NOT_SHARED = (
        "outer, semi and anti joins are maintained by recomputing the join keys a change touches, which needs "
        "tables (not subqueries or CTEs) joined on one equi-join key (ON a.k = b.k [AND b.k = c.k …])"
    )
    """No column equality in the ON/USING clauses reaches every joined table."""
    JOIN_KEY_NOT_SHOWN = (
        "outer, semi and anti joins are maintained by recomputing the join keys a change touches, but the "
        "join key is not in the output: add it to the SELECT list (the left table's key for LEFT, SEMI and "
        "ANTI joins, the right table's for RIGHT joins, both or COALESCE(a.k, b.k) for FULL joins)"
    )
    """The key is joined on but no output column shows it on every result row."""
    NOT_IN_SUBQUERY = (
        "NOT IN (SELECT …) keeps a row with a NULL key only while the subquery is empty and drops every row "
        "once it returns a NULL, so any change can flip every row: write NOT EXISTS (SELECT … WHERE b.k = a.k)"
    )
    """``k NOT IN (SELECT …)`` in WHERE."""
    SUBQUERY_EXPRESSION = (
        "subqueries in expressions are maintained only as IN (SELECT b.k FROM b …) or [NOT] EXISTS "
        "(SELECT … FROM b WHERE b.k = a.k …) conditions of WHERE over one table; scalar subqueries and others "
        "are not"
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
        "a source has merge-on-read delete files (position or equality deletes, deletion vectors), and "
        "Iceberg's changelog scan refuses them ('Delete files are currently not supported in changelog scans', "
        "in Iceberg 1.10 and 1.12 alike); make the source copy-on-write (write.delete.mode, "
        "write.update.mode, write.merge.mode) "
        "or compact it (rewrite_data_files with delete-file-threshold = 1) — appends stay incremental"
    )
    """Not produced any more: a range with delete files is read by :mod:`.merge_on_read`. Kept so refreshes
    recorded before read back as this reason; ``runtime/inspect/recommendations.py`` advises nothing for it."""
    SCHEMA_CHANGED = "a source's schema changed since the last refresh"
    """The consumed and the pinned snapshot were written with different schema ids."""
    SNAPSHOT_EXPIRED = "the source snapshot the last refresh consumed was expired, so the change since is unknown"
    """The consumed snapshot id is no longer in the source's metadata."""
    HISTORY_REWRITTEN = (
        "the source snapshot the last refresh consumed is no longer in the table's history "
        "(rollback or replace), so the change since is unknown"
    )
    """The consumed snapshot exists but is not an ancestor of the current one."""
    TEXT_BOUNDS_NOT_UTF8 = (
        "a data file the change added, removed or deleted rows from has a lowest or highest STRING value holding "
        "U+FFFD on a column the query filters or joins on (Iceberg writes U+FFFD there for text that is not valid "
        "UTF-8, whose bound may then exclude the file's own values), so a pushed filter skips the file or not "
        "depending on which files hold the rows and only the query itself gives Spark's answer"
    )
    """A file of the change has a STRING bound holding U+FFFD (the check cannot tell a replaced byte from a U+FFFD
    the text held) on a column a condition of the query names
    (:func:`.text_bounds.replaced_bound`): its bounds may exclude its own values, so a delta read from the changed
    files and the query over other files (a compaction's) disagree."""
    SOURCE_RECREATED = "a source was dropped and re-created since the last refresh (its table uuid changed)"
    """The source's uuid differs from the one in the refresh state."""
    CHEAPER_TO_RECOMPUTE = "a full recompute is cheaper than applying this much change"
    """``'incremental' = 'auto'``: the change is past ``incremental.max-change-fraction`` of the changed sources
    (or a keyed join's key recompute would read every source). Where the first recurs, ``%mt history`` and the card
    advise a smaller FRESHNESS computed from the measured change (``runtime/inspect/recommendations.py``)."""
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
    VALUE_WITHOUT_LITERAL = (
        "a value the change touches has no exact literal (a string that is not valid UTF-8 reaches the driver "
        "with U+FFFD in place of its bytes), so a filter listing it would miss its rows"
    )
    """A slice column's touched values cannot be listed exactly (:func:`.slices.collect_slices`)."""
    SUM_NEAR_BOUND = (
        "a sum's inputs reach its type's bound, where Spark's answer (NULL, a failure or the total) depends on the "
        "order it adds them in, which only its own query over the rows gives, and no output column locates the group"
    )
    """A merge whose DECIMAL(38, s) sum (or BIGINT sum under ANSI) could pass its type in one of Spark's partial
    sums (:mod:`.sum_mass`), in a query without group keys."""
    INCREMENTAL_OVERFLOW = (
        "the incremental refresh overflowed a type (ANSI mode) adding in another order than the query, which may "
        "not overflow over all rows, so this refresh recomputes"
    )
    """Spark refused a value past its type while refreshing incrementally (nothing was committed)."""
    INCREMENTAL_VALUE_REFUSED = (
        "the incremental refresh evaluated the query on rows the query at the new snapshots does not read and Spark "
        "refused a value there (ANSI mode: a malformed cast, a division by zero), so this refresh recomputes"
    )
    """Spark refused a value (``CAST_INVALID_INPUT``, ``DIVIDE_BY_ZERO``, …) while refreshing incrementally (nothing
    was committed): a delta term reads other rows than the query, e.g. a source at its consumed snapshot."""
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
    estimates: Estimates | None = field(default=None, compare=False)
    """Each candidate's estimated seconds, when the incremental strategy was weighed against a recompute
    (ADAPTIVE's choice): the decision record keeps them."""

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
