"""The stall watchdog against a real hang: a refresh whose Spark task blocks for good reading its source (the data
file is swapped for a named pipe nobody writes, as a read from a lost mount or a dead object store never returns)
is flagged STALLED with Spark's state, then past its limit the manager cancels the job group, fails the run with
RefreshTimeLimitError while the task is still stuck, and the retry on the table's backoff commits.

A real SparkSession, the real REST catalog and the real engine under a background RefreshManager; only its discovery
is narrowed to this test's table (the session's catalog holds other tests' tables)."""

from __future__ import annotations

import os
import shutil
import threading
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import pytest
from mt_testing import OneTable, run
from shared_catalog import CATALOG

from mt_magic.errors import RefreshTimeLimitError
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.manager.watchdog import StallPolicy
from mt_magic.runtime.status import EventKind, RefreshEvent

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")

WATCH = StallPolicy(factor=1, floor=timedelta(seconds=2), limit_factor=1, limit_floor=timedelta(hours=1))
"""Flagged once past its usual duration (the first refresh's); no limit within the test, until…"""
GIVE_UP = StallPolicy(factor=1, floor=timedelta(seconds=2), limit_factor=1, limit_floor=timedelta(seconds=2))
"""…the test has seen the stall and Spark's stuck task, and sets this one (as %config does): the limit has passed."""
WAIT = 240.0
"""A bound for each wait on a condition (a loaded machine), never an expected duration."""


def test_a_refresh_hung_in_spark_is_flagged_then_cancelled_by_the_limit_and_the_retry_commits(
    mt, spark, tmp_path: Path
) -> None:
    spark.sql("CREATE TABLE src (k INT, v BIGINT) USING iceberg").collect()
    spark.sql("INSERT INTO src VALUES (1, 10), (2, 20), (1, 5)").collect()
    run(
        mt,
        "CREATE MATERIALIZED TABLE totals FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL "
        "AS SELECT k, sum(v) AS s FROM src GROUP BY k",
    )
    name = f"{CATALOG}.{mt.workspace.default_namespace}.totals"
    files = spark.sql(f"SELECT file_path FROM {CATALOG}.{mt.workspace.default_namespace}.src.files").collect()
    swapped = [
        (Path(urlparse(row[0]).path), tmp_path / f"data{i}", tmp_path / f"pipe{i}") for i, row in enumerate(files)
    ]
    for data_file, kept, _ in swapped:
        shutil.move(data_file, kept)
        os.mkfifo(data_file)  # opening it for reading blocks until a writer comes: nobody does

    manager = RefreshManager(
        OneTable(mt.engine, name),  # type: ignore[arg-type]
        progress_every=timedelta(milliseconds=200),
        retry=RetryPolicy(base=timedelta(seconds=1), max_delay=timedelta(seconds=2), jitter=0.0),
        stall_policy=WATCH,
    )
    events: list[RefreshEvent] = []
    seen = threading.Condition()

    def record(event: RefreshEvent) -> None:
        with seen:
            events.append(event)
            seen.notify_all()

    def first(kind: EventKind, prefix: str = "") -> RefreshEvent | None:
        return next((e for e in events if e.table == name and e.kind is kind and e.message.startswith(prefix)), None)

    manager.subscribe(record)
    manager.start()
    try:
        future = manager.refresh_now(name)
        with seen:
            assert seen.wait_for(lambda: first(EventKind.STATE_CHANGED, "stalled"), WAIT), events
        flagged = first(EventKind.STATE_CHANGED, "stalled")
        assert flagged is not None and flagged.status is not None and flagged.status.state.value == "running"
        stall = flagged.status.stall
        assert stall is not None and stall.usual is not None  # the first refresh, read from the catalog's history
        assert (stall.flagged_after, stall.limit) == (max(stall.usual, WATCH.floor), WATCH.limit_floor)
        # Spark's own view: the refresh's job is there, with its task stuck in the read.
        with seen:
            assert seen.wait_for(
                lambda: (s := manager.status(name).stall) is not None and s.spark is not None and s.spark.running_tasks,
                WAIT,
            ), manager.status(name)
        spark_view = manager.status(name).stall.spark  # type: ignore[union-attr]
        assert spark_view is not None and spark_view.active_jobs == 1 and spark_view.running_tasks

        for data_file, kept, pipe in swapped:  # a stuck task keeps its pipe; the next read finds the data again
            os.rename(data_file, pipe)
            shutil.copyfile(kept, data_file)
        manager.stall_policy = GIVE_UP
        with pytest.raises(RefreshTimeLimitError, match="ran past its time limit of ") as failed:
            future.result(timeout=WAIT)
        assert "task(s) running" in str(failed.value) and "Spark had 0 task(s)" not in str(failed.value)
        [failure] = manager.failures(name)
        assert failure.stall is not None and failure.error is not None and "time limit" in failure.error

        with seen:
            assert seen.wait_for(lambda: first(EventKind.REFRESH_SUCCEEDED), WAIT), events
        kinds = [e.kind for e in events if e.kind in (EventKind.REFRESH_FAILED, EventKind.REFRESH_SUCCEEDED)]
        assert kinds == [EventKind.REFRESH_FAILED, EventKind.REFRESH_SUCCEEDED]  # the retry, on its backoff
        status = manager.status(name)
        assert status.consecutive_failures == 0 and status.last_refresh is not None
        assert status.last_refresh.trigger.value == "manual" and status.last_refresh.stall is None
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, 15), (2, 20)]
    finally:
        manager.stop()
        for _, _, pipe in swapped:  # let a stuck task's read end (it belongs to a cancelled job)
            if pipe.exists():
                try:
                    os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:  # no reader left
                    pass
                pipe.unlink()
