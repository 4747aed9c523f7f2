"""``START_MODE``: where a materialized table starts reading its sources, decided from Iceberg snapshots.

At CREATE (and CREATE OR ALTER) the start instant is resolved, per source, to the **start snapshot**: the last
snapshot committed before the instant, whose rows count as already consumed (``None``: the source had no
snapshot then, so all of it counts). A source with no snapshot at or after the instant contributes nothing
until its next snapshot. The resolved snapshots are stored in the definition, so every kernel, every refresh
and every restart agree on them.

What the table holds: the query over each source's **window** — its rows at the refresh's pinned snapshot that
were not in its start snapshot (multiset difference: rows appended since the start, and the new versions of
rows updated since; deletes of rows older than the start change nothing, they were never in) — plus, for a
resumed or converted table, the rows it **kept** (its own snapshot at that statement), unchanged by later
source changes. A full recompute (the first refresh, FULL mode, any fallback) computes exactly that; an
incremental refresh is taken only where it equals it (:func:`window_fallback`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import MaterializedTableDefinition, SourceState
from mt_magic.catalog.tables import MaterializedCatalog, TableInfo
from mt_magic.errors import DefinitionError, RefreshError
from mt_magic.runtime.refresh.incremental.changes import ChangeKind
from mt_magic.runtime.refresh.incremental.multisets import except_all
from mt_magic.runtime.refresh.incremental.reasons import Fallback, FallbackReason, Strategy
from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.runtime.workspace import Workspace, utc_text
from mt_magic.sql.ddl.statements import StartMode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from mt_magic.runtime.refresh.incremental.planner import RefreshPlan

KEPT_TAG = "mt-kept-rows"
"""Iceberg tag on the table's kept snapshot: snapshot expiry never removes a tagged snapshot."""
DELTA_ONLY = frozenset({Strategy.APPEND_DELTA, Strategy.AGGREGATE_MERGE, Strategy.NO_LOGICAL_CHANGE})
"""Strategies that read only the sources' appended rows and the table: on a window they compute the same."""


@dataclass(frozen=True)
class Start:
    """A resolved start: what the definition stores (see :class:`MaterializedTableDefinition`)."""

    mode: str = ""
    instant: datetime | None = None
    snapshots: dict[str, int | None] = field(default_factory=dict)
    kept: int | None = None


def snapshot_before(info: TableInfo, instant: datetime | None) -> int | None:
    """The last snapshot of the source's history committed before ``instant`` (``None``: none was)."""
    if instant is None:
        return None
    before = [s for s in info.snapshots if s.committed_at < instant]
    return before[-1].snapshot_id if before else None


def resolve_start(
    ws: Workspace, label: str, mode: StartMode | None, upstream: tuple[str, ...], table: TableInfo | None = None
) -> Start:
    """The start of a CREATE [OR ALTER]; ``table`` is the existing table it applies to (materialized or plain).

    * ``RESUME_OR_…`` on a table whose last refresh committed a state: the sources start at the snapshots that
      refresh consumed (sources it did not read: at the named start), and the table keeps its rows.
    * Otherwise the named start: ``FROM_BEGINNING`` reads all history; the others resolve their instant. A
      converted plain table keeps its rows when the start is not the beginning; a materialized table is
      recomputed from the start.

    Raises:
        DefinitionError: ``FROM_TIMESTAMP`` in the future; nothing was changed.
    """
    if mode is None:
        return Start()
    now = ws.clock()
    instant = mode.instant(now)
    if instant is not None and instant > now:
        raise DefinitionError(
            f"START_MODE = {mode.sql()} is in the future (now is {utc_text(now)}). Nothing changed",
            statement=label,
            fix="use FROM_NOW to start from the sources as of now, or a timestamp in the past",
        )
    infos = {name: ws.catalog.load(name) for name in upstream}
    last = table.last_refresh() if table is not None and table.definition is not None else None
    if mode.resume and last is not None:
        state = last[1]
        snapshots = {}
        for name, info in infos.items():
            recorded = state.source(name, info.uuid)
            snapshots[name] = recorded.snapshot_id if recorded is not None else snapshot_before(info, instant)
        return Start(mode.sql(), None, snapshots, table.current_snapshot_id if table is not None else None)
    if instant is None:
        return Start(mode.sql())
    snapshots = {name: snapshot_before(info, instant) for name, info in infos.items()}
    converted = table is not None and table.definition is None
    return Start(mode.sql(), instant, snapshots, table.current_snapshot_id if table is not None and converted else None)


def kept_tag(definition: MaterializedTableDefinition) -> dict[str, int | None]:
    """The tag that keeps the kept snapshot from expiry (``None``: no kept rows, remove it), written in the
    definition's commit."""
    return {KEPT_TAG: definition.kept_snapshot}


def with_start(definition: MaterializedTableDefinition, start: Start) -> MaterializedTableDefinition:
    """The definition with this start."""
    return replace(
        definition,
        start_mode=start.mode,
        start_instant=start.instant,
        start_snapshots=start.snapshots,
        kept_snapshot=start.kept,
    )


def restart(
    ws: Workspace,
    label: str,
    current: MaterializedTableDefinition,
    mode: StartMode | None,
    upstream: tuple[str, ...],
    table: TableInfo,
    query: str,
) -> MaterializedTableDefinition:
    """ALTER's start: a new one (CREATE OR ALTER … START_MODE), else the stored one, its new sources starting
    at the stored instant.

    Raises:
        DefinitionError: see :func:`resolve_start` and :func:`check_kept`; nothing was changed.
    """
    if mode is None:
        return replace(current, start_snapshots=extend_start(ws, current, upstream))
    start = resolve_start(ws, label, mode, upstream, table)
    check_kept(label, start, query)
    return with_start(current, start)


def extend_start(
    ws: Workspace, definition: MaterializedTableDefinition, upstream: tuple[str, ...]
) -> dict[str, int | None]:
    """ALTER … AS on a table that starts later: the new query's new sources start at the stored instant."""
    if not definition.start_snapshots:
        return dict(definition.start_snapshots)
    known = dict(definition.start_snapshots)
    return {
        name: known[name] if name in known else snapshot_before(ws.catalog.load(name), definition.start_instant)
        for name in upstream
    }


def check_kept(label: str, start: Start, query: str) -> None:
    """Kept rows are combined with the query's new rows by appending: refused for queries that merge rows.

    Raises:
        DefinitionError: the query aggregates or de-duplicates; nothing was changed.
    """
    from mt_magic.sql.query.analysis import analyze_query

    facts = analyze_query(query)
    if start.kept is not None and (facts.is_aggregate or facts.distinct):
        raise DefinitionError(
            f"START_MODE = {start.mode} keeps the table's rows and appends the query's rows for the source rows "
            "since the start, but this query aggregates or de-duplicates, so its groups would have to be merged "
            "with the kept rows. Nothing changed",
            statement=label,
            fix="use START_MODE = FROM_BEGINNING to recompute the table (or, for a new start, drop it and CREATE it "
            "with START_MODE = FROM_NOW)",
        )


def window_fallback(definition: MaterializedTableDefinition, plan: RefreshPlan) -> Fallback | None:
    """Why an incremental refresh of a table that starts later would not equal its full recompute.

    Appends reach the windows unchanged, so the strategies that read only appended rows and the table are
    exact; a row-level change may touch rows before the start, and joins and affected-group recomputes read
    whole sources.
    """
    if not definition.starts_later:
        return None
    if plan.strategy in DELTA_ONLY and len(plan.changes) == 1 and plan.changes[0].kind is not ChangeKind.ROW_LEVEL:
        return None
    return Fallback((FallbackReason.START_WINDOW,), f"START_MODE = {definition.start_mode or 'RESUME'}")


@contextmanager
def window_views(
    session: SparkSession,
    catalog: MaterializedCatalog,
    definition: MaterializedTableDefinition,
    states: tuple[SourceState, ...],
) -> Iterator[dict[str, str]]:
    """A temp view per source of a table that starts later, its window at the pinned snapshot, for the body
    (dropped after it: the thread's child session serves the next refresh too).

    Raises:
        RefreshError: a start snapshot has expired or the source was re-created (its window cannot be read).
    """
    if not definition.starts_later:
        yield {}
        return
    views: dict[str, str] = {}
    try:
        for i, state in enumerate(states):
            name = state.qualified_name
            if name not in definition.start_snapshots:
                raise RefreshError(
                    f"{name} has no start position in the definition (read since CREATE without one)",
                    fix="recreate the table with CREATE OR ALTER … START_MODE = … to decide where it starts",
                )
            view = f"mt_start_window_{i}"
            window = _window(session, catalog, name, definition.start_snapshots[name], state.snapshot_id)
            window.createOrReplaceTempView(view)
            views[name] = view
        yield views
    finally:
        for view in views.values():
            session.catalog.dropTempView(view)


def _window(
    session: SparkSession, catalog: MaterializedCatalog, name: str, start: int | None, pinned: int | None
) -> DataFrame:
    now = session.table(qualified(name)) if pinned is None else table_at(session, name, pinned)
    if start is None:
        return now
    if start == pinned or pinned is None:
        return now.limit(0)
    info = catalog.load(name)
    between = info.snapshots_after(start)
    if between is None:
        raise RefreshError(
            f"its start snapshot {start} is no longer in its history (expired or re-created), so the rows added "
            "since the start cannot be told apart",
            statement=name,
            fix="recreate the table with a later START_MODE, or FROM_BEGINNING",
        )
    ids = [s.snapshot_id for s in between]
    upto = between[: ids.index(pinned) + 1] if pinned in ids else ()
    if upto and all(s.operation == "append" for s in upto):  # Iceberg's incremental scan reads only new files
        return (
            session.read.option("start-snapshot-id", str(start))
            .option("end-snapshot-id", str(pinned))
            .table(qualified(name))
        )
    return except_all(now, _as_columns_of(table_at(session, name, start), now))


def _as_columns_of(before: DataFrame, now: DataFrame) -> DataFrame:
    """The start snapshot's rows in today's columns: a column added since reads NULL (as Iceberg reads it for
    the old rows), so only a dropped or retyped column makes the two incomparable (Spark then says so)."""
    from pyspark.sql import functions as F

    present = set(before.columns)
    return before.select(
        [
            (F.col(identifier(f.name)) if f.name in present else F.lit(None).cast(f.dataType)).alias(f.name)
            for f in now.schema.fields
        ]
    )


def kept_rows(session: SparkSession, info: TableInfo, definition: MaterializedTableDefinition) -> DataFrame | None:
    """The rows a resumed or converted table keeps (its own snapshot at that statement), or ``None``.

    Raises:
        RefreshError: that snapshot has expired.
    """
    kept = definition.kept_snapshot
    if kept is None:
        return None
    if kept not in info.known_snapshot_ids:
        raise RefreshError(
            f"snapshot {kept}, holding the rows the table kept at its start, has expired; they cannot be recomputed",
            statement=info.name,
            fix="recreate the table with CREATE OR ALTER … START_MODE = FROM_BEGINNING",
        )
    return table_at(session, info.name, kept)
