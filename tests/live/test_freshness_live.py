"""The RefreshManager on real components: Spark jobs, the REST catalog, wall-clock time.

A CONTINUOUS table keeps within 2 × its freshness while its source receives appends; a FULL table refreshes on
its seconds-level cron; SUSPEND and DROP during a running Spark job cancel it and commit nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from live_support import (
    CATALOG,
    StalenessSample,
    actual_staleness,
    append_batch,
    current_snapshot_id,
    drop_namespace_tables,
    rows_of,
    utc_now,
    wait_until,
)

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.runtime.status import EventKind, RefreshEvent
from mt_magic.vocabulary import JobState, RefreshTrigger

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

NS = "fresh"
FRESHNESS = timedelta(seconds=5)


class EventLog:
    """Every event the manager publishes, collected from its thread."""

    def __init__(self) -> None:
        self._events: list[RefreshEvent] = []
        self._lock = threading.Lock()

    def __call__(self, event: RefreshEvent) -> None:
        with self._lock:
            self._events.append(event)

    def of(self, table: str, *kinds: EventKind, since: datetime | None = None) -> list[RefreshEvent]:
        """The events of ``table`` (of ``kinds``, if given; at or after ``since``, if given), in order."""
        with self._lock:
            return [
                e
                for e in self._events
                if e.table == table and (not kinds or e.kind in kinds) and (since is None or e.at >= since)
            ]


@pytest.fixture(scope="module")
def conn(spark, iceberg) -> Iterator:
    """A connection as the extension makes it: real Engine, real RefreshManager thread and worker pool."""
    from mt_magic.runtime.connection import ConnectionSettings, connect

    connection = connect(ConnectionSettings(catalog_name=CATALOG, namespace=NS, use_namespace=False))
    try:
        yield connection
    finally:
        stopped = connection.manager.stop(timeout=30)
        drop_namespace_tables(iceberg, NS)
        assert stopped, "the refresh manager did not stop within 30s"


@pytest.fixture
def events(conn) -> Iterator[EventLog]:
    log = EventLog()
    unsubscribe = conn.manager.subscribe(log)
    yield log
    unsubscribe()


def execute(conn, cell: str):
    """Run the statements of a cell through the service, as ``%%materialized`` does; returns the results."""
    from mt_magic.sql import parse_cell

    return [conn.service.execute(statement) for statement in parse_cell(cell)]


def make_source(spark, name: str, columns: str = "batch INT, v INT") -> tuple[str, str]:
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.{name} ({columns}) USING iceberg")
    return NS, name


def test_continuous_table_stays_within_twice_its_freshness_while_appends_arrive(conn, spark, iceberg, events):
    source = make_source(spark, "clicks")
    appended = {0: append_batch(iceberg, source, 0)}
    name, ident = f"{CATALOG}.{NS}.clicks_per_batch", (NS, "clicks_per_batch")
    [created] = execute(
        conn,
        """
        CREATE MATERIALIZED TABLE clicks_per_batch FRESHNESS = INTERVAL '5' SECOND
        AS SELECT batch, count(*) AS n, sum(v) AS total FROM clicks GROUP BY batch""",
    )
    created.refresh.result(timeout=120)
    manager = conn.manager

    samples: list[StalenessSample] = []
    start, next_batch = time.monotonic(), 1
    while time.monotonic() - start < 30:
        if time.monotonic() - start >= 2 * next_batch:
            appended[next_batch] = append_batch(iceberg, source, next_batch)
            next_batch += 1
        present = {row[0] for row in rows_of(iceberg, ident)}
        reported = manager.status(name).staleness
        now = utc_now()
        samples.append(StalenessSample(now, reported, actual_staleness(appended, present, now)))
        time.sleep(0.4)

    worst_actual = max(s.actual for s in samples)
    worst_reported = max(s.reported for s in samples if s.reported is not None)
    print(f"worst staleness over {len(samples)} samples: actual {worst_actual}, reported {worst_reported}")
    assert worst_actual <= 2 * FRESHNESS, f"table lagged {worst_actual} behind its source (freshness {FRESHNESS})"
    assert worst_reported <= 2 * FRESHNESS, f"manager reported staleness {worst_reported}"
    assert worst_reported >= timedelta(seconds=1), "the manager never reported the lag the appends caused"
    assert all(s.reported is not None for s in samples), "staleness unknown after the first refresh"
    succeeded = events.of(name, EventKind.REFRESH_SUCCEEDED)
    assert len(succeeded) >= 5, f"only {len(succeeded)} refreshes in 30s with a 5s freshness"
    assert succeeded[-1].status.staleness < FRESHNESS, "the success event carries the staleness after its commit"

    expected = sorted(
        map(tuple, spark.sql(f"SELECT batch, count(*), sum(v) FROM {CATALOG}.{NS}.clicks GROUP BY batch").collect())
    )
    assert len(expected) == next_batch
    wait_until(
        lambda: rows_of(iceberg, ident) == expected,
        3 * FRESHNESS.total_seconds(),
        "the table to converge to the full recomputation",
    )
    wait_until(
        lambda: manager.status(name).staleness == timedelta(0),
        2 * FRESHNESS.total_seconds(),
        "reported staleness to drop to zero once caught up",
    )
    assert not events.of(name, EventKind.REFRESH_FAILED)
    execute(conn, "DROP MATERIALIZED TABLE clicks_per_batch")


def test_full_table_refreshes_on_its_seconds_cron(conn, spark, iceberg, events):
    source = make_source(spark, "orders")
    append_batch(iceberg, source, 0)
    name, ident = f"{CATALOG}.{NS}.order_totals", (NS, "order_totals")
    [created] = execute(
        conn,
        """
        CREATE MATERIALIZED TABLE order_totals FRESHNESS = INTERVAL '10' SECOND REFRESH_MODE = FULL
        AS SELECT count(*) AS n, sum(v) AS total FROM orders""",
    )
    created.refresh.result(timeout=120)
    # the manager's thread records the finished run just after its future settles (and, on a loaded machine, the
    # 10-second cron may already have fired again): wait for a scheduled state rather than expect it at once
    wait_until(
        lambda: conn.manager.status(name).state is JobState.SCHEDULED,
        3 * 10,
        "the table to be scheduled on its cron",
    )
    status = conn.manager.status(name)
    assert status.next_refresh_at.second % 10 == 0 and status.next_refresh_at.microsecond == 0

    for batch in (1, 2):  # a change before each of the next two fires, so each scheduled run commits
        append_batch(iceberg, source, batch)
        wait_until(
            lambda b=batch: rows_of(iceberg, ident) == [(3 * (b + 1), 6 * (b + 1))],
            25,
            f"the scheduled refresh after batch {batch}",
        )

    scheduled = [e for e in events.of(name, EventKind.REFRESH_STARTED) if e.message == RefreshTrigger.SCHEDULED.value]
    assert len(scheduled) >= 2
    for event in scheduled:
        fire = event.at.replace(second=event.at.second - event.at.second % 10, microsecond=0)
        assert event.at - fire < timedelta(seconds=2.5), f"scheduled run started {event.at}, fire was {fire}"
    info = conn.service.workspace.catalog.load(name)
    states = [s.refresh_state for s in info.snapshots if s.refresh_state is not None]
    assert [s.trigger.value for s in states][-2:] == ["scheduled", "scheduled"]
    for state in states[-2:]:
        assert state.scheduled_time.second % 10 == 0 and state.scheduled_time.microsecond == 0
    execute(conn, "DROP MATERIALIZED TABLE order_totals")


SLOW_QUERY = """
    AS SELECT k, ms, reflect('java.lang.Thread', 'sleep', ms) AS slept FROM {source}"""
"""Each row sleeps ``ms`` inside a Spark task: the refresh is as slow as the source says, and interruptible."""


def start_slow_refresh(conn, spark, iceberg, table: str, source: str) -> tuple[str, tuple[str, str], int]:
    """A table whose first refresh is quick and whose next one sleeps for minutes; returns when that one runs
    a Spark job. Returns (qualified name, identifier, snapshot id of the quick refresh)."""
    make_source(spark, source, "k INT, ms BIGINT")
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.{source} VALUES (1, 0)")
    name, ident = f"{CATALOG}.{NS}.{table}", (NS, table)
    [created] = execute(
        conn, f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '3' SECOND" + SLOW_QUERY.format(source=source)
    )
    created.refresh.result(timeout=120)
    before = current_snapshot_id(iceberg, ident)
    assert before is not None
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.{source} VALUES (2, 600000)")
    tracker = spark.sparkContext.statusTracker()
    wait_until(
        lambda: conn.manager.status(name).progress is not None and tracker.getActiveJobsIds(),
        30,
        f"a Spark job of the slow refresh of {name}",
    )
    return name, ident, before


def test_suspend_during_a_run_cancels_the_spark_job_and_commits_nothing(conn, spark, iceberg, events):
    name, ident, before = start_slow_refresh(conn, spark, iceberg, "slow_suspended", "slow_src1")
    tracker = spark.sparkContext.statusTracker()

    started, suspended_at = time.monotonic(), utc_now()
    execute(conn, "ALTER MATERIALIZED TABLE slow_suspended SUSPEND")
    assert time.monotonic() - started < 5, "SUSPEND waited for the running job"
    wait_until(lambda: not tracker.getActiveJobsIds(), 20, "the Spark job to be cancelled")
    assert time.monotonic() - started < 25, "the job ran on instead of being cancelled (it sleeps 10 min)"

    wait_until(lambda: conn.manager.status(name).state is JobState.SUSPENDED, 10, "SUSPENDED")
    time.sleep(2 * 3)  # two freshness periods: a suspended table must not run again
    status = conn.manager.status(name)
    assert status.state is JobState.SUSPENDED and status.consecutive_failures == 0 and status.last_error is None
    assert current_snapshot_id(iceberg, ident) == before, "a cancelled refresh committed"
    assert [row[:2] for row in rows_of(iceberg, ident)] == [(1, 0)]
    assert not events.of(name, EventKind.REFRESH_FAILED, EventKind.REFRESH_SUCCEEDED, since=suspended_at)
    assert any("cancelled: suspended" in e.message for e in events.of(name, EventKind.STATE_CHANGED))
    execute(conn, "DROP MATERIALIZED TABLE slow_suspended")


def test_drop_during_a_run_cancels_the_spark_job_and_forgets_the_table(conn, spark, iceberg, events):
    name, ident, _ = start_slow_refresh(conn, spark, iceberg, "slow_dropped", "slow_src2")
    tracker = spark.sparkContext.statusTracker()

    location = iceberg.load_table(ident).location()
    started, dropped_at = time.monotonic(), utc_now()
    execute(conn, "DROP MATERIALIZED TABLE slow_dropped")
    # DROP returns only after the cancelled write aborted, so the purge leaves no data files behind
    assert not tracker.getActiveJobsIds()
    leftovers = list(Path(location.removeprefix("file:")).rglob("*.parquet"))
    assert leftovers == [], f"the dropped table left data files: {leftovers}"
    assert time.monotonic() - started < 25, "the job ran on instead of being cancelled"

    with pytest.raises(NoSuchMaterializedTableError):
        conn.manager.status(name)
    time.sleep(3)
    assert not iceberg.table_exists(ident), "a cancelled refresh brought the dropped table back"
    assert name not in {s.name for s in conn.manager.statuses()}
    assert not events.of(name, EventKind.REFRESH_FAILED, EventKind.REFRESH_SUCCEEDED, since=dropped_at)
    assert events.of(name, EventKind.TABLE_REMOVED, since=dropped_at)

    # the worker slot is free again: a new table refreshes at once
    make_source(spark, "after_drop", "k INT, ms BIGINT")
    [created] = execute(conn, "CREATE MATERIALIZED TABLE after_drop_mt AS SELECT count(*) AS n FROM after_drop")
    assert created.refresh.result(timeout=60).snapshot_id is not None
    execute(conn, "DROP MATERIALIZED TABLE after_drop_mt")
