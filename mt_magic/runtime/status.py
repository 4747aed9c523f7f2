"""Immutable records the RefreshManager publishes and everything else reads (widgets, magics, runner).

Nothing here does work; these are the shared vocabulary between the engine (``refresh.engine``, behind
``manager.backend``), the scheduler (``manager``) and the views (``widgets``). Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from mt_magic.vocabulary import JobState, RefreshEngine, RefreshKind, RefreshMode, RefreshTrigger, WorkflowSchedulerKind


@dataclass(frozen=True)
class ManagedTable:
    """What the manager needs to schedule one materialized table; read from the catalog by the backend."""

    name: str
    """Fully qualified ``catalog.namespace.table``."""
    mode: RefreshMode
    freshness: timedelta
    cron: str | None
    """FULL mode's schedule (croniter syntax); ``None`` in CONTINUOUS mode."""
    suspended: bool = False
    upstream: tuple[str, ...] = ()
    """Fully qualified names of the sources that are materialized tables themselves (what a cascade follows)."""
    sources: tuple[str, ...] = ()
    """Every source it reads, materialized or plain, fully qualified, in the definition's order (what
    ``TableStatus.upstream`` and the lineage's ``upstream`` say)."""
    partitioned_by: tuple[str, ...] = ()
    """The table's partition columns (a cascaded backfill reaches it with its partition only if they match)."""
    last_refresh_at: datetime | None = None
    """Commit time of the newest refresh snapshot, ``None`` before the first refresh."""
    mode_reason: str = ""
    """Why this mode / strategy (e.g. "incremental (aggregate merge)" or "fallback: window function")."""
    scheduler: WorkflowSchedulerKind = WorkflowSchedulerKind.KERNEL
    """Who runs its refreshes: on Airflow the manager shows it but never schedules it or takes its lease."""
    held: HeldRefresh | None = None
    """A refresh held by its expectations as the catalog shows it (``refresh.audit.held_in_catalog``): what the
    manager shows for a table this process did not refresh itself (on Airflow, or by another process)."""


@dataclass(frozen=True)
class RefreshRequest:
    """One unit of work handed to the backend."""

    table: str
    trigger: RefreshTrigger
    scheduled_time: datetime
    partition: tuple[tuple[str, str], ...] = ()
    """``PARTITION (k = 'v')`` of a backfill; empty for the default (whole table or formatter partition)."""
    options: tuple[tuple[str, str], ...] = ()
    """Dynamic options of the current resumption (``RESUME WITH``), e.g. Spark settings."""
    job_group: str = ""
    """Spark job group for cancellation; set by the manager."""


@dataclass(frozen=True)
class SourceDelta:
    """One source's change since the snapshot the last refresh consumed, from its snapshot summaries."""

    name: str
    rows_added: int
    rows_removed: int
    files_added: int
    files_removed: int
    rows_read: int = 0
    """Rows reading the change costs (the files it touched, whole: ``refresh.change_size``); 0 in records
    written before it was recorded, read as :attr:`rows_added` + :attr:`rows_removed`."""

    @property
    def read(self) -> int:
        return max(self.rows_read, self.rows_added + self.rows_removed)


@dataclass(frozen=True)
class Change:
    """What changed in a table's sources since its last refresh (every source's rows at its first)."""

    sources: tuple[SourceDelta, ...]
    changed_source_rows: int | None
    """Rows of the changed sources' pinned snapshots, the ratio's denominator (``None``: a summary lacks them)."""
    source_rows: int | None
    """Rows of every source's pinned snapshot: what a recompute reads (``None``: a summary lacks them)."""

    @property
    def rows(self) -> int:
        """Rows added plus rows removed over all sources: the size of the delta."""
        return sum(s.rows_added + s.rows_removed for s in self.sources)

    @property
    def rows_read(self) -> int:
        """Rows reading the change costs over all sources (at least :attr:`rows`): what ADAPTIVE's incremental line
        is read and learned at."""
        return sum(s.read for s in self.sources)

    @property
    def ratio(self) -> float | None:
        """:attr:`rows` over the changed sources' rows: the fraction ADAPTIVE weighs."""
        if self.changed_source_rows is None:
            return None
        return self.rows / self.changed_source_rows if self.changed_source_rows else 0.0


@dataclass(frozen=True)
class Estimates:
    """Each candidate's estimated seconds (``refresh.cost_model``); ``None``: not a candidate for this refresh."""

    incremental_s: float | None
    full_s: float | None
    basis: str = "priors"
    """Where the figures come from: "priors", or "fit over 12 incremental, 4 full refreshes"."""

    @property
    def favour_full(self) -> bool:
        """A recompute is estimated cheaper than the incremental refresh."""
        return self.incremental_s is not None and self.full_s is not None and self.full_s < self.incremental_s


@dataclass(frozen=True)
class Measured:
    """What a refresh actually cost; ``None``: not measured."""

    wall_s: float | None = None
    spark_task_s: float | None = None
    """Summed task time of the refresh's Spark jobs; 0 where no Spark job ran (in process, no-op)."""
    bytes_read: int | None = None
    bytes_written: int | None = None
    bytes_removed: int | None = None
    rows_written: int | None = None
    rows_removed: int | None = None
    spark_jobs: int | None = None
    """Spark jobs the refresh ran; 0 in process or for a no-op (``%mt history``, ``%mt explain``)."""


@dataclass(frozen=True)
class Decision:
    """Why one refresh did what it did, and what it cost (``refresh.decision_summary`` writes and reads it)."""

    chosen: RefreshKind
    """What ran: incremental, full, partition, or nothing (NOOP)."""
    reason: str
    """The strategy line: "incremental: …", "full: fallback — …", "full recompute", …"""
    change: Change | None = None
    """``None``: a source's history since the last refresh is gone (expired snapshots)."""
    estimates: Estimates | None = None
    measured: Measured = field(default_factory=Measured)


@dataclass(frozen=True)
class RefreshOutcome:
    """What a finished refresh did."""

    kind: RefreshKind
    snapshot_id: int | None
    """The committed snapshot, ``None`` for NOOP."""
    rows_written: int
    committed_at: datetime | None
    strategy: str = ""
    """Human description, e.g. "incremental: aggregate merge" or "full: fallback — window function"."""
    phases: tuple[tuple[str, float], ...] = ()
    """Where the time went: (phase, seconds) in order, e.g. ("metadata", 0.01), ("write", 0.09)."""
    engine: RefreshEngine = RefreshEngine.SPARK
    decision: Decision | None = None
    """The decision record (what it saw, estimated, chose and why, what it cost)."""


@dataclass(frozen=True)
class RefreshRecord:
    """One refresh as remembered (from the catalog's snapshot summaries, so it survives restarts)."""

    kind: RefreshKind
    trigger: RefreshTrigger
    started_at: datetime
    duration: timedelta
    rows_written: int
    snapshot_id: int | None
    error: str | None = None
    staleness_before: timedelta | None = None
    strategy: str = ""
    """The strategy line the refresh recorded, e.g. "incremental: merge the aggregated delta"."""
    engine: RefreshEngine | None = None
    """What computed the rows (``None``: a failed attempt)."""
    stall: Stall | None = None
    """The run ran far past its usual duration (flagged by the watchdog in this process); kept once it ends."""
    decision: Decision | None = None
    """Its decision record (``None``: a failed attempt, or a commit written before decisions were recorded)."""
    definition_version: int | None = None
    """The definition it refreshed (an ``ALTER … AS`` changes what a refresh computes; ``None``: not recorded)."""
    expectations: tuple[ExpectationCount, ...] = ()
    """Each expectation's rows passed, dropped and failed among the rows it computed (a table with expectations)."""


@dataclass(frozen=True)
class ExpectationCount:
    """One expectation on one refresh's rows: passed, dropped (``DROP ROW``: left out of the table) and failed (the
    others: kept and counted, or the refresh held by ``FAIL UPDATE``)."""

    name: str
    passed: int
    dropped: int
    failed: int

    def text(self) -> str:
        """``name: 98 passed, 2 dropped, 0 failed`` for history."""
        return f"{self.name}: {self.passed} passed, {self.dropped} dropped, {self.failed} failed"


@dataclass(frozen=True)
class JobProgress:
    """Spark's view of a running refresh (from the status tracker)."""

    tasks_done: int
    tasks_total: int
    active_jobs: int | None = None
    """Spark jobs of the group still running (``None``: the line does not tell, e.g. Spark Connect)."""
    active_stages: int | None = None
    running_tasks: int | None = None
    """Tasks executing right now; 0 means Spark does no work for the refresh at all."""

    @property
    def fraction(self) -> float:
        return self.tasks_done / self.tasks_total if self.tasks_total else 0.0


@dataclass(frozen=True)
class Stall:
    """A refresh running far past its usual duration, as the watchdog saw it (``manager.watchdog``)."""

    running_for: timedelta
    """How long it had run when last checked (or when it ended)."""
    usual: timedelta | None
    """The median duration of the table's recent refreshes; ``None``: none measured yet (the floor applies)."""
    flagged_after: timedelta
    """The threshold it passed: max(factor × usual, floor)."""
    limit: timedelta
    """When the manager cancels it and counts a failure."""
    spark: JobProgress | None = None
    """Spark's view of its job group when last checked; ``None``: no Spark job at all."""


@dataclass(frozen=True)
class MissingSource:
    """A source table the catalog does not have any more (dropped, renamed) or cannot load, as the last staleness
    poll or refresh found it; the table keeps its stored rows but is neither fresh nor refreshable."""

    source: str
    message: str
    """The error's text: both tables, what happened to the source, and the Fix."""


@dataclass(frozen=True)
class HeldExpectation:
    """One ``FAIL UPDATE`` expectation the rows of a held refresh failed."""

    name: str
    failed: int
    checked: int
    sample: tuple[str, ...] = ()
    """A few failing rows as ``col=value, …``: only in the process that ran the refresh (never in the catalog)."""
    to_see: str = ""
    """Where no sample is in memory (another process ran the refresh): the Spark SQL that reads a few failing rows,
    for the reader to run with their own rights (``refresh.audit.failing_rows_sql``)."""

    @property
    def text(self) -> str:
        """``positive failed on 3 of 120 rows (e.g. id=7, amount=-5)``, or ``… rows (see them: SELECT …)``."""
        shown = f" (e.g. {' | '.join(self.sample)})" if self.sample else ""
        shown = shown or (f" (see them: {self.to_see})" if self.to_see else "")
        return f"{self.name} failed on {self.failed} of {self.checked} rows{shown}"


@dataclass(frozen=True)
class HeldRefresh:
    """The table's last refresh was held by its expectations (write-audit-publish, ``refresh.audit``): its rows are
    staged on the audit branch, ``main`` stays on the last good snapshot, the next refresh tries again."""

    expectations: tuple[HeldExpectation, ...]
    """The ``FAIL UPDATE`` expectations that failed, in declaration order."""
    main_snapshot: int | None
    """Where ``main`` stays (``None``: the table has no snapshot yet)."""
    staged_snapshot: int
    """The held refresh's snapshot on the audit branch."""
    fix: str
    definition_changed: bool = False
    """The table's definition changed since the refresh was counted (an ``ALTER``): its failing rows are not shown
    (an SQL of today's definition would read other columns or another condition); the next refresh re-evaluates."""

    def facts(self, on: str = "") -> str:
        """Which expectations failed, on how many rows, with a sample, where ``main`` stays and the staged snapshot
        (``on``: where it is staged, e.g. `` on branch mt_staging``): the held sentence every surface shows."""
        where = "no snapshot yet" if self.main_snapshot is None else f"snapshot {self.main_snapshot}"
        changed = (
            "; the table's definition changed since, so its failing rows are not shown: the next refresh evaluates "
            "the new one"
            if self.definition_changed
            else ""
        )
        return (
            f"expectation {'; '.join(e.text for e in self.expectations)}. main stays at {where}; the refresh is "
            f"staged as snapshot {self.staged_snapshot}{on}{changed}"
        )

    @property
    def text(self) -> str:
        """:meth:`facts` and the Fix: the card's "held" row."""
        return f"{self.facts()}. Fix: {self.fix}."

    def without_sample(self) -> HeldRefresh:
        """The same facts without the failing rows (what may leave the process, e.g. in a lineage event)."""
        return replace(self, expectations=tuple(replace(e, sample=()) for e in self.expectations))


@dataclass(frozen=True)
class TableStatus:
    """An immutable snapshot of one table's state, safe to hand to any thread."""

    name: str
    mode: RefreshMode
    freshness: timedelta
    state: JobState
    mode_reason: str = ""
    last_refresh: RefreshRecord | None = None
    next_refresh_at: datetime | None = None
    staleness: timedelta | None = None
    """now − commit time of the oldest source change not yet reflected; zero when caught up."""
    last_error: str | None = None
    consecutive_failures: int = 0
    progress: JobProgress | None = None
    upstream: tuple[str, ...] = ()
    scheduler: WorkflowSchedulerKind = WorkflowSchedulerKind.KERNEL
    """Who runs its refreshes (on Airflow: its DAG's runs, not this manager)."""
    refreshed_by: str | None = None
    """The process holding the table's refresh lease (``None``: nobody, or leasing is off)."""
    refreshed_here: bool = False
    """Whether that is this process's manager (it refreshes the table; others leave it alone)."""
    paused: str | None = None
    """Why all work waits (the catalog cannot be reached), while it does; ``None`` otherwise."""
    stall: Stall | None = None
    """The running refresh is far past its usual duration (the watchdog's flag); ``None`` otherwise."""
    recent: tuple[RefreshRecord, ...] = ()
    """The table's latest refreshes this process knows, newest first (durations for the watchdog, strategy
    lines for recommendations)."""
    missing_source: MissingSource | None = None
    """A source it reads is gone or unreadable (its staleness is then unknown); ``None`` otherwise."""
    behind_upstream: str | None = None
    """The materialized table upstream (this manager's) whose unreflected source change is older than any of this
    table's own: ``staleness`` is measured from that change (rows read from a behind table are behind too, as the
    materialized-view draft's recursive freshness check says); ``None`` otherwise."""
    held: HeldRefresh | None = None
    """The last refresh was held by a ``FAIL UPDATE`` expectation (``main`` not moved); ``None`` otherwise."""

    @property
    def within_freshness(self) -> bool | None:
        """Whether staleness is within the target; ``None`` when unknown."""
        return None if self.staleness is None else self.staleness <= self.freshness


class EventKind(enum.Enum):
    """What happened, for subscribers of the manager's event stream."""

    TABLE_ADDED = "table-added"
    TABLE_REMOVED = "table-removed"
    STATE_CHANGED = "state-changed"
    REFRESH_STARTED = "refresh-started"
    REFRESH_PROGRESS = "refresh-progress"
    REFRESH_SUCCEEDED = "refresh-succeeded"
    REFRESH_FAILED = "refresh-failed"


@dataclass(frozen=True)
class RefreshEvent:
    """One event of the manager's stream, carrying the table's status right after it."""

    kind: EventKind
    table: str
    at: datetime
    status: TableStatus | None
    """``None`` only for TABLE_REMOVED."""
    message: str = field(default="")


@dataclass(frozen=True)
class Listing:
    """Rows a statement shows (SHOW, DESCRIBE): column headers and text cells, in order."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    text: str = ""
    """A statement's text to show as is (SHOW CREATE), instead of or before the rows."""
