"""Affected slices: the values a change touched in the table's group-locating (or partition) columns.

Collected in one small Spark action over the delta, then turned into literal filters: literals push down
into Iceberg scans (partition pruning, min/max file skipping), which a join against the keys would not.
Any superset of the affected rows is a correct slice, so a column with too many values, or with a string that
is not valid UTF-8 (it has no exact literal), is dropped (a coarser slice) rather than listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING

from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.runtime.spark.quoting import identifier
from mt_magic.sql.query.result_rewrite import Predicate, in_list, literal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

MAX_VALUES = 5000
"""Most values of one column listed in a slice filter."""
SLICE_TYPES = ("tinyint", "smallint", "int", "bigint", "string", "date", "boolean", "timestamp")


def sliceable_type(type_name: str) -> bool:
    """Types whose values round-trip exactly between Spark and Python (timestamps as epoch microseconds)."""
    return type_name in SLICE_TYPES or type_name.startswith("decimal")


UNLISTED = (FallbackReason.VALUE_WITHOUT_LITERAL, FallbackReason.TOO_MANY_AFFECTED_GROUPS)
"""Why a column's values are not listed, the one a fallback names first."""


@dataclass(frozen=True)
class SliceValues:
    """The distinct values one column takes in the change (``NULL`` tracked apart)."""

    column: str
    type_name: str
    values: tuple[object, ...]
    has_null: bool

    @property
    def empty(self) -> bool:
        return not self.values and not self.has_null

    def _literals(self) -> list[Column]:
        """Exact literals: timestamps from epoch microseconds, dates from ISO text cast by Spark (proleptic, as
        Spark's dates are). Not ``F.lit(date)``: PySpark sends it through ``java.sql.Date.valueOf`` of
        ``strftime``, which fails before year 1000 and moves a date of the Julian-Gregorian gap to another day.

        Decimals are cast to the column's type: ``F.lit(Decimal)`` is typed by the value's own digits, and a value
        collected from Spark may come back at a larger scale (PySpark's pickler sends ``toEngineeringString``:
        1E-10 of a DECIMAL(38, 10) arrives as ``Decimal('1.00E-10')``, a DECIMAL(12, 12) literal). ``IN`` compares
        in the common type, DECIMAL(38, 12) there, which holds 26 integer digits, not 28: a value with more became
        NULL (ANSI off), matched no listed value, and its slice's recomputed rows were dropped."""
        from pyspark.sql import functions as F

        if self.type_name == "timestamp":
            return [F.timestamp_micros(F.lit(v)) for v in self.values]
        if self.type_name == "date":
            return [F.lit(v.isoformat()).cast("date") for v in self.values]  # type: ignore[attr-defined]
        if self.type_name.startswith("decimal"):
            return [F.lit(v).cast(self.type_name) for v in self.values]
        return [F.lit(v) for v in self.values]

    def member(self, column: Column | None = None) -> Column:
        """True for rows whose column (or ``column``) takes one of the values; never NULL (safe under NOT)."""
        from pyspark.sql import functions as F

        col = F.col(identifier(self.column)) if column is None else column
        cond = F.coalesce(col.isin(self._literals()), F.lit(False)) if self.values else F.lit(False)
        return cond | col.isNull() if self.has_null else cond

    def overwrite_condition(self) -> Column:
        """The same rows as a filter Iceberg can translate (IN / IS NULL), for ``overwrite(condition)``."""
        from pyspark.sql import functions as F

        col = F.col(identifier(self.column))
        parts = ([col.isin(self._literals())] if self.values else []) + ([col.isNull()] if self.has_null else [])
        return reduce(lambda a, b: a | b, parts) if parts else F.lit(False)

    def predicate(self, key_sql: str) -> Predicate | None:
        """``key IN (…)`` as SQL for the aggregation's input; ``None`` when a value has no SQL literal."""
        literals = [literal(v, self.type_name) for v in self.values]
        if any(lit is None for lit in literals):
            return None
        return in_list(key_sql, [lit for lit in literals if lit is not None], self.has_null)


@dataclass(frozen=True)
class Slices:
    """The listed columns' values, and the columns left unlisted with why."""

    found: dict[str, SliceValues]
    unlisted: dict[str, FallbackReason]

    def why_unlisted(self) -> FallbackReason:
        """Why a slice of no listed column recomputes: a value without a literal, else too many values."""
        reasons = set(self.unlisted.values())
        return next((r for r in UNLISTED if r in reasons), FallbackReason.TOO_MANY_AFFECTED_GROUPS)


def collect_slices(df: DataFrame, types: Mapping[str, str]) -> Slices:
    """Distinct values of each column of ``df`` (named in ``types``: column → Spark type), one action.

    A column is left unlisted (``Slices.unlisted``, with why) when it takes more than :data:`MAX_VALUES` values
    or a value with no exact literal: a string that is not valid UTF-8 would reach Python with U+FFFD (the JVM's
    replacement character) in place of its bytes, and a filter listing the replaced text matches nothing. So
    strings are collected as their bytes and decoded here, strictly.
    """
    from pyspark.sql import functions as F

    aggs = []
    for column, type_name in types.items():
        col = F.col(identifier(column))
        value = F.unix_micros(col) if type_name == "timestamp" else col.cast("binary") if type_name == "string" else col
        aggs += [F.slice(F.collect_set(value), 1, MAX_VALUES + 1), F.max(col.isNull().cast("int"))]
    row = df.agg(*aggs).collect()[0]
    found: dict[str, SliceValues] = {}
    unlisted: dict[str, FallbackReason] = {}
    for i, (column, type_name) in enumerate(types.items()):
        values = row[2 * i] or []
        if len(values) > MAX_VALUES:
            unlisted[column] = FallbackReason.TOO_MANY_AFFECTED_GROUPS
            continue
        if type_name == "string":
            try:
                values = [bytes(v).decode("utf-8") for v in values]
            except UnicodeDecodeError:
                unlisted[column] = FallbackReason.VALUE_WITHOUT_LITERAL
                continue
        found[column] = SliceValues(column, type_name, tuple(values), bool(row[2 * i + 1]))
    return Slices(found, unlisted)


def all_of(conditions: Sequence[Column]) -> Column:
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a & b, conditions) if conditions else F.lit(True)
