"""The mistakes a ``%%materialized`` cell can contain, one error type per kind.

Every message has the same shape so a person can act on it without reading code::

    CREATE MATERIALIZED TABLE dws_overall, line 4, column 1: FRESHNESS = INTERVAL '5' HOUR is not allowed in
    FULL mode: hours must divide 24 (1, 2, 3, 4, 6, 8, 12). Fix: use one of those values, …

i.e. the statement, where, what is wrong (quoting the offending text) and how to fix it: the one shape of every
mt_magic error, built by :class:`~mt_magic.errors.MtMagicError` (the facts stay its attributes for the widgets).
"""

from __future__ import annotations

from mt_magic.errors import MtMagicError
from mt_magic.sql.names import Position


class SqlError(MtMagicError):
    """Root of the SQL front end's errors: the cell text cannot become a statement."""

    structured = True
    position: Position | None
    """The grammar's positions (the cell's line and column)."""

    def located(
        self, *, statement: str | None = None, position: Position | None = None, offending: str | None = None
    ) -> SqlError:
        """A copy of this error with the context it lacked (e.g. raised by a helper that knows no positions)."""
        return type(self)(
            self.problem,
            statement=self.statement or statement,
            offending=self.offending or offending,
            position=self.position or position,
            fix=self.fix,
            did_you_mean=self.did_you_mean,
        )


class SqlSyntaxError(SqlError):
    """The tokens do not fit the grammar: unexpected or missing text, unbalanced parentheses, unterminated
    strings or comments, an empty cell, trailing text after a complete statement."""


class UnsupportedStatementError(SqlError):
    """A statement that is not a materialized-table statement (``CREATE TABLE``, ``SELECT``, …)."""


class UnsupportedNameError(SqlError):
    """A name Spark accepts in backquotes but that cannot travel end to end (the message says which character, why)."""


class UnsupportedClauseError(SqlError):
    """Valid Flink syntax with no meaning on Spark and Iceberg (METADATA or computed columns, WATERMARK)."""


class DuplicateClauseError(SqlError):
    """A clause written twice in one statement (two FRESHNESS, two WITH, …)."""


class ClauseOrderError(SqlError):
    """Clauses out of Flink's order (COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE, AS)."""


class FreshnessError(SqlError):
    """A FRESHNESS that Flink's rules reject: bad number, bad unit, or not schedulable in FULL mode."""


class FormatterError(SqlError):
    """A ``partition.fields.<col>.date-formatter`` with a bad pattern or on a column that is not a partition."""


class OptionError(SqlError):
    """A ``WITH (…)`` or ``PARTITION (…)`` list with a repeated or empty key."""


class UnsupportedOptionError(OptionError):
    """A ``WITH`` option of Paimon, Kafka or another Flink connector, which Spark and Iceberg cannot honour."""


class ConstraintError(SqlError):
    """A PRIMARY KEY that is not ``NOT ENFORCED``, declared twice, or repeating a column."""


class ColumnError(SqlError):
    """The column list contradicts itself: a repeated column, or a key/partition column it does not declare."""


class QueryAnalysisError(SqlError):
    """The ``AS`` body is not a single Spark SQL query that sqlglot can read."""
