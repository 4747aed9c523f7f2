"""``%mt verify t`` / ``table(t).verify()``: the table's query recomputed beside it, nothing committed, compared.

The query runs over the source snapshots the table's last refresh on ``main`` consumed (its refresh state), so a
table that is merely stale compares equal; the comparison is Spark's ``EXCEPT ALL`` both ways over the user's columns
(duplicates count), one job each, a few rows of each side as a sample. A difference is most likely the work of the
newest commit on ``main`` that was not a refresh (a write that bypassed it), else of the last refresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.errors import MtMagicError
from mt_magic.runtime.refresh.run import query_rows
from mt_magic.runtime.refresh.start import window_views
from mt_magic.runtime.spark import semantics
from mt_magic.runtime.spark.quoting import qualified
from mt_magic.vocabulary import is_hidden_column

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace

SAMPLE_ROWS = 5


@dataclass(frozen=True)
class Verification:
    """What ``verify`` found: rows the query gives that the table lacks (``missing``) and rows the table has that the
    query does not give (``extra``), counted with duplicates, and a sample of each."""

    table: str
    snapshot_id: int | None
    rows: int
    missing: int
    extra: int
    missing_sample: tuple[str, ...] = ()
    extra_sample: tuple[str, ...] = ()
    suspect: str = ""
    """The commit that most likely introduced the difference (empty when equal)."""
    refreshed: int | None = None
    """The last refresh's snapshot on ``main``: what the table held before any later commit."""

    @property
    def equal(self) -> bool:
        return self.missing == 0 and self.extra == 0

    @property
    def differences(self) -> int:
        return self.missing + self.extra

    def __str__(self) -> str:
        head = f"{self.table} at snapshot {self.snapshot_id} ({self.rows} rows)"
        if self.equal:
            return f"{head} equals its query over the sources its last refresh read: 0 differences"
        lines = [f"{head} differs from its query: {self.differences} differences"]
        lines.append(f"  {self.missing} rows the query gives are missing from the table" + _listed(self.missing_sample))
        lines.append(f"  {self.extra} rows in the table the query does not give" + _listed(self.extra_sample))
        lines.append(f"  most likely introduced by {self.suspect}")
        catalog, name = self.table.split(".", 1)
        lines.append(
            f"  Fix: a commit that was not a refresh is undone by rolling back to the last refresh: CALL {catalog}"
            f".system.rollback_to_snapshot('{name}', {self.refreshed}); a difference the refresh made is a defect to "
            "report with this output"
        )
        return "\n".join(lines)


def _listed(sample: tuple[str, ...]) -> str:
    return "".join(f"\n    {row}" for row in sample)


def verify(ws: Workspace, name: str) -> Verification:
    """Recompute ``name``'s query without committing and compare it with the table's rows on ``main``.

    Raises:
        NoSuchMaterializedTableError: ``name`` is not a materialized table.
        MtMagicError: it has never been refreshed (nothing to compare).
    """
    info, definition = ws.catalog.load_materialized(name)
    last = info.last_refresh()
    if last is None or info.current_snapshot_id is None:
        raise MtMagicError(
            f"{name} has no refresh on main to verify", statement=f"verify {name}", fix=f"run %mt refresh {name}"
        )
    snapshot, state = last
    spark = ws.spark
    with semantics.applied(f"verify {name}", spark, definition.sql_settings or {}):
        table = spark.read.option("snapshot-id", str(info.current_snapshot_id)).table(qualified(name))
        with window_views(spark, ws.catalog, definition, state.source_states) as windows:
            expected = query_rows(spark, info, definition, state.source_states, windows, table)
            columns = [c for c in table.columns if not is_hidden_column(c)]
            expected, actual = expected.select(*columns), table.select(*columns)
            missing_rows, extra_rows = expected.exceptAll(actual), actual.exceptAll(expected)
            missing, extra = missing_rows.count(), extra_rows.count()
            rows = actual.count()
            return Verification(
                info.name,
                info.current_snapshot_id,
                rows,
                missing,
                extra,
                _sample(missing_rows, columns) if missing else (),
                _sample(extra_rows, columns) if extra else (),
                "" if missing == extra == 0 else _suspect(info, snapshot.snapshot_id),
                snapshot.snapshot_id,
            )


def _sample(df, columns: list[str]) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    return tuple(", ".join(f"{c}={r[c]!r}" for c in columns) for r in df.limit(SAMPLE_ROWS).collect())


def _suspect(info, refreshed: int) -> str:  # type: ignore[no-untyped-def]
    """The newest commit on ``main`` after the last refresh that was not a refresh, else that refresh."""
    for snap in reversed(info.snapshots):
        if snap.snapshot_id == refreshed:
            break
        if snap.refresh_state is None:
            when = f"{snap.committed_at:%Y-%m-%d %H:%M:%S} UTC"
            return f"snapshot {snap.snapshot_id} ({snap.operation} at {when}, not a refresh)"
    return f"the last refresh, snapshot {refreshed}"
