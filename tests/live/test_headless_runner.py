"""``python -m mt_magic run``: tables defined elsewhere stay fresh with no notebook open; SIGTERM stops it cleanly.

The tables are created beforehand by a service without a manager (as a notebook would, then closed); the runner
is a real subprocess that finds the live catalog through pyiceberg's environment configuration.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from live_support import (
    CATALOG,
    RunnerOutput,
    actual_staleness,
    append_batch,
    current_snapshot_id,
    drop_namespace_tables,
    rows_of,
    utc_now,
    wait_until,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

NS = "hl"
FRESHNESS = timedelta(seconds=5)
TOTALS, SLOW = f"{CATALOG}.{NS}.event_totals", f"{CATALOG}.{NS}.slow"


@pytest.fixture(scope="module")
def tables(spark, iceberg) -> Iterator[None]:
    """The source and two materialized tables, created and populated without any manager (kept for the module)."""
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.sql import parse_cell

    service = connect(
        ConnectionSettings(catalog_name=CATALOG, namespace=NS, start_manager=False, use_namespace=False)
    ).service
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.events (batch INT, v INT) USING iceberg")
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.ctrl (k INT, ms BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.ctrl VALUES (1, 0)")
    append_batch(iceberg, (NS, "events"), 0)
    try:
        for statement in parse_cell("""
            CREATE MATERIALIZED TABLE event_totals FRESHNESS = INTERVAL '5' SECOND
            AS SELECT batch, count(*) AS n, sum(v) AS total FROM events GROUP BY batch;
            CREATE MATERIALIZED TABLE slow FRESHNESS = INTERVAL '3' SECOND
            AS SELECT k, ms, reflect('java.lang.Thread', 'sleep', ms) AS slept FROM ctrl"""):
            service.execute(statement).refresh.result(timeout=120)
        yield
    finally:
        drop_namespace_tables(iceberg, NS)


@pytest.fixture
def runner(tables, subprocess_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[subprocess.Popen, RunnerOutput]]:
    cmd = [sys.executable, "-m", "mt_magic", "run", "--catalog", CATALOG, "--namespace", NS, "--master", "local[2]"]
    with open(tmp_path / "runner.stderr", "w") as stderr:
        proc = subprocess.Popen(
            cmd,
            env=subprocess_env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    output = RunnerOutput(proc.stdout)
    try:
        yield proc, output
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_the_runner_keeps_a_table_fresh_and_stops_cleanly_on_sigterm(runner, iceberg):
    proc, output = runner
    events, ident = (NS, "events"), (NS, "event_totals")
    wait_until(lambda: "keeping fresh" in output.text() or proc.poll() is not None, 120, "the runner to start")
    assert proc.poll() is None, f"the runner exited:\n{output.text()}"
    assert TOTALS in output.text() and SLOW in output.text()
    # The runner's catch-up found nothing to do; its first real refresh warms its JVM up (slow on a busy machine).
    appended = {0: utc_now(), 1: append_batch(iceberg, events, 1)}
    wait_until(lambda: {row[0] for row in rows_of(iceberg, ident)} == {0, 1}, 90, "the runner's first refresh")

    worst, start = timedelta(0), time.monotonic()
    for batch in range(2, 12):  # a batch every 2 s for 20 s
        appended[batch] = append_batch(iceberg, events, batch)
        while time.monotonic() < start + 2 * (batch - 1):
            present = {row[0] for row in rows_of(iceberg, ident)}
            worst = max(worst, actual_staleness(appended, present, utc_now()))
            time.sleep(0.5)
    wait_until(
        lambda: {row[0] for row in rows_of(iceberg, ident)} == set(range(12)),
        3 * FRESHNESS.total_seconds(),
        "the table to catch up with every batch",
    )
    assert worst <= 2 * FRESHNESS, f"table lagged {worst} behind its source with only the runner:\n{output.text()}"
    assert rows_of(iceberg, ident) == [(b, 3, 6) for b in range(12)]
    assert len(output.events(TOTALS, "refresh-succeeded")) >= 4
    assert not output.events(TOTALS, "refresh-failed")

    # SIGTERM while a refresh runs a Spark job that would take 10 minutes: cancelled, nothing committed.
    before, mark = current_snapshot_id(iceberg, (NS, "slow")), len(output.snapshot())
    make_the_slow_table_sleep(iceberg)

    def slow_refresh_running() -> bool:
        lines = [(t, line) for t, line in output.snapshot()[mark:] if SLOW in line.split()]
        return bool(lines) and "refresh-started" in lines[-1][1] and time.monotonic() - lines[-1][0] > 3

    wait_until(slow_refresh_running, 30, "the slow refresh to be running")
    stopping = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=40)
    took = time.monotonic() - stopping
    text = output.text()
    assert proc.returncode == 0, text
    assert took < 30, f"the runner took {took:.0f}s to stop"
    assert "SIGTERM received" in text and text.endswith("mt_magic runner: stopped") and "exiting anyway" not in text
    assert current_snapshot_id(iceberg, (NS, "slow")) == before, "the cancelled refresh committed"


def make_the_slow_table_sleep(iceberg) -> None:
    """A row that makes the slow table's next refresh sleep for 10 minutes inside a Spark task."""
    import pyarrow as pa

    table = iceberg.load_table((NS, "ctrl"))
    table.append(pa.table({"k": pa.array([2], pa.int32()), "ms": pa.array([600_000], pa.int64())}))


def test_ctrl_c_stops_the_runner_cleanly(runner, tmp_path: Path):
    """PySpark's SparkContext installs a SIGINT handler (cancel every job, raise KeyboardInterrupt); the runner's
    own handler must win, or Ctrl-C ends in a traceback with refreshes failing instead of being cancelled."""
    proc, output = runner
    wait_until(lambda: "keeping fresh" in output.text() or proc.poll() is not None, 120, "the runner to start")
    assert proc.poll() is None, f"the runner exited:\n{output.text()}"

    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=40)
    text, stderr = output.text(), (tmp_path / "runner.stderr").read_text()
    assert proc.returncode == 0, f"{text}\n{stderr[-3000:]}"
    assert "SIGINT received" in text and text.endswith("mt_magic runner: stopped")
    assert "KeyboardInterrupt" not in stderr and "Traceback" not in stderr
