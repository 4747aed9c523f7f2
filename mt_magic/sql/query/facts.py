"""The facts :func:`mt_magic.sql.query.analysis.analyze_query` reads from a definition query: frozen data only.

Kinds are enums so the incremental planner matches on them, never on strings.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mt_magic.sql.names import TableName


class JoinKind(enum.Enum):
    """The kind of a join, as Spark executes it."""

    INNER = "INNER"
    """``[INNER] JOIN`` and ``NATURAL JOIN``."""
    LEFT = "LEFT"
    """``LEFT [OUTER] JOIN``."""
    RIGHT = "RIGHT"
    """``RIGHT [OUTER] JOIN``."""
    FULL = "FULL"
    """``FULL [OUTER] JOIN``."""
    CROSS = "CROSS"
    """``CROSS JOIN`` and the comma join ``FROM a, b``."""
    SEMI = "SEMI"
    """``[LEFT] SEMI JOIN``: rows of the left side with a match."""
    ANTI = "ANTI"
    """``[LEFT] ANTI JOIN``: rows of the left side without a match."""


class SetOpKind(enum.Enum):
    """A set operation between two queries."""

    UNION = "UNION"
    INTERSECT = "INTERSECT"
    EXCEPT = "EXCEPT"
    """Also written ``MINUS`` in Spark."""


class GroupingKind(enum.Enum):
    """How rows are grouped."""

    GROUP_BY = "GROUP BY"
    """A plain list of grouping expressions."""
    GROUPING_SETS = "GROUPING SETS"
    CUBE = "CUBE"
    ROLLUP = "ROLLUP"


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate function call outside any window (``count(DISTINCT user_id)``)."""

    name: str
    """Spark's name, lower case (``count``, ``sum``, ``approx_count_distinct``)."""
    distinct: bool
    filtered: bool
    """Has a ``FILTER (WHERE …)`` clause."""
    sql: str


@dataclass(frozen=True)
class JoinFact:
    """One join: its kind, whether it is NATURAL, whether it has a condition, and what it joins."""

    kind: JoinKind
    natural: bool
    has_condition: bool
    relation: str
    """The joined relation's alias or name (``r`` in ``JOIN dim r ON …``)."""


@dataclass(frozen=True)
class SetOperation:
    """One set operation; ``distinct`` is False for ``UNION ALL`` / ``EXCEPT ALL`` / ``INTERSECT ALL``."""

    kind: SetOpKind
    distinct: bool


@dataclass(frozen=True)
class WindowCall:
    """One function evaluated ``OVER (…)``."""

    name: str
    sql: str


class OutputKind(enum.Enum):
    """What one output column of the result SELECT computes, as far as incremental maintenance cares."""

    GROUP_KEY = "group key"
    """Exactly one of the grouping expressions (``ds`` in ``SELECT ds, … GROUP BY ds``)."""
    KEY_EXPRESSION = "key expression"
    """A function of the grouping expressions, no aggregate inside (``COALESCE(hh, 'day')``)."""
    AGGREGATE = "aggregate"
    """Exactly one aggregate call, possibly with ``FILTER (WHERE …)`` (``count(*)``, ``sum(v)``)."""
    AGGREGATE_EXPRESSION = "aggregate expression"
    """An expression over aggregates (``sum(a) / count(*)``)."""
    ROW = "row"
    """A per-row value of a query without aggregation."""


@dataclass(frozen=True)
class OutputColumn:
    """One column of the result SELECT (in select-list order)."""

    name: str | None
    """The output name; ``None`` for an unnamed expression."""
    kind: OutputKind
    sql: str
    """The expression in the result SELECT's scope, Spark SQL (``date_format(vtime, 'HH')``)."""
    aggregate: AggregateCall | None = None
    """The call, for ``AGGREGATE`` columns."""
    group_key: str | None = None
    """The grouping expression it is (as in ``ResultSelect.group_keys``), for ``GROUP_KEY`` columns."""


@dataclass(frozen=True)
class ResultSelect:
    """The SELECT whose rows are the result: the outermost one, looking through a renaming wrapper.

    A wrapper is ``SELECT c AS x, CAST(d AS T) AS y FROM (<aggregating select>) alias`` (what a column list
    in CREATE produces); its columns are mapped onto the inner SELECT's, a cast column keeping only the
    "derived" kind (``KEY_EXPRESSION`` or ``AGGREGATE_EXPRESSION``).
    """

    outputs: tuple[OutputColumn, ...] | None
    """``None`` when a ``*`` is projected."""
    aggregated: bool
    """GROUP BY, aggregate calls or SELECT DISTINCT at this level (DISTINCT groups by every column)."""
    group_keys: tuple[str, ...]
    """Every grouping expression, ordinals resolved, in order, deduplicated."""
    common_group_keys: tuple[str, ...]
    """The grouping expressions present in every grouping set (never rolled up to NULL)."""
    grouping_set_count: int
    """How many grouping sets (1 for a plain GROUP BY, 0 without grouping)."""
    distinct: bool
    having: bool
    wrapped: bool
    """The result was read through a renaming wrapper."""
    nested_aggregation: bool
    """GROUP BY, aggregates or DISTINCT in any other SELECT (subqueries, CTE bodies)."""


@dataclass(frozen=True)
class KeyColumn:
    """One joined table's column of the join key: ``source`` is the table's name as written (dotted parts)."""

    source: str
    column: str


@dataclass(frozen=True)
class JoinKeys:
    """The equi-join key of a result SELECT with outer, semi or anti joins, read from its ON/USING clauses.

    Every result row's joined rows share one value of the key (or are NULL-extended), so the result rows with
    key value K depend only on the sources' rows with key value K: the fact affected-key recompute rests on.
    """

    columns: tuple[KeyColumn, ...] | None
    """One key column per joined table (FROM order); ``None`` when no equality chain reaches every table."""
    locating: tuple[str, ...]
    """Output columns whose COALESCE is the key value of every result row (empty: the key is not shown)."""
    subqueries: int = 0
    """``IN (SELECT …)`` / ``[NOT] EXISTS (…)`` conjuncts of WHERE read as semi/anti joins of one table."""
    not_in: bool = False
    """A ``NOT IN (SELECT …)``: true for a NULL key only when the subquery is empty, so not key-local."""
    preserved: tuple[str, ...] = ()
    """Tables present (not NULL-extended, not a semi/anti side) in every result row. The result is linear in
    each of them: with the other tables fixed, each of its rows yields its own result rows, so a change to
    these tables alone is a sum of delta terms, like an inner join's."""
    locator: str | None = None
    """Spark SQL over the result SELECT's relations whose value is the key on every result row (a preserved
    table's key column, else the COALESCE of every visible table's): what a hidden key column stores when no
    output column shows the key (:mod:`~mt_magic.sql.query.hidden_keys`)."""


@dataclass(frozen=True)
class WindowKeys:
    """The window functions' partitioning, for affected-partition recompute."""

    partitioned: bool
    """Every window has ``PARTITION BY``, all windows sit in one non-aggregating SELECT (the result SELECT or
    the one subquery it filters, e.g. a top-N ``WHERE rn <= 3``) over tables and inner joins."""
    locating: tuple[str, ...]
    """Output columns that are, unchanged, a partition expression of every window (empty: none shown)."""
    partition: tuple[str, ...] = ()
    """Spark SQL of the partition expressions every window shares, over the windows' SELECT's relations: what
    hidden key columns store when no output column shows them (:mod:`~mt_magic.sql.query.hidden_keys`)."""


@dataclass(frozen=True)
class Union:
    """A query that is ``b₁ UNION [ALL] b₂ …``: each branch's own facts, and whether the result is distinct."""

    branches: tuple[QueryFacts, ...]
    distinct: bool
    """The outermost operator is ``UNION`` (DISTINCT over every branch, as any inner ``UNION`` is then too)."""
    mixed: bool
    """An inner ``UNION`` under an outer ``UNION ALL``: not a plain sum of the branches."""


@dataclass(frozen=True)
class QueryFacts:
    """Everything the planner may need to know about a query's shape."""

    sources: tuple[TableName, ...]
    """Tables and views read, in order of first appearance, deduplicated, CTE names excluded."""
    ctes: tuple[str, ...]
    output_columns: tuple[str | None, ...] | None
    """The top-level output names; ``None`` inside for an unnamed expression, ``None`` for a ``*`` query."""
    aggregates: tuple[AggregateCall, ...]
    group_by: tuple[str, ...]
    """Every grouping expression (from plain lists and grouping sets alike), in order, deduplicated."""
    grouping: frozenset[GroupingKind]
    grouping_sets: tuple[tuple[str, ...], ...]
    """The sets of ``GROUPING SETS (…)`` as written (a bare expression is a one-element set)."""
    joins: tuple[JoinFact, ...]
    distinct: bool
    """``SELECT DISTINCT`` somewhere."""
    window_functions: tuple[WindowCall, ...]
    limit: bool
    order_by: bool
    """An ``ORDER BY`` of a query (not inside a window)."""
    set_operations: tuple[SetOperation, ...]
    derived_tables: int
    """Subqueries in FROM/JOIN."""
    expression_subqueries: int
    """Scalar, ``IN (SELECT …)`` and ``EXISTS (…)`` subqueries."""
    nondeterministic: tuple[str, ...]
    """Names of non-deterministic functions called (Spark names, lower case, deduplicated)."""
    table_functions: tuple[str, ...]
    """Table-valued functions in FROM (``range(10)``)."""
    lateral_views: bool
    result: ResultSelect | None = None
    """The result SELECT's shape; ``None`` when the query is a set operation."""
    repeated_sources: tuple[TableName, ...] = ()
    """Sources read more than once (self-joins, a CTE over a source referenced twice)."""
    join_keys: JoinKeys | None = None
    """Set when the result SELECT has an outer, semi or anti join (also as IN / EXISTS / NOT IN subqueries)."""
    window_keys: WindowKeys | None = None
    """Set when the query has window functions."""
    union: Union | None = None
    """Set when the query is a chain of UNION [ALL] of SELECTs."""
    text_not_utf8: tuple[str, ...] = ()
    """STRING constants whose bytes are not valid UTF-8 (``CAST(unhex('FF') AS STRING)``), as Spark SQL
    (:mod:`.text_constants`)."""

    @property
    def is_aggregate(self) -> bool:
        return bool(self.aggregates or self.group_by)

    @property
    def subqueries(self) -> int:
        return self.derived_tables + self.expression_subqueries
