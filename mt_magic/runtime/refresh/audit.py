"""Write, audit, publish: a table with expectations never shows ``main`` a row that fails a ``FAIL UPDATE`` one.

The refresh's rows (the delta where it is incremental, the table or partition where it recomputes) are written to the
staging branch :data:`BRANCH` (replaced at ``main``'s snapshot first) by one Spark job that also counts them against
every expectation (:mod:`.audit_write`): the ``DROP ROW`` ones before their filter, which the write applies
(:func:`kept`), so their failing rows are counted as dropped; the others on the rows kept. The counts follow the
refresh's snapshot on the branch in an empty snapshot of their own (``mt.expectations``), and ``main`` is
fast-forwarded to it only when no ``FAIL UPDATE`` expectation failed. Otherwise the refresh is **held**:
:class:`ExpectationsHeldError`, ``main`` stays on the last good snapshot, and its refresh state still names the
source snapshots consumed before, so the next refresh reads the same change again (and a later publish of the held
snapshot, :func:`publish_held`, carries its own state: nothing is read twice). Any process reads a held refresh
from the catalog (:func:`held_in_catalog`).

No row of the table goes into the catalog's metadata: a principal allowed to read a table's metadata but not its data
(a team catalog's ``read-metadata``) reads snapshot summaries. The counts' summary holds names and numbers only; the
sample of failing rows stays in the memory of the process that ran the refresh (:attr:`Counted.sample`), and another
process shows the Spark SQL that reads them with the reader's own session and rights (:func:`failing_rows_sql`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from mt_magic.catalog.definitions import RefreshState
from mt_magic.catalog.tables import MaterializedCatalog, TableInfo
from mt_magic.errors import MtMagicError, RefreshConflictError, RefreshError
from mt_magic.options import ENGINE
from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.runtime.spark.shown_rows import rendered
from mt_magic.runtime.status import ExpectationCount, HeldExpectation, HeldRefresh
from mt_magic.sql.query.group_condition import window_partitions
from mt_magic.vocabulary import Expectation, OnViolation, is_hidden_column

if TYPE_CHECKING:
    from pyiceberg.table.snapshots import Snapshot
    from pyspark.sql import DataFrame, SparkSession

BRANCH = "mt_staging"
"""The staging branch every audited refresh writes to before ``main`` is moved."""
EXPECTATIONS_KEY = "mt.expectations"
"""Snapshot-summary key: the refresh's counts per expectation (JSON, :meth:`Audit.summary`)."""
COUNTS_OF_KEY = "mt.expectations-of"
"""Snapshot-summary key of the snapshot that follows a refresh's on the staging branch with its counts (and its
refresh state, so ``main``'s current snapshot carries the state as the materialized-view spec reads it): the
refresh's snapshot id (:func:`.audit_write.record`)."""
SAMPLE_ROWS = 3
ALIAS = "__mt_expected"
"""The stored query's alias where its ``DROP ROW`` filter reads it (``runtime.statements.expectations``)."""


@dataclass(frozen=True)
class Counted:
    """One expectation on one refresh's rows."""

    name: str
    on_violation: OnViolation
    checked: int
    failed: int
    sample: tuple[str, ...] = ()
    """A few failing rows as ``col=value, …`` (only where some failed): in memory only, never in :meth:`Audit.summary`
    (catalog metadata, see the module)."""

    @property
    def passed(self) -> int:
        return self.checked - self.failed

    @property
    def dropped(self) -> int:
        """The failing rows the refresh left out (``DROP ROW``); the others' failing rows are kept or hold it."""
        return self.failed if self.on_violation is OnViolation.DROP_ROW else 0

    @property
    def blocks(self) -> bool:
        return self.failed > 0 and self.on_violation is OnViolation.FAIL_UPDATE

    def recorded(self) -> ExpectationCount:
        """The counts as history shows them: passed, dropped, failed (a dropped row is not counted as failed)."""
        return ExpectationCount(self.name, self.passed, self.dropped, self.failed - self.dropped)


@dataclass(frozen=True)
class Audit:
    """Every expectation counted on the rows one refresh writes."""

    counts: tuple[Counted, ...]

    @property
    def blocking(self) -> tuple[Counted, ...]:
        return tuple(c for c in self.counts if c.blocks)

    def summary(self) -> dict[str, str]:
        """The counts' snapshot-summary entry: names and numbers, never a row (no :attr:`Counted.sample`)."""
        rows = [
            {
                "name": c.name,
                "on-violation": c.on_violation.value,
                "passed": c.passed,
                "dropped": c.dropped,
                "failed": c.failed,
            }
            for c in self.counts
        ]
        return {EXPECTATIONS_KEY: json.dumps(rows, separators=(",", ":"))}

    @classmethod
    def from_summary(cls, summary: Mapping[str, str]) -> Audit | None:
        """The counts a summary records (a ``sample`` list, which older versions wrote, is ignored)."""
        raw = summary.get(EXPECTATIONS_KEY)
        if raw is None:
            return None
        return cls(
            tuple(
                Counted(
                    r["name"],
                    OnViolation(r["on-violation"]),
                    int(r["passed"]) + int(r["failed"]),
                    int(r["failed"]),
                )
                for r in json.loads(raw)
            )
        )

    def describe(self) -> str:
        """``name: 3 of 120 rows failed (FAIL UPDATE), …`` for messages and history."""
        return "; ".join(
            f"{c.name}: {c.failed} of {c.checked} rows failed" + (f" ({c.on_violation.value})" if c.failed else "")
            for c in self.counts
        )


def passes(expectation: Expectation) -> str:
    """Spark SQL that is TRUE exactly when a row passes (a NULL condition violates)."""
    return f"coalesce(({expectation.condition}), false)"


def shown_columns(columns: Iterable[str]) -> list[str]:
    """The columns a sample of rows shows: the table's own, not its hidden keys (:func:`is_hidden_column`)."""
    return [c for c in columns if not is_hidden_column(c)]


def over_groups(expectation: Expectation) -> tuple[str, ...] | None:
    """The ``PARTITION BY`` keys of an expectation over groups of rows (its condition holds a window function:
    :mod:`.audit_groups` counts it on the staged table, group by group); ``None`` for a row condition. ``()``: its
    windows do not share one set of keys (refused at CREATE), so the whole table is read as one group."""
    windows = window_partitions(expectation.condition)
    if not windows:
        return None
    same = all(sorted(k.lower() for k in w) == sorted(k.lower() for k in windows[0]) for w in windows)
    return windows[0] if same else ()


def shown_row(row: Any, columns: Iterable[str]) -> str:
    """A sampled row as ``col=value, …`` (what a held message shows)."""
    return ", ".join(f"{c}={'NULL' if row[c] is None else row[c]}" for c in columns)


def failing_sample(failing: DataFrame, visible: list[str]) -> tuple[str, ...]:
    """A few of ``failing``'s rows as ``col=value, …`` over ``visible`` (dates and timestamps as Spark renders
    them): the sample a held refresh shows, row and group expectations alike."""
    return tuple(shown_row(r, visible) for r in rendered(failing.select(*visible)).limit(SAMPLE_ROWS).collect())


def failing_rows_sql(
    table: str, columns: Iterable[str], expectation: Expectation, snapshot: int, since: int | None = None
) -> str:
    """Spark SQL reading a few rows of ``table`` at ``snapshot`` that fail ``expectation``: how a process that did
    not run a held refresh shows its failing rows, run with the reader's own session and rights (never read into the
    catalog's metadata). A condition over groups is evaluated in a projection (a window cannot be in WHERE).

    ``since``: the snapshot a refresh that appended ``snapshot`` followed (``main``), so the SQL reads what its counts
    cover: a row condition's failing rows it added (those at ``snapshot`` ``EXCEPT ALL`` those at ``since``), a
    condition over groups the failing rows of the groups it touched (whose ``PARTITION BY`` values appear among the
    rows it added, old rows included, as :mod:`.audit_groups` counts them). ``None``: the whole table at
    ``snapshot`` (a recompute, an overwrite)."""
    shown = ", ".join(identifier(c) for c in shown_columns(columns))
    at = f"{qualified(table)} VERSION AS OF {int(snapshot)}"
    keys = over_groups(expectation)
    if keys is None:
        failing = f"SELECT {shown} FROM {at} WHERE NOT {passes(expectation)}"
        if since is None:
            return f"{failing} LIMIT {SAMPLE_ROWS}"
        before = f"{qualified(table)} VERSION AS OF {int(since)}"
        return f"{failing} EXCEPT ALL SELECT {shown} FROM {before} WHERE NOT {passes(expectation)} LIMIT {SAMPLE_ROWS}"
    named = [f"`__mt_group_key_{j}`" for j in range(len(keys))]
    marked = ", ".join(f"({k}) AS {n}" for k, n in zip(keys, named, strict=True))
    if since is None or not keys:
        return (
            f"SELECT {shown} FROM (SELECT *, NOT {passes(expectation)} AS `__mt_failing` FROM {at}) "
            f"WHERE `__mt_failing` LIMIT {SAMPLE_ROWS}"
        )
    added = f"SELECT * FROM {at} EXCEPT ALL SELECT * FROM {qualified(table)} VERSION AS OF {int(since)}"
    on = " AND ".join(f"s.{n} <=> a.{n}" for n in named)
    return (
        f"SELECT {shown} FROM (SELECT *, NOT {passes(expectation)} AS `__mt_failing`, {marked} FROM {at}) AS s "
        f"LEFT SEMI JOIN (SELECT DISTINCT {marked} FROM ({added})) AS a ON {on} WHERE s.`__mt_failing` "
        f"LIMIT {SAMPLE_ROWS}"
    )


def on_spark(options: Mapping[str, str], expectations: tuple[Expectation, ...]) -> dict[str, str]:
    """``options`` with ``'incremental.engine' = 'spark'`` where there are expectations: such a table's rows are
    counted and staged on Spark, never in process (what its refreshes run and what ``%mt explain`` says)."""
    return {**options, ENGINE.key: "spark"} if expectations else dict(options)


def dropping(expectations: tuple[Expectation, ...]) -> tuple[Expectation, ...]:
    """The ``DROP ROW`` expectations: the rows failing any of them are left out of the table."""
    return tuple(e for e in expectations if e.on_violation is OnViolation.DROP_ROW)


def kept(expectations: tuple[Expectation, ...]) -> str | None:
    """Spark SQL that is TRUE for a row every ``DROP ROW`` expectation keeps (``None``: there is none)."""
    dropped = dropping(expectations)
    return " AND ".join(passes(e) for e in dropped) if dropped else None


def without_dropped_rows(expanded: str) -> str:
    """The stored query before its ``DROP ROW`` filter wrapped it (its own text, so found exactly): what a refresh
    computes on Spark, the commit filtering and counting the rows (:mod:`.audit_write`, :func:`kept`)."""
    head, tail = "SELECT * FROM (", f") AS {ALIAS} WHERE "
    cut = expanded.rfind(tail)
    return expanded[len(head) : cut] if expanded.startswith(head) and cut > 0 else expanded


class ExpectationsHeldError(RefreshError):
    """A refresh's rows failed a ``FAIL UPDATE`` expectation: staged on the audit branch, ``main`` not moved.

    ``held`` carries the facts (which expectations, rows, a sample, the Fix) the manager's status shows."""

    def __init__(self, table: str, held: HeldRefresh) -> None:
        super().__init__(f"refresh of {table} held: {held.facts(f' on branch {BRANCH}')}", fix=held.fix)
        self.table = table
        self.held = held

    def without_rows(self) -> str:
        """The message without the sample of failing rows (what a lineage event carries)."""
        return ExpectationsHeldError(self.table, self.held.without_sample()).message()

    def __reduce__(self) -> tuple[object, ...]:
        return ExpectationsHeldError, (self.table, self.held)


def branch_table(table: str) -> str:
    """The Spark identifier that writes ``table``'s staging branch."""
    return f"{qualified(table)}.branch_{BRANCH}"


def stage(session: SparkSession, table: str) -> None:
    """(Re)start the staging branch at ``main``'s current snapshot: a held refresh's snapshot is dropped from it."""
    session.sql(f"ALTER TABLE {qualified(table)} CREATE OR REPLACE BRANCH {BRANCH}")


def publish(session: SparkSession, table: str, main_snapshot: int | None, staged: int) -> None:
    """Move ``main`` to ``staged``, which must descend from ``main_snapshot`` (fast-forward, checked by Iceberg in
    its commit: another writer's commit to ``main`` since makes it fail, nothing moved).

    Raises:
        RefreshConflictError: ``main`` moved since the refresh read it.
    """
    catalog, _, name = _split(table)
    try:
        if main_snapshot is None:  # a table without a snapshot has no main to fast-forward
            session.sql(f"CALL {catalog}.system.set_current_snapshot('{name}', {staged})").collect()
        else:
            session.sql(f"CALL {catalog}.system.fast_forward('{name}', 'main', '{BRANCH}')").collect()
    except Exception as exc:
        raise RefreshConflictError(
            f"{table} changed while its refresh was audited (another writer?); main was not moved, the next refresh "
            f"starts from the new state. ({str(exc).splitlines()[0]})"
        ) from exc


def _split(table: str) -> tuple[str, str, str]:
    """(catalog, namespace, ``namespace.name`` quoted for a procedure's string argument)."""
    catalog, rest = table.split(".", 1)
    namespace = rest.rsplit(".", 1)[0]
    return catalog, namespace, rest.replace("'", "''")


def held_refresh(
    table: str,
    audit: Audit,
    main_snapshot: int | None,
    staged: int,
    to_see: Mapping[str, str] | None = None,
    definition_changed: bool = False,
) -> HeldRefresh:
    """The facts of a held refresh (which expectations, rows, a sample, the Fix) that the card and ``%mt`` show;
    ``to_see``: per expectation, the SQL that reads its failing rows where no sample is in memory;
    ``definition_changed``: the table's definition is no longer the one the refresh was counted with."""
    return HeldRefresh(
        tuple(
            HeldExpectation(c.name, c.failed, c.checked, c.sample, (to_see or {}).get(c.name, ""))
            for c in audit.blocking
        ),
        main_snapshot,
        staged,
        fix=(
            "fix the source rows (the next refresh tries again), or publish the held snapshot on purpose with "
            f"ALTER MATERIALIZED TABLE {table} REFRESH WITH ('publish' = 'held')"
        ),
        definition_changed=definition_changed,
    )


def held_error(table: str, audit: Audit, main_snapshot: int | None, staged: int) -> ExpectationsHeldError:
    """What a held refresh says: which expectation, how many rows, a sample, and how to go on; the same facts in
    its :attr:`ExpectationsHeldError.held` for the manager's status."""
    return ExpectationsHeldError(table, held_refresh(table, audit, main_snapshot, staged))


def held_in_catalog(info: TableInfo) -> HeldRefresh | None:
    """The held refresh the catalog shows (the staging branch one refresh ahead of ``main``, its counts failing a
    ``FAIL UPDATE`` expectation), whoever ran it: what a process that does not refresh the table itself shows
    (a table on Airflow), with the SQL that reads the failing rows in place of a sample (:func:`failing_rows_sql`:
    rows are not in the catalog's metadata, and the manager's poll runs no Spark job), built only while the table's
    definition is the one the refresh was counted with (after an ``ALTER`` the SQL would read other columns or
    another condition: it says so instead). ``None``: nothing held (published, restaged, or never audited)."""
    found = staged(info)
    if found is None or found.head == info.current_snapshot_id or found.parent_id != info.current_snapshot_id:
        return None
    counted = Audit.from_summary(found.summary)
    state = RefreshState.from_summary(found.summary)
    if counted is None or not counted.blocking or state is None:
        return None
    definition = info.definition
    if definition is not None and definition.definition_version != state.definition_version:
        return held_refresh(info.name, counted, info.current_snapshot_id, found.snapshot_id, definition_changed=True)
    declared = {e.name: e for e in (definition.expectations if definition is not None else ())}
    columns = [c for c, _, _ in info.columns]
    appended = found.operation == "append" and info.current_snapshot_id is not None
    since = info.current_snapshot_id if appended else None
    to_see = {
        c.name: failing_rows_sql(info.name, columns, declared[c.name], found.snapshot_id, since)
        for c in counted.blocking
        if c.name in declared
    }
    return held_refresh(info.name, counted, info.current_snapshot_id, found.snapshot_id, to_see)


class Staged(NamedTuple):
    """What the staging branch holds: the refresh's snapshot and the counts' snapshot after it (:data:`COUNTS_OF_KEY`),
    or the refresh's alone."""

    snapshot_id: int
    """The refresh's snapshot (its rows and refresh state)."""
    parent_id: int | None
    summary: dict[str, str]
    """Its summary with the counts' (:data:`EXPECTATIONS_KEY`)."""
    head: int
    """The branch's snapshot: what a publish moves ``main`` to."""
    operation: str = ""
    """The refresh's snapshot's Iceberg operation (``append``: it added rows only)."""


def staged(info: TableInfo) -> Staged | None:
    """The staging branch's refresh; ``None`` without a branch."""
    if info.iceberg is None:
        return None
    meta = info.iceberg.metadata
    ref = meta.refs.get(BRANCH)
    head = None if ref is None else meta.snapshot_by_id(ref.snapshot_id)
    if head is None:
        return None
    summary = _summary(head)
    counted = summary.get(COUNTS_OF_KEY)
    snap = head if counted is None or head.parent_snapshot_id != int(counted) else meta.snapshot_by_id(int(counted))
    if snap is None or snap is head:
        return Staged(head.snapshot_id, head.parent_snapshot_id, summary, head.snapshot_id, _operation(head))
    own = {k: v for k, v in summary.items() if k == EXPECTATIONS_KEY}
    merged = {**_summary(snap), **own}
    return Staged(snap.snapshot_id, snap.parent_snapshot_id, merged, head.snapshot_id, _operation(snap))


def _summary(snap: Snapshot) -> dict[str, str]:
    return {} if snap.summary is None else {k: str(v) for k, v in snap.summary.additional_properties.items()}


def _operation(snap: Snapshot) -> str:
    return "" if snap.summary is None else str(snap.summary.operation.value)


def publish_held(session: SparkSession, catalog: MaterializedCatalog, table: str) -> int:
    """Move ``main`` to the refresh held on :data:`BRANCH` (``ALTER … REFRESH WITH ('publish' = 'held')``): its
    rows, counts and refresh state become the table's, so the next refresh starts after what it consumed.

    Raises:
        MtMagicError: nothing is held (a staged refresh that was never counted is not held either), or ``main`` moved
            since the refresh was held.
    """
    info = catalog.load(table)
    found = staged(info)
    statement = f"ALTER MATERIALIZED TABLE {table} REFRESH WITH ('publish' = 'held')"
    if found is None or found.head == info.current_snapshot_id or RefreshState.from_summary(found.summary) is None:
        raise MtMagicError(f"{table} has no held refresh to publish", statement=statement, fix="nothing to do")
    if Audit.from_summary(found.summary) is None:  # its refresh stopped between the write and the counts
        raise MtMagicError(
            f"the refresh staged for {table} (snapshot {found.snapshot_id}) was never counted against its "
            "expectations (it stopped before its audit), so it is not held: it cannot be published",
            statement=statement,
            fix=f"refresh again (ALTER MATERIALIZED TABLE {table} REFRESH): its rows are counted, then published or "
            "held",
        )
    if found.parent_id != info.current_snapshot_id:
        raise MtMagicError(
            f"the held refresh of {table} (snapshot {found.snapshot_id}) no longer follows main (snapshot "
            f"{info.current_snapshot_id}): a later commit replaced it",
            statement=statement,
            fix=f"refresh again (ALTER MATERIALIZED TABLE {table} REFRESH); if it is held, publish that one",
        )
    publish(session, table, info.current_snapshot_id, found.head)
    return found.snapshot_id
