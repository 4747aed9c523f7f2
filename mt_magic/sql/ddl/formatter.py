"""``partition.fields.<col>.date-formatter`` (declared in :mod:`mt_magic.options`): Java DateTimeFormatter patterns.

In FULL mode Flink turns each scheduled time into the partition value with this pattern (``yyyyMMdd`` at
2024-01-01 00:00 → ``ds = '20240101'``) and refreshes only that partition. We need the pattern twice: as a
Python ``strftime`` pattern (the scheduler formats its fire time) and as Spark's ``date_format`` pattern
(Java-style already, so kept as written). Only letters whose meaning is identical in Java, Spark and
``strftime`` are accepted; the rest fail with the letter named, instead of producing a partition value
that silently differs from the one the query writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mt_magic.options import DATE_FORMATTER
from mt_magic.sql.errors import FormatterError
from mt_magic.vocabulary import RefreshMode

_FIELDS: dict[str, dict[int, str]] = {
    "y": {1: "%Y", 2: "%y", 4: "%Y"},
    "M": {2: "%m", 3: "%b", 4: "%B"},
    "d": {2: "%d"},
    "D": {3: "%j"},
    "H": {2: "%H"},
    "h": {2: "%I"},
    "m": {2: "%M"},
    "s": {2: "%S"},
    "a": {1: "%p"},
    "E": {3: "%a", 4: "%A"},
}
"""Java letter → {repeat count → strftime directive}; what is missing is rejected."""

_HINTS = {
    "Y": "'Y' is the week-based year in Java; use 'yyyy'",
    "S": "fractions of a second cannot name a partition",
    "u": "'u' is not supported by Spark's date_format; use 'yyyy'",
}


@dataclass(frozen=True)
class DateFormatter:
    """A validated pattern: ``pattern`` (Java, as written), ``strftime`` and ``spark_pattern`` derived."""

    pattern: str
    strftime: str = field(init=False)
    """The equivalent Python ``strftime`` pattern."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "strftime", java_to_strftime(self.pattern))

    @property
    def spark_pattern(self) -> str:
        """The pattern for Spark's ``date_format`` (Spark uses Java's letters)."""
        return self.pattern

    def format(self, moment: datetime) -> str:
        """The partition value for ``moment``, e.g. ``'20240101'`` for ``yyyyMMdd``."""
        return moment.strftime(self.strftime)


def _letter_run(pattern: str, i: int) -> int:
    j = i
    while j < len(pattern) and pattern[j] == pattern[i]:
        j += 1
    return j


def _quoted(pattern: str, i: int) -> tuple[str, int]:
    """The literal text of a quoted section starting at ``pattern[i] == "'"``, and the index after it."""
    out: list[str] = []
    j = i + 1
    while j < len(pattern):
        if pattern[j] == "'":
            if j + 1 < len(pattern) and pattern[j + 1] == "'":
                out.append("'")
                j += 2
                continue
            return "".join(out), j + 1
        out.append(pattern[j])
        j += 1
    raise FormatterError(
        f"date-formatter {pattern!r}: the quote at index {i} is never closed",
        offending=pattern,
        fix="close literal text with ' (write '' for a quote)",
    )


def java_to_strftime(pattern: str) -> str:
    """Translate a Java DateTimeFormatter pattern to ``strftime``.

    Raises:
        FormatterError: empty pattern, an unsupported letter or letter count, ``[`` ``]`` ``{`` ``}`` ``#``,
            or an unterminated quote — the message names the letter and the supported ones.
    """
    if not pattern.strip():
        raise FormatterError("date-formatter is empty", offending=repr(pattern), fix="use a pattern like 'yyyyMMdd'")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            if i + 1 < len(pattern) and pattern[i + 1] == "'":
                out.append("'")
                i += 2
                continue
            text, i = _quoted(pattern, i)
            out.append(text.replace("%", "%%"))
        elif ch.isascii() and ch.isalpha():
            j = _letter_run(pattern, i)
            out.append(_directive(pattern, ch, j - i))
            i = j
        elif ch in "[]{}#":
            raise FormatterError(
                f"date-formatter {pattern!r}: {ch!r} (optional sections, reserved characters) is not supported",
                offending=pattern,
                fix="remove it",
            )
        else:
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)


def _directive(pattern: str, letter: str, count: int) -> str:
    directive = _FIELDS.get(letter, {}).get(count)
    if directive is not None:
        return directive
    run = letter * count
    if letter in _FIELDS:
        counts = " or ".join(letter * n for n in _FIELDS[letter])
        reason = f"{run!r} is not supported (use {counts})"
    else:
        reason = _HINTS.get(letter, f"the letter {letter!r} is not supported")
    supported = "yyyy, yy, MM, MMM, MMMM, dd, DDD, HH, hh, mm, ss, a, EEE, EEEE and 'quoted text'"
    raise FormatterError(
        f"date-formatter {pattern!r}: {reason}", offending=run, fix=f"use the pattern letters {supported}"
    )


@dataclass(frozen=True)
class PartitionFormatters:
    """The date formatters of a table's partition columns, and notes for the user (not errors)."""

    formatters: tuple[tuple[str, DateFormatter], ...] = ()
    """(partition column, formatter) in the order the options were written."""
    notes: tuple[str, ...] = ()
    """E.g. that a formatter has no effect in CONTINUOUS mode."""

    def get(self, column: str) -> DateFormatter | None:
        return dict(self.formatters).get(column)


_STRING_TYPES = ("STRING", "VARCHAR", "CHAR")


def formatter_column(key: str) -> str | None:
    """``'partition.fields.ds.date-formatter'`` → ``'ds'``; ``None`` for other option keys."""
    return DATE_FORMATTER.column(key)


def partition_formatters(
    options: Sequence[tuple[str, str]],
    partitioned_by: Sequence[str],
    mode: RefreshMode | None = None,
    column_types: Mapping[str, str | None] | None = None,
) -> PartitionFormatters:
    """Validate every ``partition.fields.<col>.date-formatter`` option of a table.

    Args:
        options: the ``WITH`` options as written.
        partitioned_by: the ``PARTITIONED BY`` columns.
        mode: the effective refresh mode; in CONTINUOUS mode each formatter gets a note (Flink ignores it).
        column_types: declared column types, when the column list gives them: a formatter needs a string
            column (Flink's rule).

    Raises:
        FormatterError: a formatter on a column that is not a partition column, on a non-string column, or
            with a pattern that cannot be translated.
    """
    partitions = {c.lower(): c for c in partitioned_by}
    found: list[tuple[str, DateFormatter]] = []
    notes: list[str] = []
    for key, value in options:
        column = formatter_column(key)
        if column is None:
            continue
        if column.lower() not in partitions:
            listed = ", ".join(partitioned_by) if partitioned_by else "none: the table has no PARTITIONED BY"
            raise FormatterError(
                f"'{key}' names {column!r}, which is not a partition column (partition columns: {listed})",
                offending=key,
                fix=f"add {column} to PARTITIONED BY, or fix the column name in the option key",
            )
        declared = {k.lower(): v for k, v in (column_types or {}).items()}.get(column.lower())
        if declared and not declared.upper().startswith(_STRING_TYPES):
            raise FormatterError(
                f"'{key}' needs a string partition column, but {column} is declared {declared}",
                offending=key,
                fix=f"declare {column} STRING, or remove the formatter",
            )
        found.append((partitions[column.lower()], DateFormatter(value)))
        if mode is RefreshMode.CONTINUOUS:
            notes.append(
                f"'{key}' has no effect in CONTINUOUS mode, as in Flink: every refresh covers all "
                "partitions; it applies if the table switches to FULL mode"
            )
    return PartitionFormatters(tuple(found), tuple(notes))
