"""``python -m mt_magic run`` refreshes a table with the SQL settings of the session that defined it, whatever its own
JVM's time zone: a notebook in America/Los_Angeles defines the table, a runner in Asia/Tokyo keeps it fresh.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_support import CATALOG, RunnerOutput, drop_namespace_tables, rows_of, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

NS = "hlsettings"
TZ = "spark.sql.session.timeZone"
HOUR = 3_600_000_000
MARCH_10 = 1_710_028_800_000_000
"""2024-03-10 00:00:00 UTC in microseconds; in Los Angeles 02:30 that day does not exist: it is 10:30 UTC."""


def insert(spark, ids_and_hours: list[tuple[int, int]]) -> None:
    values = ", ".join(f"({i}, timestamp_micros({MARCH_10 + h * HOUR}))" for i, h in ids_and_hours)
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.ev SELECT * FROM VALUES {values} AS v(id, ts)")


@pytest.fixture
def table_in_los_angeles(spark, iceberg) -> Iterator[None]:
    """A table defined in a Los Angeles session (and refreshed once there), then left to the runner."""
    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.sql import parse_cell

    service = connect(
        ConnectionSettings(catalog_name=CATALOG, namespace=NS, start_manager=False, use_namespace=False)
    ).service
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.ev (id INT, ts TIMESTAMP) USING iceberg")
    insert(spark, [(i, i) for i in range(24)])
    before = spark.conf.get(TZ)
    spark.conf.set(TZ, "America/Los_Angeles")
    try:
        (statement,) = parse_cell(
            "CREATE MATERIALIZED TABLE la WITH ('incremental.engine' = 'spark') FRESHNESS = INTERVAL '5' SECOND "
            "AS SELECT id FROM ev WHERE ts > '2024-03-10 02:30:00'"
        )
        service.execute(statement).refresh.result(timeout=120)
        spark.conf.set(TZ, before)
        yield
    finally:
        spark.conf.set(TZ, before)
        drop_namespace_tables(iceberg, NS)


def test_a_runner_in_another_time_zone_refreshes_with_the_defining_sessions(
    table_in_los_angeles, spark, iceberg, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    assert [r[0] for r in rows_of(iceberg, (NS, "la"))] == list(range(11, 24))  # after 10:30 UTC
    env = {**subprocess_env, "TZ": "Asia/Tokyo", "JAVA_TOOL_OPTIONS": "-Duser.timezone=Asia/Tokyo"}
    cmd = [sys.executable, "-m", "mt_magic", "run", "--catalog", CATALOG, "--namespace", NS, "--master", "local[2]"]
    with open(tmp_path / "runner.stderr", "w") as stderr:
        proc = subprocess.Popen(
            cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True
        )
    output = RunnerOutput(proc.stdout)
    try:
        wait_until(lambda: "keeping fresh" in output.text() or proc.poll() is not None, 120, "the runner to start")
        assert proc.poll() is None, f"the runner exited:\n{output.text()}"
        # 03:00–10:00 UTC on March 10 is after 02:30 in Tokyo and in UTC, but not in Los Angeles; 200 is after it
        # everywhere and shows that the runner's refresh ran.
        insert(spark, [*((100 + h, h) for h in range(3, 11)), (200, 30)])
        wait_until(lambda: (200,) in rows_of(iceberg, (NS, "la")), 120, "the runner's refresh")
        assert [r[0] for r in rows_of(iceberg, (NS, "la"))] == [*range(11, 24), 200], output.text()
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=60)
