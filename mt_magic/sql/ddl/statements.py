"""Typed, immutable statements parsed from a ``%%materialized`` cell.

These records are the contract between the SQL front end (which builds them) and the runtime (which
executes them). They hold what the user wrote; defaults and derived values (effective refresh mode, cron)
come from :mod:`mt_magic.sql.ddl.freshness`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import ClassVar, get_args

from mt_magic.sql.names import Position, TableName
from mt_magic.vocabulary import Expectation, RefreshMode


class FreshnessUnit(enum.Enum):
    """The units FRESHNESS accepts (Flink's rule: no MONTH or YEAR)."""

    SECOND = "SECOND"
    MINUTE = "MINUTE"
    HOUR = "HOUR"
    DAY = "DAY"

    @property
    def seconds(self) -> int:
        return {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}[self.value]


@dataclass(frozen=True)
class Freshness:
    """A positive whole number of one unit, e.g. ``INTERVAL '5' MINUTE``."""

    value: int
    unit: FreshnessUnit

    def __post_init__(self) -> None:
        if self.value <= 0:
            raise ValueError(f"freshness must be a positive whole number, got {self.value}")

    def to_timedelta(self) -> timedelta:
        return timedelta(seconds=self.value * self.unit.seconds)

    def sql(self) -> str:
        """The canonical SQL form, stored in the catalog and shown to users."""
        return f"INTERVAL '{self.value}' {self.unit.value}"

    def __str__(self) -> str:
        return self.sql()


@dataclass(frozen=True)
class ColumnDef:
    """A column in the optional column list: a name, and optionally a Spark SQL type and a comment."""

    name: str
    type: str | None = None
    comment: str | None = None


@dataclass(frozen=True)
class PrimaryKey:
    """``[CONSTRAINT name] PRIMARY KEY (cols) NOT ENFORCED`` — becomes Iceberg identifier fields."""

    columns: tuple[str, ...]
    constraint_name: str | None = None


@dataclass(frozen=True)
class Distribution:
    """``DISTRIBUTED BY HASH(col, …) INTO n BUCKETS`` — rows hashed into ``buckets`` buckets by each column."""

    columns: tuple[str, ...]
    buckets: int

    def __post_init__(self) -> None:
        if not self.columns or self.buckets < 1:
            raise ValueError(f"a distribution needs columns and at least one bucket, got {self}")

    def sql(self) -> str:
        cols = ", ".join("`" + c.replace("`", "``") + "`" for c in self.columns)
        return f"DISTRIBUTED BY HASH({cols}) INTO {self.buckets} BUCKETS"


class StartFrom(enum.Enum):
    """Where ``START_MODE`` starts reading the sources (Flink 2.3, FLINK-39303)."""

    BEGINNING = "FROM_BEGINNING"
    """All of the sources' history (the default)."""
    NOW = "FROM_NOW"
    """The sources as of CREATE, or as of CREATE minus the interval."""
    TIMESTAMP = "FROM_TIMESTAMP"
    """The sources as of a given instant."""


@dataclass(frozen=True)
class StartMode:
    """``START_MODE = [RESUME_OR_]FROM_BEGINNING | FROM_NOW[(INTERVAL …)] | FROM_TIMESTAMP(…)``.

    ``resume``: on CREATE OR ALTER of a materialized table with a committed refresh, continue from the
    source snapshots it consumed; otherwise (and on a new table) start as ``start`` says.
    """

    start: StartFrom = StartFrom.BEGINNING
    resume: bool = False
    lookback: Freshness | None = None
    """``FROM_NOW(INTERVAL …)``: start this long before now."""
    timestamp: datetime | None = None
    """``FROM_TIMESTAMP(…)``: the instant, timezone-aware (UTC when the text gave no offset)."""

    def __post_init__(self) -> None:
        if (self.timestamp is not None) != (self.start is StartFrom.TIMESTAMP) or (
            self.lookback is not None and self.start is not StartFrom.NOW
        ):
            raise ValueError(f"inconsistent START_MODE {self!r}")
        if self.timestamp is not None and self.timestamp.tzinfo is None:
            raise ValueError(f"START_MODE timestamp must be timezone-aware, got {self.timestamp}")

    def instant(self, now: datetime) -> datetime | None:
        """The instant the sources are read from (``None``: from the beginning)."""
        if self.start is StartFrom.NOW:
            return now - self.lookback.to_timedelta() if self.lookback else now
        return self.timestamp

    def sql(self) -> str:
        """The canonical clause value, e.g. ``RESUME_OR_FROM_NOW(INTERVAL '1' HOUR)``."""
        text = ("RESUME_OR_" if self.resume else "") + self.start.value
        if self.lookback is not None:
            text += f"({self.lookback.sql()})"
        if self.timestamp is not None:
            text += f"(TIMESTAMP '{timestamp_text(self.timestamp)}')"
        return text

    def __str__(self) -> str:
        return self.sql()


def timestamp_text(instant: datetime) -> str:
    """An instant as ``FROM_TIMESTAMP`` reads it back: UTC, ``yyyy-MM-dd HH:mm:ss[.ffffff]Z``."""
    utc = instant.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%d %H:%M:%S") + (f".{utc.microsecond:06d}" if utc.microsecond else "") + "Z"


@dataclass(frozen=True)
class Statement:
    """Common to every statement: its text in the cell and where it starts."""

    text: str = field(repr=False, compare=False)
    position: Position = field(compare=False)

    starts: ClassVar[tuple[str, ...]] = ()
    """How the statement begins, as completion offers it (its first keywords)."""


@dataclass(frozen=True)
class CreateMaterializedTable(Statement):
    """``CREATE [OR ALTER] MATERIALIZED TABLE … AS <select>``."""

    starts: ClassVar[tuple[str, ...]] = ("CREATE MATERIALIZED TABLE", "CREATE OR ALTER MATERIALIZED TABLE")

    name: TableName = field(kw_only=True)
    query: str = field(kw_only=True)
    """The ``AS`` body exactly as written (Spark SQL), without a trailing semicolon."""
    columns: tuple[ColumnDef, ...] = field(default=(), kw_only=True)
    primary_key: PrimaryKey | None = field(default=None, kw_only=True)
    expectations: tuple[Expectation, ...] = field(default=(), kw_only=True)
    """``CONSTRAINT name EXPECT (…) [ON VIOLATION …]`` in the column list, in the order written."""
    comment: str | None = field(default=None, kw_only=True)
    partitioned_by: tuple[str, ...] = field(default=(), kw_only=True)
    distribution: Distribution | None = field(default=None, kw_only=True)
    """``DISTRIBUTED BY HASH(cols) INTO n BUCKETS``: Iceberg ``bucket(n, col)`` partition fields."""
    options: tuple[tuple[str, str], ...] = field(default=(), kw_only=True)
    """``WITH ('k' = 'v', …)`` in the order written."""
    freshness: Freshness | None = field(default=None, kw_only=True)
    """As declared; ``None`` when omitted (the default depends on the mode)."""
    refresh_mode: RefreshMode | None = field(default=None, kw_only=True)
    """As declared; ``None`` when omitted (inferred from the freshness)."""
    start_mode: StartMode | None = field(default=None, kw_only=True)
    """``START_MODE`` as declared; ``None`` when omitted (from the beginning)."""
    or_alter: bool = field(default=False, kw_only=True)
    query_position: Position | None = field(default=None, compare=False, kw_only=True)
    """Where the ``AS`` body starts in the cell, so errors in the query can point into the cell."""

    @property
    def options_dict(self) -> dict[str, str]:
        return dict(self.options)


@dataclass(frozen=True)
class AlterSuspend(Statement):
    """``ALTER MATERIALIZED TABLE name SUSPEND``."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)


@dataclass(frozen=True)
class AlterResume(Statement):
    """``ALTER MATERIALIZED TABLE name RESUME [WITH (…)]`` — options apply to this resumption's runs."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    options: tuple[tuple[str, str], ...] = field(default=(), kw_only=True)


@dataclass(frozen=True)
class AlterRefresh(Statement):
    """``ALTER MATERIALIZED TABLE name REFRESH [PARTITION (k = 'v', …)]`` — a manual backfill."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    partition: tuple[tuple[str, str], ...] = field(default=(), kw_only=True)
    publish_held: bool = field(default=False, kw_only=True)
    """``WITH ('publish' = 'held')``: move ``main`` to the held refresh staged on the audit branch, not refresh."""


@dataclass(frozen=True)
class AlterQuery(Statement):
    """``ALTER MATERIALIZED TABLE name AS <select>`` — a new definition query."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    query: str = field(kw_only=True)
    query_position: Position | None = field(default=None, compare=False, kw_only=True)
    """Where the ``AS`` body starts in the cell, so errors in the query can point into the cell."""


@dataclass(frozen=True)
class AlterConstraint(Statement):
    """``ALTER MATERIALIZED TABLE name ADD CONSTRAINT c EXPECT (…) [ON VIOLATION …]`` or ``… DROP CONSTRAINT c``."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    add: Expectation | None = field(default=None, kw_only=True)
    drop: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if (self.add is None) == (self.drop is None):
            raise ValueError(f"a constraint change adds or drops one expectation, got {self!r}")


@dataclass(frozen=True)
class AlterFreshness(Statement):
    """``ALTER MATERIALIZED TABLE name SET FRESHNESS = INTERVAL …`` — change the freshness (and schedule)."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    freshness: Freshness = field(kw_only=True)


@dataclass(frozen=True)
class DropMaterializedTable(Statement):
    """``DROP MATERIALIZED TABLE [IF EXISTS] name``."""

    starts: ClassVar[tuple[str, ...]] = ("DROP MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    if_exists: bool = field(default=False, kw_only=True)


@dataclass(frozen=True)
class AlterRefreshMode(Statement):
    """``ALTER MATERIALIZED TABLE name SET REFRESH_MODE = CONTINUOUS | FULL`` — switch how it is kept fresh."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    mode: RefreshMode = field(kw_only=True)


@dataclass(frozen=True)
class AlterScheduler(Statement):
    """``ALTER MATERIALIZED TABLE name SET ('scheduler' = 'kernel' | 'airflow')`` — move the table to another
    workflow scheduler (its only supported ``SET (…)`` option)."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    scheduler: str = field(kw_only=True)


@dataclass(frozen=True)
class AlterRename(Statement):
    """``ALTER MATERIALIZED TABLE name RENAME TO new_name``."""

    starts: ClassVar[tuple[str, ...]] = ("ALTER MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)
    new_name: TableName = field(kw_only=True)


@dataclass(frozen=True)
class ShowMaterializedTables(Statement):
    """``SHOW MATERIALIZED TABLES [FROM | IN namespace] [LIKE 'pattern']`` (``%`` and ``_`` wildcards)."""

    starts: ClassVar[tuple[str, ...]] = ("SHOW MATERIALIZED TABLES",)

    namespace: str | None = field(default=None, kw_only=True)
    like: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class ShowCreateMaterializedTable(Statement):
    """``SHOW CREATE MATERIALIZED TABLE name`` — the statement that recreates it, from the catalog."""

    starts: ClassVar[tuple[str, ...]] = ("SHOW CREATE MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)


@dataclass(frozen=True)
class DescribeMaterializedTable(Statement):
    """``DESCRIBE | DESC MATERIALIZED TABLE name`` — columns, mode and why, freshness, sources, last refresh."""

    starts: ClassVar[tuple[str, ...]] = ("DESCRIBE MATERIALIZED TABLE",)

    name: TableName = field(kw_only=True)


AnyStatement = (
    CreateMaterializedTable
    | AlterSuspend
    | AlterResume
    | AlterRefresh
    | AlterQuery
    | AlterConstraint
    | AlterFreshness
    | AlterRefreshMode
    | AlterRename
    | AlterScheduler
    | DropMaterializedTable
    | ShowMaterializedTables
    | ShowCreateMaterializedTable
    | DescribeMaterializedTable
)

STATEMENT_TYPES: tuple[type[Statement], ...] = get_args(AnyStatement)
"""Every statement the grammar parses (the runtime has one handler for each:
``mt_magic.runtime.statements.registry``)."""

STATEMENT_STARTS: tuple[str, ...] = tuple(dict.fromkeys(start for kind in STATEMENT_TYPES for start in kind.starts))
"""How each statement begins (``CREATE MATERIALIZED TABLE``, ``ALTER MATERIALIZED TABLE``, …), in grammar order."""

STATEMENT_WORDS: frozenset[str] = frozenset(start.split()[0] for start in STATEMENT_STARTS)
"""The words a statement begins with (``CREATE``, ``ALTER``, ``DROP``, ``SHOW``, ``DESCRIBE``)."""
