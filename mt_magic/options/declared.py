"""mt_magic's ``WITH`` options, each declared once: key, values or parser, default, help and Fix.

Options mt_magic gives no meaning to are kept as table properties of the user's own (the grammar refuses
Paimon's, Kafka's and Flink connectors' options: :mod:`mt_magic.sql.ddl.options`).
"""

from __future__ import annotations

import enum

from mt_magic.options.registry import Choice, ColumnOption, Option, declared
from mt_magic.options.settings import ANSWER_SETTINGS
from mt_magic.vocabulary import WorkflowSchedulerKind


class IncrementalPolicy(enum.Enum):
    """The ``'incremental'`` WITH option of a CONTINUOUS table."""

    AUTO = "auto"
    """The default (Snowflake's ADAPTIVE): incremental where correct and cheaper, else a full recompute, and why."""
    ALWAYS = "always"
    """Incremental wherever correct, whatever the change costs; a full recompute only where it must."""
    STRICT = "strict"
    """Incremental or nothing: a refresh that would need a full recompute fails instead."""
    NEVER = "never"
    """Always recompute (on the CONTINUOUS schedule): for queries whose deltas cost more than they save."""


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError(text)
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


INCREMENTAL: Option[IncrementalPolicy] = Option(
    "incremental",
    "how a CONTINUOUS table chooses between an incremental refresh and a full recompute",
    IncrementalPolicy,
    IncrementalPolicy.AUTO,
    choices=(
        Choice("auto", "the default: incremental where correct and cheaper"),
        Choice("always", "incremental wherever correct"),
        Choice("strict", "fail rather than recompute"),
        Choice("never", "always recompute"),
    ),
)
ENGINE: Option[str] = Option(
    "incremental.engine",
    "where incremental refreshes run: in process for small append-only ones, or always on Spark",
    str,
    "auto",
    choices=(
        Choice(
            "auto", "the default: small append-only refreshes of simple queries run in process, without a Spark job"
        ),
        Choice("spark", "every refresh runs on Spark"),
    ),
)
MAX_CHANGE: Option[float] = Option(
    "incremental.max-change-fraction",
    "for 'auto': past this fraction of the changed sources' rows, a full recompute is chosen",
    _fraction,
    None,
    expects="a fraction in (0, 1], e.g. '0.3'",
    fix="write a number above 0 and at most 1: past it a full recompute is chosen over an incremental refresh",
)
DEFAULT_MAX_CHANGE = 0.3
"""What :data:`MAX_CHANGE` is where a recompute can be cheaper and the table does not say. Incremental work grows
with the change and a recompute does not: past about a third of the input changed, recomputing wins (pg_trickle
measured incremental at 0.6–0.7× of a recompute at 50 % changed). Measured here (``bench_incremental.py --parts
crossover``, 2 M rows): a GROUP BY merge at 0.98× of a recompute at 30 %, 0.73× at 67 %; the partitioned
affected-partition recompute 0.95× at 30 %, 0.54× at 67 %. An append of the delta has no crossover (see
:func:`mt_magic.runtime.refresh.incremental.planner.cheaper_to_recompute`)."""
SCHEDULER: Option[WorkflowSchedulerKind] = Option(
    "scheduler",
    "who runs the table's refreshes (without it, %config MaterializedMagics.scheduler decides)",
    WorkflowSchedulerKind,
    None,
    choices=(
        Choice(WorkflowSchedulerKind.KERNEL.value, "the kernel's RefreshManager"),
        Choice(WorkflowSchedulerKind.AIRFLOW.value, "an Airflow DAG built from the catalog"),
    ),
)
CONVERT: Option[bool] = Option(
    "convert-existing-table",
    "CREATE OR ALTER converts an existing plain Iceberg table of that name in place (never stored)",
    lambda text: text == "true",
    False,
    choices=(Choice("true", "convert the plain table in place"), Choice("false", "the default: do not")),
)
BASELINE: Option[str] = Option(
    "sql-settings.baseline",
    "a named baseline of Spark SQL settings (e.g. 'spark-3.5.9'), expanded into the recorded ones, never stored",
    str,
)
MAX_AGE_MS: Option[int] = Option(
    "history.expire.max-snapshot-age-ms",
    "Iceberg's snapshot retention: snapshots older than this expire (default: 100 freshness periods, at least 1 h)",
    _count,
    None,
    expects="a whole number of milliseconds above 0",
    fix="write e.g. '86400000' (a day), or remove it for 100 freshness periods",
)
MIN_TO_KEEP: Option[int] = Option(
    "history.expire.min-snapshots-to-keep",
    "Iceberg's snapshot retention: at least this many snapshots stay",
    _count,
    100,
    expects="a whole number of snapshots above 0",
    fix="write e.g. '100' (the default)",
)
DATE_FORMATTER = ColumnOption(
    "partition.fields.",
    ".date-formatter",
    "Flink's Java DateTimeFormatter pattern of a string partition column's value in FULL mode, e.g. 'yyyyMMdd'",
)
"""``partition.fields.<col>.date-formatter``: the pattern is checked by :mod:`mt_magic.sql.ddl.formatter`."""

OPTIONS = declared(
    INCREMENTAL,
    ENGINE,
    MAX_CHANGE,
    SCHEDULER,
    CONVERT,
    BASELINE,
    MAX_AGE_MS,
    MIN_TO_KEEP,
    *(Option(key, f"pins the Spark SQL setting: {what}", str) for key, what in sorted(ANSWER_SETTINGS.items())),
)
"""Every declared option by lower-cased key, mt_magic's own first (completion offers them in this order)."""

NEIGHBOURS = frozenset({"history.expire.max-ref-age-ms"})
"""Iceberg table properties within a typo of a declared key (``history.expire.max-snapshot-age-ms``): kept as
written, never refused as a misspelling (:func:`~mt_magic.options.lookup.misspelt`)."""
