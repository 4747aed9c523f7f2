"""A real Jupyter kernel is killed; a new one resumes refreshing from the catalog alone.

The kernels run this checkout's venv Python with ``MT_MAGIC_HOME`` set to the test's home, so ``%load_ext
mt_magic`` finds the test's embedded catalog server the way a first-time user's notebook finds its own.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from live_support import (
    append_batch,
    drop_namespace_tables,
    process_group_alive,
    rows_of,
    running_kernel,
    wait_until,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

NS = "kr"
SOURCE, TABLE = (NS, "events"), (NS, "event_totals")
NAME = f"mt.{NS}.event_totals"
"""The table's name inside the kernels, whose catalog is the extension's default ``mt``."""
FRESHNESS_S = 5

CREATE = f"""%%materialized --wait
CREATE MATERIALIZED TABLE {NS}.event_totals FRESHNESS = INTERVAL '{FRESHNESS_S}' SECOND
AS SELECT batch, count(*) AS n, sum(v) AS total FROM {NS}.events GROUP BY batch
"""


def batches(iceberg) -> set[int]:
    return {row[0] for row in rows_of(iceberg, TABLE)}


def last_refresh(iceberg):
    """(trigger, consumed snapshot of the source) of the newest refresh commit, read from the catalog."""
    from mt_magic.catalog.definitions import RefreshState

    table = iceberg.load_table(TABLE)
    for snapshot in reversed(table.snapshots()):
        state = RefreshState.from_summary(snapshot.summary.additional_properties if snapshot.summary else {})
        if state is not None:
            return state.trigger.value, state.source_states[0].snapshot_id
    return None


@pytest.fixture
def source(iceberg):
    import pyarrow as pa

    iceberg.create_namespace_if_not_exists(NS)
    iceberg.create_table(SOURCE, schema=pa.schema([("batch", pa.int32()), ("v", pa.int32())]))
    try:
        yield SOURCE
    finally:
        drop_namespace_tables(iceberg, NS)


def test_a_killed_kernel_is_replaced_and_the_new_one_catches_up_and_keeps_the_table_fresh(
    source, iceberg, kernel_specs: Path, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    append_batch(iceberg, source, 0)
    with running_kernel(kernel_specs, subprocess_env, tmp_path) as first:
        first.run("%load_ext mt_magic", timeout=180)
        first.run(CREATE, timeout=180)
        assert batches(iceberg) == {0}
        append_batch(iceberg, source, 1)
        wait_until(lambda: batches(iceberg) == {0, 1}, 4 * FRESHNESS_S, "the first kernel's scheduled refresh")
        pgid = first.pid
        first.kill()
    wait_until(lambda: not process_group_alive(pgid), 30, "the killed kernel and its Spark JVM to be gone")
    _, consumed_by_first = last_refresh(iceberg)

    append_batch(iceberg, source, 2)
    append_batch(iceberg, source, 3)
    time.sleep(FRESHNESS_S)
    assert batches(iceberg) == {0, 1}, "something refreshed the table with no kernel running"

    with running_kernel(kernel_specs, subprocess_env, tmp_path) as second:
        second.run("%load_ext mt_magic", timeout=180)
        wait_until(lambda: batches(iceberg) == {0, 1, 2, 3}, 60, "the new kernel to catch the table up")
        trigger, consumed = last_refresh(iceberg)
        assert trigger == "catch-up"
        assert consumed == iceberg.load_table(source).current_snapshot().snapshot_id != consumed_by_first

        append_batch(iceberg, source, 4)
        wait_until(lambda: batches(iceberg) == {0, 1, 2, 3, 4}, 4 * FRESHNESS_S, "the new kernel's schedule")
        assert last_refresh(iceberg)[0] == "scheduled"
        state = second.run_json(f"get_ipython()._mt_magic_magics.connection.manager.status({NAME!r}).state.value")
        assert state in ("scheduled", "running")
        assert rows_of(iceberg, TABLE) == [(b, 3, 6) for b in range(5)]

        # exit() with the manager running: the interpreter exits, atexit stops the manager, nothing hangs.
        second.client.execute("exit()")
        wait_until(lambda: not second.manager.is_alive(), 20, "the kernel to exit after exit()")
