"""Every error mt_magic raises on purpose: one root, a few meaningful kinds, one message shape.

Every message reads the same way, whatever raised it (a statement, a magic, the Python API, a refresh)::

    CREATE MATERIALIZED TABLE dws_overall, line 4, column 1: FRESHNESS = INTERVAL '5' HOUR is not allowed in
    FULL mode: hours must divide 24 (1, 2, 3, 4, 6, 8, 12). Fix: use one of those values, …

i.e. the statement, where, what is wrong (quoting the offending text), a "did you mean" for a misspelt name and
how to fix it. :class:`MtMagicError` builds it from those facts, which stay attributes (``statement``,
``position``, ``offending``, ``problem``, ``did_you_mean``, ``fix``) for the widgets.

At the magic boundary these become a plain ``UsageError(str(e))`` — one clean message, no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn


class MtMagicError(Exception):
    """Root of every error mt_magic raises on purpose; its message is built by :meth:`message` from the facts.

    ``MtMagicError(problem)`` alone reads exactly ``problem`` (the older raise sites' whole text);
    with any of the keywords the message takes the one shape: ``statement, position: problem (at 'offending').
    Fix: did you mean X? fix.`` — each part only when given. ``position`` is anything whose text says where
    (the grammar's :class:`~mt_magic.sql.names.Position`: ``line 4, column 1``). ``did_you_mean``: the
    name(s) a misspelt one most likely meant, in order (:func:`closest_names`); with a ``fix`` too the Fix reads
    ``did you mean X? Otherwise, fix.``
    """

    structured = False
    """Whether a bare ``problem`` is also given the shape (its final period); :class:`SqlError` says so."""

    def __init__(
        self,
        problem: str = "",
        *,
        statement: str | None = None,
        offending: str | None = None,
        position: object | None = None,
        fix: str | None = None,
        did_you_mean: str | Sequence[str] | None = None,
    ) -> None:
        self.problem = problem
        self.statement = statement
        self.offending = offending
        self.position = position
        self.fix = fix
        self.did_you_mean: tuple[str, ...] = (
            () if did_you_mean is None else (did_you_mean,) if isinstance(did_you_mean, str) else tuple(did_you_mean)
        )
        super().__init__(self.message())

    def message(self) -> str:
        """The one message shape (see the class): :meth:`headline`, then :meth:`fix_line`."""
        fix = self.fix_line()
        return f"{self.headline()} {fix}" if fix else self.headline()

    def headline(self) -> str:
        """Where and what is wrong, without the Fix (a view shows the Fix on its own line)."""
        if not (self.structured or self.statement or self.position or self.offending or self.fix or self.did_you_mean):
            return self.problem
        where = ", ".join(str(p) for p in (self.statement, self.position) if p is not None)
        text = f"{where}: {self.problem}" if where else self.problem
        if self.offending and self.offending not in self.problem:
            text += f" (at {self.offending!r})"
        return _ended(text)

    def fix_line(self) -> str:
        """``Fix: [did you mean X? Otherwise, ]fix.`` (empty without a Fix or a suggestion)."""
        suggestion = did_you_mean(self.did_you_mean)
        fix = f"{suggestion} Otherwise, {self.fix}" if suggestion and self.fix else suggestion or self.fix
        return f"Fix: {_ended(fix)}" if fix else ""

    def without_rows(self) -> str:
        """The message as it may leave this process (a lineage event): an error that quotes a table's rows (a held
        refresh's sample) leaves them out."""
        return self.message()

    def __str__(self) -> str:
        return self.message()


def closest_names(written: str, names: Iterable[str], n: int = 1) -> list[str]:
    """The (at most ``n``) of ``names`` a typo of ``written`` most likely meant, closest first (case-insensitive;
    empty when none is close): the one judge of every "did you mean" — tables, columns, options, their values."""
    import difflib

    by_lower = {name.lower(): name for name in names}
    return [by_lower[close] for close in difflib.get_close_matches(written.lower(), list(by_lower), n=n, cutoff=0.75)]


def did_you_mean(names: Sequence[str]) -> str:
    """``did you mean A?`` / ``did you mean A or B?`` (empty for no names): the one wording of a suggestion."""
    if not names:
        return ""
    listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    return f"did you mean {listed}?"


def _ended(text: str) -> str:
    return text if text.rstrip().endswith((".", "?", "!")) else text + "."


class RuntimeSetupError(MtMagicError):
    """Java, Spark or the Iceberg jars are missing or misconfigured; the message says what to run."""


class CatalogError(MtMagicError):
    """The Iceberg catalog refused a request or could not be reached."""


class NoSuchMaterializedTableError(MtMagicError):
    """The named materialized table does not exist in the catalog."""


class NoSuchSourceTableError(MtMagicError):
    """A source table a materialized table reads is gone (dropped, renamed) or cannot be read; the materialized
    table keeps its stored rows and cannot be refreshed until the source is back or the query no longer reads it."""

    def __init__(self, table: str, source: str, problem: str = "does not exist in the catalog (dropped or renamed)"):
        self.table, self.source = table, source
        super().__init__(
            f"{table} reads the source table {source}, which {problem}: {table} keeps its stored rows but cannot "
            "be refreshed",
            fix=f"re-create {source}, or ALTER MATERIALIZED TABLE {table} AS a query that does not read it, or "
            f"DROP MATERIALIZED TABLE {table}.",
        )


class MaterializedTableExistsError(MtMagicError):
    """A CREATE named a table that already exists."""


class DefinitionError(MtMagicError):
    """A statement is valid SQL but cannot be applied (bad cast, unknown column, forbidden evolution, …)."""


class CellNotAppliedError(MtMagicError):
    """A statement of a cell failed after others were applied; those were undone (the message says what was kept)."""


class DependencyError(MtMagicError):
    """A DROP or change would break materialized tables that depend on this one."""


class RefreshError(MtMagicError):
    """A refresh failed; the previous snapshot stays current."""

    shared: str | None = None
    """The message as it may leave this process, where :meth:`message` quotes Spark's text (which can hold a row's
    values: ``The value 'x' cannot be cast``); set by ``spark.analysis_errors.refresh_failure``."""

    def without_rows(self) -> str:
        return self.shared if self.shared is not None else super().without_rows()


class RefreshConflictError(RefreshError):
    """Another writer committed to the materialized table during its refresh; nothing was committed."""


class RefreshCancelledError(RefreshError):
    """A refresh was cancelled (suspend, drop, ALTER AS, stop); nothing was committed."""


class RefreshTimeLimitError(RefreshError):
    """A refresh ran past its time limit (the stall watchdog): its Spark jobs were cancelled, nothing was committed,
    and the table retries on its normal backoff."""


class InvalidTableError(RefreshError):
    """Another engine's view version made the table invalid and its refresh cannot make it valid again; only a
    statement can (take the view over, or drop the table), so nothing retries it."""


class CatalogUnavailableError(CatalogError):
    """The catalog cannot be reached right now; the manager pauses work and tries again later."""


class WorkflowSchedulerError(MtMagicError):
    """The workflow scheduler of a table (Airflow) cannot be reached or refused a request; nothing was changed."""


def first_line(exc: BaseException) -> str:
    """The line of an exception that names the problem (Spark's and Py4J's messages run to pages)."""
    for line in str(exc).strip().splitlines():
        line = line.strip()
        # "None": PySpark's text of a JVM exception without a message; its type says more
        if line and line != "None" and not line.startswith(("An error occurred while calling", "Traceback")):
            return line[:500]
    return type(exc).__name__


class CommandLineParser(argparse.ArgumentParser):
    """argparse's refusals in mt_magic's shape: where (the command), what, and a Fix. Every ``python -m`` command
    line of mt_magic parses with it (its subcommands' parsers are of the same class)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: {message}. Fix: {self.prog} --help lists its commands and options\n")
