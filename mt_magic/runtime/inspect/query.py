"""A query cell's query (``%%mtsql``, ``mt_magic.query``/``live``): names resolved as statements resolve them,
every table of the catalog pinned to the snapshot it had when the query started, then run by Spark.

:func:`resolve` reads the query once (sqlglot, spark dialect), qualifies its tables with the statements' rule
(``qualify_sources``: one-part names in the workspace's namespace, ``ns.t`` in the workspace's catalog) and checks
that every table of the catalog exists; a temporary view of one part stays what Spark calls it, and a table of
another catalog is read as Spark finds it (not pinned, not followed). :func:`pin` reads the current snapshot of
each catalog table (metadata only) and writes ``VERSION AS OF`` into the query, so the result is *as of* those
snapshots, which the result carries. Nothing here changes anything; a query that cannot run raises
:class:`QueryCellError` before any Spark job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mt_magic.errors import MtMagicError, NoSuchMaterializedTableError, first_line
from mt_magic.runtime.spark.quoting import is_temp_view
from mt_magic.runtime.spark.shown_rows import rendered
from mt_magic.sql.errors import QueryAnalysisError
from mt_magic.sql.names import Position
from mt_magic.sql.query.rewrite import QueryRewriteError, pin_sources, qualify_sources

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from mt_magic.runtime.workspace import Workspace

LABEL = "%%mtsql"
ORIGIN = Position(1, 1)
"""Where a query cell's query starts: the cell (or the string given to ``mt_magic.query``) is the query."""
CORRECT_IT = "correct the query there; DESCRIBE a table lists its columns"
ONE_QUERY = "the AS body must be exactly one query"


class QueryCellError(MtMagicError):
    """A query cell's query cannot run: it is not one query, names a table the catalog does not have, or Spark
    refused it. Nothing was run or stored."""


@dataclass(frozen=True)
class SourceSnapshot:
    """One catalog table a query read, and the snapshot it read."""

    table: str
    """``catalog.namespace.table``."""
    snapshot_id: int | None
    """``None``: the table had no snapshot yet (read empty)."""
    committed_at: datetime | None
    materialized: bool


@dataclass(frozen=True)
class ResolvedQuery:
    """A query with its tables qualified: what a live query re-runs each time (resolved once)."""

    text: str
    """As written."""
    expanded: str
    """Every source qualified, except the temporary views (kept as written through ``views``)."""
    tables: tuple[str, ...]
    """The catalog's tables it reads (pinned each run, followed by a live query)."""
    materialized: frozenset[str]
    """Those of ``tables`` that are materialized tables."""
    unpinned: tuple[str, ...] = ()
    """Qualified names read as Spark finds them: tables of other catalogs."""
    views: Mapping[str, str] = field(default_factory=dict)
    """Qualified name → the temporary view it really is."""


@dataclass(frozen=True)
class PinnedQuery:
    """A resolved query pinned to snapshots: the SQL Spark runs and what it reads."""

    sql: str
    as_of: tuple[SourceSnapshot, ...]
    written: str | None = None
    """The query as the user typed it (a refusal of ``sql`` is placed there)."""


@dataclass(frozen=True)
class QueryResult:
    """Up to ``limit`` rows of one run, as plain Python values, and the snapshots they are as of."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    as_of: tuple[SourceSnapshot, ...]
    truncated: bool
    """More rows than ``limit`` exist."""
    limit: int
    started_at: datetime
    finished_at: datetime


def resolve(ws: Workspace, text: str) -> ResolvedQuery:
    """Read ``text`` once and resolve its names (catalog metadata; no Spark job).

    Raises:
        QueryCellError: not exactly one query, a name ``sql.names`` refuses, or a table the catalog lacks.
    """
    from mt_magic.sql.query.analysis import analyze_query

    try:
        facts = analyze_query(text, statement=LABEL)
    except QueryAnalysisError as exc:
        if exc.problem.startswith(ONE_QUERY):
            found = exc.problem.rpartition("found ")[2]
            raise QueryCellError(
                f"{LABEL} runs exactly one query, found {found}",
                fix="write one SELECT (or WITH … SELECT); statements go in a %%materialized cell or spark.sql()",
            ) from None
        raise QueryCellError(str(exc)) from None
    known = frozenset({ws.catalog.spark_name.lower(), "spark_catalog"})
    try:
        expanded, sources = qualify_sources(text, ws.catalog.spark_name, ws.default_namespace, known)
    except QueryRewriteError as exc:
        raise QueryCellError(exc.problem, statement=LABEL, offending=exc.offending, fix=exc.fix) from None
    temp = {s.name for s in facts.sources if s.namespace is None and is_temp_view(ws.spark, s.name)}
    views = {f"{ws.catalog.spark_name}.{ws.default_namespace}.{name}": name for name in temp}
    ours = f"{ws.catalog.spark_name}."
    tables, materialized = [], set()
    for name in sources:
        if name in views or not name.startswith(ours):
            continue
        try:
            info = ws.catalog.load(name)
        except NoSuchMaterializedTableError:
            raise QueryCellError(
                f"table {name} does not exist in catalog {ws.catalog.spark_name}",
                statement=LABEL,
                did_you_mean=ws.catalog.closest_to(name),
                fix=f"check the name (unqualified names are in namespace {ws.default_namespace!r}); SHOW "
                "MATERIALIZED TABLES lists the materialized ones",
            ) from None
        tables.append(name)
        if info.definition is not None:
            materialized.add(name)
    unpinned = tuple(s for s in sources if s not in views and not s.startswith(ours))
    return ResolvedQuery(text, expanded, tuple(tables), frozenset(materialized), unpinned, views)


def pin(ws: Workspace, query: ResolvedQuery) -> PinnedQuery:
    """The query reading each catalog table at its current snapshot (metadata only).

    Raises:
        QueryCellError: a table it reads was dropped since the query was resolved.
    """
    as_of = tuple(_current(ws, name, name in query.materialized) for name in query.tables)
    snapshots: dict[str, int | None] = {s.table: s.snapshot_id for s in as_of}
    snapshots.update(dict.fromkeys(query.unpinned))
    return PinnedQuery(pin_sources(query.expanded, snapshots, dict(query.views)), as_of, query.text)


def current_snapshots(ws: Workspace, query: ResolvedQuery) -> dict[str, int | None]:
    """The current snapshot of each catalog table ``query`` reads (to tell whether a re-run would differ).

    Raises:
        QueryCellError: a table it reads was dropped.
    """
    return {name: _current(ws, name, name in query.materialized).snapshot_id for name in query.tables}


def _current(ws: Workspace, name: str, materialized: bool) -> SourceSnapshot:
    try:
        info = ws.catalog.load(name, reuse_unchanged=True)  # a live query's poll repeats: revalidate, not reload
    except NoSuchMaterializedTableError:
        raise QueryCellError(
            f"table {name} no longer exists in catalog {ws.catalog.spark_name}",
            statement=LABEL,
            fix=f"re-create {name}, or run a query that does not read it",
        ) from None
    committed = next((s.committed_at for s in info.snapshots if s.snapshot_id == info.current_snapshot_id), None)
    return SourceSnapshot(name, info.current_snapshot_id, committed, materialized)


def frame(ws: Workspace, pinned: PinnedQuery) -> DataFrame:
    """The pinned query as a Spark DataFrame (analysed now, lazy otherwise).

    Raises:
        QueryCellError: Spark refused the query (unknown column, type error, …), said at the line and column of the
            text as typed, with the column or function meant.
    """
    from mt_magic.runtime.spark.analysis_errors import placed_refusal

    try:
        return ws.spark.sql(pinned.sql)
    except Exception as exc:  # AnalysisException, ParseException: placed in the text as typed, as CREATE's are
        refusal = placed_refusal(exc, pinned.sql, pinned.written, ORIGIN, ws.spark, otherwise=CORRECT_IT)
        raise QueryCellError(
            f"Spark cannot analyse the query: {refusal.problem}",
            statement=LABEL,
            position=refusal.position,
            fix=refusal.fix,
        ) from None


def collect(ws: Workspace, query: ResolvedQuery, limit: int, clock: Callable[[], datetime]) -> QueryResult:
    """Pin, run and collect up to ``limit`` rows (Spark: never on the manager's thread).

    Raises:
        QueryCellError: a table was dropped, or Spark refused or failed the query.
    """
    started = clock()
    pinned = pin(ws, query)
    result = frame(ws, pinned)
    rows = _spark("run", lambda: rendered(result.limit(limit + 1)).collect())
    return QueryResult(
        tuple(result.columns),
        tuple(tuple(row) for row in rows[:limit]),
        pinned.as_of,
        len(rows) > limit,
        limit,
        started,
        clock(),
    )


def to_pandas(ws: Workspace, query: ResolvedQuery, limit: int) -> tuple[pd.DataFrame, bool]:
    """Up to ``limit`` rows as a pandas DataFrame (``attrs["as_of"]``: table → snapshot id) and whether more
    rows exist.

    Raises:
        QueryCellError: Spark refused or failed the query.
    """
    pinned = pin(ws, query)
    result = frame(ws, pinned)
    table = _spark("run", lambda: result.limit(limit + 1).toPandas())
    truncated = len(table) > limit
    table = table.iloc[:limit]
    table.attrs["as_of"] = {s.table: s.snapshot_id for s in pinned.as_of}
    return table, truncated


def _spark(what: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except MtMagicError:
        raise
    except Exception as exc:  # Spark's AnalysisException, ParseException, a failed job: said in one line
        raise QueryCellError(
            f"Spark could not {what} the query: {first_line(exc)}",
            statement=LABEL,
            fix="Spark's words say what failed: correct the query (or the rows it reads) and run it again",
        ) from None


def checked_limit(limit: int) -> int:
    """``limit``, the rows a query cell keeps, when it is at least 1.

    Raises:
        QueryCellError: it is less.
    """
    if limit < 1:
        raise QueryCellError(
            f"the row limit must be at least 1, got {limit}",
            statement=LABEL,
            fix="give 1 or more: %%mtsql --limit 100, or limit=100 from Python",
        )
    return limit


class QuerySource:
    """What a live query re-runs: one resolved query against the service's current workspace.

    Args:
        workspace: the workspace at each call (the service's; ``%config`` may replace it).
        query: resolved once, when the cell ran.
        limit: rows a run keeps.
    """

    def __init__(
        self, workspace: Callable[[], Workspace], query: ResolvedQuery, limit: int, clock: Callable[[], datetime]
    ) -> None:
        self._workspace = workspace
        self.query = query
        self.limit = checked_limit(limit)
        self.clock = clock

    @property
    def tables(self) -> tuple[str, ...]:
        return self.query.tables

    def run(self) -> QueryResult:
        return collect(self._workspace(), self.query, self.limit, self.clock)

    def current_snapshots(self) -> dict[str, int | None]:
        return current_snapshots(self._workspace(), self.query)
