"""The shared vocabulary of materialized tables: every state and kind as a documented enum, at the bottom.

Imported by every layer (the grammar, the catalog's encoding, the runtime, the views) and importing nothing,
so a value is decoded from text once — where the catalog or the parser reads it — and compared as a member
everywhere else, never as a string.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class RefreshMode(enum.Enum):
    """How a materialized table is kept fresh."""

    CONTINUOUS = "CONTINUOUS"
    """Refreshed every freshness interval, incrementally where the query and the change allow."""
    FULL = "FULL"
    """Recomputed on a cron schedule derived from the freshness (whole table or one partition)."""


class RefreshKind(enum.Enum):
    """What a refresh actually did to the table (recorded in the snapshot summary)."""

    FULL = "full"
    """Recomputed and overwrote the whole table."""
    PARTITION = "partition"
    """Recomputed and overwrote one partition (date formatter or backfill)."""
    INCREMENTAL = "incremental"
    """Merged only what changed in the sources since the consumed snapshots."""
    NOOP = "noop"
    """Sources unchanged since the last refresh: nothing written, no commit."""


class RefreshTrigger(enum.Enum):
    """Why a refresh ran."""

    INITIAL = "initial"
    """The first population right after CREATE."""
    SCHEDULED = "scheduled"
    """Its freshness interval or cron time came."""
    MANUAL = "manual"
    """ALTER … REFRESH, the Refresh button, or ``%mt refresh``."""
    CASCADE = "cascade"
    """An upstream materialized table committed, or a backfill cascaded down."""
    CATCH_UP = "catch-up"
    """A new kernel or runner found the table behind and caught it up once."""


class RefreshEngine(enum.Enum):
    """What computed a refresh's rows."""

    SPARK = "Spark"
    """A Spark job (every full and partition refresh, and incremental ones the in-process path does not take)."""
    IN_PROCESS = "in process (DuckDB)"
    """The in-process path: pyiceberg reads, DuckDB runs the same SQL, pyiceberg commits; no Spark job."""
    NONE = "nothing ran"
    """No source changed: nothing was computed or committed (a no-op refresh)."""


class JobState(enum.Enum):
    """Where a table is in its refresh life, as the manager sees it."""

    IDLE = "idle"
    """Known, not suspended, and nothing scheduled (e.g. the manager is not running)."""
    SCHEDULED = "scheduled"
    """Waiting for its next refresh time."""
    RUNNING = "running"
    """A refresh job is executing on Spark."""
    RETRYING = "retrying"
    """The last attempt failed; another is scheduled after a backoff."""
    SUSPENDED = "suspended"
    """ALTER … SUSPEND: no refreshes until RESUME."""
    FAILED = "failed"
    """Repeated failures: shown as failed, still retried at a slow rate."""


class RunHealth(enum.Enum):
    """How a running refresh compares with its usual duration (the stall watchdog, ``manager.watchdog``)."""

    ON_TIME = "on time"
    """Within its stall threshold: max(factor × the median of its recent durations, floor)."""
    STALLED = "stalled"
    """Past the threshold: flagged on the card, in ``%mt`` and in its history row; still running."""
    OVER_LIMIT = "over its time limit"
    """Past the hard limit: the manager cancels its job group and counts a failure (normal backoff)."""


class StatementAction(enum.Enum):
    """What a statement did, as its result reports it (the views decide from it which cards to show)."""

    CREATED = "created"
    ALTERED = "altered"
    RENAMED = "renamed"
    SUSPENDED = "suspended"
    RESUMED = "resumed"
    REFRESHING = "refreshing"
    """A refresh was requested; the result's future tells when it has committed."""
    CANCELLED = "cancelled"
    """The running refresh was cancelled (the card's Cancel); the table's schedule goes on."""
    DROPPED = "dropped"
    SHOWN = "shown"
    """SHOW or DESCRIBE: nothing changed."""


class WorkflowSchedulerKind(enum.Enum):
    """What runs a materialized table's refreshes (``WITH ('scheduler' = …)``; Flink's FLIP-448 seam)."""

    KERNEL = "kernel"
    """The RefreshManager of a kernel or of ``python -m mt_magic run`` (the default)."""
    AIRFLOW = "airflow"
    """An Apache Airflow DAG built from the catalog (``mt_magic.scheduling.airflow_dags``)."""


HIDDEN_COLUMN_PREFIX = "__mt_key_"
"""Names of a storage table's hidden key columns (``__mt_key_0``, …): the row identity an affected-slice refresh
needs when the SELECT list does not show it (a LEFT join showing only the left table's id, a semi join). They are
columns of the Iceberg table, so engines reading it directly see them; the table's Iceberg view, DESCRIBE, SHOW
CREATE and previews leave them out. A user column may not start with it (``sql.names.column_name_problem``)."""


def is_hidden_column(name: str) -> bool:
    """Whether ``name`` is one of mt_magic's hidden key columns (the prefix, in any letter case)."""
    return name.lower().startswith(HIDDEN_COLUMN_PREFIX)


class OnViolation(enum.Enum):
    """What a refresh does with a row whose expectation is not TRUE (FALSE or NULL): ``ON VIOLATION …``."""

    KEEP = ""
    """No ``ON VIOLATION``: the row is kept and counted."""
    DROP_ROW = "DROP ROW"
    """The row is left out of the table (the stored query filters it)."""
    FAIL_UPDATE = "FAIL UPDATE"
    """The refresh is held on its staging branch: ``main`` keeps the last good snapshot."""


@dataclass(frozen=True)
class Expectation:
    """``CONSTRAINT name EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]``: a row passes when ``condition``
    (Spark SQL over the table's columns) is TRUE; FALSE and NULL violate it."""

    name: str
    condition: str
    on_violation: OnViolation = OnViolation.KEEP

    def sql(self) -> str:
        """The clause as SHOW CREATE writes it."""
        action = f" ON VIOLATION {self.on_violation.value}" if self.on_violation is not OnViolation.KEEP else ""
        return f"CONSTRAINT `{self.name.replace('`', '``')}` EXPECT ({self.condition}){action}"
