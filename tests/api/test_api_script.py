"""The Python API from a plain Python script (no IPython shell): it connects on the magics' configuration (here
``MT_MAGIC_CATALOG`` / ``MT_MAGIC_NAMESPACE`` and pyiceberg's env for the test catalog), runs every refresh within
the call, and fails with the same errors; the test reads the result back from the catalog with its own session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from shared_catalog import CATALOG

pytestmark = [pytest.mark.spark, pytest.mark.kernel, pytest.mark.timeout(600)]  # a second process with its own Spark

NS = "api_script"
SCRIPT = textwrap.dedent(
    """
    import json
    import sys
    from datetime import timedelta

    import mt_magic
    from mt_magic.errors import MtMagicError

    out = {"shell": "IPython" in sys.modules and __import__("IPython").get_ipython() is not None}
    totals = mt_magic.materialize(
        "totals", "SELECT k, sum(v) AS total FROM events GROUP BY k", freshness=timedelta(minutes=5)
    )
    out["name"] = totals.name
    out["first"] = sorted(map(list, totals.to_pandas().itertuples(index=False, name=None)))
    status = totals.status
    last = status.last_refresh
    out["status"] = [status.mode.value, status.freshness.total_seconds(), last.kind.value, last.trigger.value]
    for label, call in [
        ("unknown", lambda: mt_magic.table("nope")),
        ("freshness", lambda: mt_magic.materialize("bad", "SELECT 1 AS one", freshness="INTERVAL '1' MONTH")),
        ("source", lambda: mt_magic.materialize("bad", "SELECT * FROM no_such_source")),
    ]:
        try:
            call()
            out[label] = None
        except MtMagicError as exc:
            out[label] = [type(exc).__name__, str(exc)]
    sys.stdin.readline()  # the test appends rows, then lets the script refresh
    mt_magic.table("totals").refresh(wait=True)
    history = mt_magic.table("totals").history()
    out["history"] = history[["kind", "trigger"]].values.tolist()
    out["lineage"] = {k: list(v) for k, v in mt_magic.table("totals").lineage.reads.items()}
    mt_magic.table("totals").suspend()
    out["suspended"] = mt_magic.table("totals").status.state.value
    print("RESULT " + json.dumps(out), flush=True)
    """
)


def test_a_script_defines_refreshes_and_reads_a_table(connection, tmp_path) -> None:
    from mt_magic.sql import parse_cell

    spark = connection.spark
    catalog = connection.service.workspace.catalog
    catalog.catalog.create_namespace_if_not_exists(NS)
    events = f"{CATALOG}.{NS}.events"
    spark.sql(f"CREATE TABLE {events} (k INT, v INT) USING iceberg")
    spark.sql(f"INSERT INTO {events} VALUES (1, 2), (1, 3), (2, 4)")
    env = {
        **os.environ,
        "MT_MAGIC_CATALOG": CATALOG,
        "MT_MAGIC_NAMESPACE": NS,
        "MT_MAGIC_SPARK_MASTER": "local[1]",
        "MT_MAGIC_DRIVER_MEMORY": "1g",
    }
    table = f"{CATALOG}.{NS}.totals"
    log = tmp_path / "script.log"
    with log.open("w") as errors:
        script = subprocess.Popen(
            [sys.executable, "-c", SCRIPT],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        deadline = time.monotonic() + 400
        while not (catalog.exists(table) and catalog.load(table).last_refresh() is not None):
            assert script.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the script's first refresh committed"
            time.sleep(0.5)
        spark.sql(f"INSERT INTO {events} VALUES (2, 6), (3, 1)")
        stdout, _ = script.communicate("go\n", timeout=400)
    finally:
        if script.poll() is None:
            script.kill()
    assert script.returncode == 0, log.read_text()[-3000:]
    out = json.loads(next(line for line in stdout.splitlines() if line.startswith("RESULT "))[len("RESULT ") :])

    assert out["shell"] is False
    assert out["name"] == table
    assert out["first"] == [[1, 5], [2, 4]]
    assert out["status"] == ["CONTINUOUS", 300.0, "full", "initial"]
    assert [trigger for _, trigger in out["history"]] == ["manual", "initial"]
    assert out["lineage"] == {table: [events]}
    assert out["suspended"] == "suspended"
    assert sorted(map(tuple, spark.sql(f"SELECT * FROM {table}").collect())) == [(1, 5), (2, 10), (3, 1)]

    # The errors are the ones a cell gets (same type, same text), and nothing was created for them.
    assert out["unknown"][0] == "NoSuchMaterializedTableError" and "nope" in out["unknown"][1]
    with pytest.raises(Exception) as in_cell:
        parse_cell("CREATE MATERIALIZED TABLE bad FRESHNESS = INTERVAL '1' MONTH AS SELECT 1 AS one")
    assert out["freshness"][0] == type(in_cell.value).__name__ == "FreshnessError"
    assert f"Fix: {in_cell.value.fix}" in out["freshness"][1]
    assert out["source"][0] == "DefinitionError" and "no_such_source" in out["source"][1]
    assert not catalog.exists(f"{CATALOG}.{NS}.bad")
    for ident in catalog.catalog.list_tables(NS):
        catalog.catalog.purge_table(ident)
