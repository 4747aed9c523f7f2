"""Every error mt_magic raises on purpose: one root, a few meaningful kinds.

At the magic boundary these become a plain ``UsageError(str(e))`` — one clean message, no traceback.
"""

from __future__ import annotations


class MtMagicError(Exception):
    """Root of every error mt_magic raises on purpose."""


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
            f"be refreshed. Fix: re-create {source}, or ALTER MATERIALIZED TABLE {table} AS a query that does "
            f"not read it, or DROP MATERIALIZED TABLE {table}."
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


class RefreshConflictError(RefreshError):
    """Another writer committed to the materialized table during its refresh; nothing was committed."""


class RefreshCancelledError(RefreshError):
    """A refresh was cancelled (suspend, drop, ALTER AS, stop); nothing was committed."""


class RefreshTimeLimitError(RefreshError):
    """A refresh ran past its time limit (the stall watchdog): its Spark jobs were cancelled, nothing was committed,
    and the table retries on its normal backoff."""


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
