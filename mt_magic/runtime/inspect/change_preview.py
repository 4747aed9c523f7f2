"""``%mt explain`` of a change before it is made: ``ALTER … AS``, ``CREATE OR ALTER`` of an existing materialized
table, ``SET FRESHNESS``, ``SET REFRESH_MODE`` and ``RESUME [WITH (…)]``.

Each statement's own decision (``runtime.statements.change.decided``: ``statements.alter_commit.altered_query`` and its
siblings, which the statement then writes) gives the definition it would write, checked as the statement
checks it; nothing is written. From that definition:

- **rows**: whether the table keeps them or rebuilds, and from where — the refresh's own decision over the new
  definition (``planner.table_state_fallback``: a new query version recomputes) and its start (``START_MODE``: the
  kept snapshot, the start snapshots, ``refresh.start``);
- **refreshes**: the refresh mode, schedule and strategy (``incremental.explain`` over the new definition);
- **cost**: per refresh and per hour from the table's history (``inspect.cost_history``), with the range of the
  durations it reads, or "no history yet".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from mt_magic.runtime.inspect.cost_history import (
    FULL_RECOMPUTE,
    DurationEstimate,
    HourlyCost,
    estimate,
    hourly_cost,
    refreshes_per_hour,
)
from mt_magic.runtime.refresh.incremental.explain import Explanation, explain_definition
from mt_magic.runtime.refresh.incremental.planner import table_state_fallback
from mt_magic.sql.ddl.freshness import humanize
from mt_magic.vocabulary import RefreshEngine, RefreshMode

if TYPE_CHECKING:
    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.catalog.tables import TableInfo
    from mt_magic.runtime.status import RefreshRecord
    from mt_magic.runtime.workspace import Workspace

LABEL = 20


class DecidedChange(Protocol):
    """A change as its statement decided it, not written (``statements.change.DecidedChange``)."""

    @property
    def name(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def definition(self) -> MaterializedTableDefinition: ...
    @property
    def notes(self) -> tuple[str, ...]: ...
    @property
    def appended(self) -> tuple[tuple[str, str], ...]: ...


@dataclass(frozen=True)
class ChangePreview:
    """What a change would do to a table, said before it is made; ``str()`` is what ``%mt explain`` prints."""

    statement: str
    """The statement, e.g. ``ALTER MATERIALIZED TABLE mt.default.daily AS``."""
    table: str
    keeps_rows: bool
    rows: str
    """Whether it keeps its rows or rebuilds, and from where."""
    changes: tuple[tuple[str, str], ...]
    """(what, before → after) of the definition: query version, columns, schedule, state."""
    next_refresh: str
    """What the next refresh does under the new definition (the refresh's own decision)."""
    first: DurationEstimate | None
    """The next refresh's predicted duration (a recompute after a new query); ``None``: no history."""
    then: HourlyCost | None
    """The refreshes after it: per refresh and per hour; ``None``: no history, or no refreshes scheduled."""
    then_strategy: str
    explanation: Explanation
    """How refreshes run under the new definition."""
    notes: tuple[str, ...] = ()

    def _cost_lines(self) -> list[str]:
        if self.first is None:
            return [f"  {'cost:':<{LABEL}}no history yet (no refresh has committed), so no prediction"]
        first = self.first.strategy != self.then_strategy
        lines = [f"  {'that refresh:':<{LABEL}}{self.first.strategy}: {self.first}"] if first else []
        if self.then is None:
            return [*lines, f"  {'per refresh:':<{LABEL}}no refreshes scheduled ({self.then_strategy})"]
        return [
            *lines,
            f"  {'per refresh:':<{LABEL}}{self.then_strategy}: {self.then.per_refresh}",
            f"  {'per hour:':<{LABEL}}{self.then}",
        ]

    def __str__(self) -> str:
        lines = [
            f"{self.statement}: a preview (nothing changed)",
            f"  {'rows:':<{LABEL}}{self.rows}",
            *(f"  {what + ':':<{LABEL}}{change}" for what, change in self.changes),
            f"  {'next refresh:':<{LABEL}}{self.next_refresh}",
            "predicted cost, from the table's recent refreshes:",
            *self._cost_lines(),
            *(f"  note: {n}" for n in self.notes),
            "refreshes after the change:",
            *("  " + line for line in str(self.explanation).splitlines()),
        ]
        return "\n".join(lines)


def _schedule(definition: MaterializedTableDefinition) -> str:
    every = f"cron {definition.cron}" if definition.refresh_mode is RefreshMode.FULL and definition.cron else None
    text = f"{definition.refresh_mode.value}, {every or 'every ' + humanize(definition.interval)}"
    return text + (" (suspended)" if definition.suspended else "")


def _rows_of(info: TableInfo) -> str:
    current = next((s for s in reversed(info.snapshots) if s.snapshot_id == info.current_snapshot_id), None)
    count = None if current is None else current.summary.get("total-records")
    return f"its {int(count):,} row(s)" if count is not None else "its rows"


def _start(definition: MaterializedTableDefinition) -> str:
    """Where a recompute under ``definition`` reads its sources from (``refresh.start``)."""
    if definition.start_instant is not None:
        since = f"{definition.start_instant:%Y-%m-%d %H:%M:%S} UTC"
        return f"the sources' rows since {since} (START_MODE = {definition.start_mode})"
    if definition.start_snapshots:
        return f"the sources' changes after its start snapshots (START_MODE = {definition.start_mode})"
    return "all of its sources' history (START_MODE = FROM_BEGINNING)"


def _rows(info: TableInfo, before: MaterializedTableDefinition, after: MaterializedTableDefinition) -> tuple[bool, str]:
    """Keeps its rows or rebuilds: the refresh's decision over the new definition (a new query version recomputes,
    ``table_state_fallback``), with what the recompute keeps and reads (the kept snapshot, the start)."""
    if info.last_refresh() is None:
        return False, "none yet: the first refresh (full) has not committed; it computes them"
    if table_state_fallback(info, after) is None or after.definition_version == before.definition_version:
        full = after.refresh_mode is RefreshMode.FULL
        then = "each refresh in FULL mode recomputes the whole table" if full else "refreshes continue incrementally"
        return True, f"keeps {_rows_of(info)} (the query is unchanged; {then} from the last refresh's snapshots)"
    if after.kept_snapshot is not None and after.kept_snapshot == info.current_snapshot_id:
        return True, (
            f"keeps {_rows_of(info)} (snapshot {after.kept_snapshot}, START_MODE = {after.start_mode}); the next "
            "refresh adds the new query's rows for the source changes after the snapshots the last refresh consumed"
        )
    kept = f", plus the rows kept at its start (snapshot {after.kept_snapshot})" if after.kept_snapshot else ""
    return (
        False,
        f"rebuilds: the next refresh recomputes the new query over {_start(after)}{kept}, replacing {_rows_of(info)}",
    )


def preview_change(ws: Workspace, change: DecidedChange, history: Sequence[RefreshRecord]) -> ChangePreview:
    """What a change would do to its table, from the definition it would write (``change``: the statement's own
    decision, ``statements.change.decided``) and the table's ``history`` (newest first); reads the catalog, writes
    nothing.

    Raises:
        NoSuchMaterializedTableError: the change names no materialized table.
    """
    name, label, after, notes = change.name, change.label, change.definition, change.notes
    info, before = ws.catalog.load_materialized(name)
    keeps, rows = _rows(info, before, after)
    changes = []
    if after.definition_version != before.definition_version:
        changes.append(("query", f"definition version {before.definition_version} → {after.definition_version}"))
    old, new = _schedule(before), _schedule(after)
    changes.append(("schedule", old if old == new else f"{old} → {new}"))
    explanation = explain_definition(ws, info, after, change.appended)
    next_refresh = explanation.next_refresh or "a full recompute (FULL mode)"
    if after.refresh_mode is RefreshMode.FULL or explanation.plan.fallback is not None:
        strategy = FULL_RECOMPUTE
    else:
        strategy = explanation.on_appends.label if explanation.on_appends else FULL_RECOMPUTE
    recomputes = after.refresh_mode is RefreshMode.FULL or next_refresh.startswith("full")
    first = estimate(history, FULL_RECOMPUTE if recomputes else strategy)
    rate = 0.0 if after.suspended else refreshes_per_hour(after.refresh_mode, after.interval, after.cron, ws.clock())
    # the engine line says where appends run: "Spark (why)" when the new definition cannot run in process
    engine = RefreshEngine.SPARK if explanation.engine.startswith(RefreshEngine.SPARK.value) else None
    then = hourly_cost(history, strategy, rate, engine) if rate else None
    if after.definition_version != before.definition_version and first is not None:
        notes += ("the durations are the current query's; the new query's may differ",)
    if after.kept_snapshot is not None and first is not None:
        notes += ("that refresh writes the kept rows again with the new query's: it costs a recompute, not less",)
    return ChangePreview(
        statement=label,
        table=name,
        keeps_rows=keeps,
        rows=rows,
        changes=tuple(changes),
        next_refresh=next_refresh,
        first=first,
        then=then,
        then_strategy=strategy,
        explanation=replace(explanation, next_refresh=""),
        notes=notes,
    )
