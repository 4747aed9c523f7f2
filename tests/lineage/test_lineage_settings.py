"""Lineage is configured the way OpenLineage users configure clients, off unless configured; a bad configuration
is a warning that says what and how to fix it; the emitter never blocks a refresh (no Spark here)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mt_magic.lineage.emitter import BackgroundEmitter
from mt_magic.lineage.naming import dataset_name, job_name, location_name, parent_of
from mt_magic.lineage.settings import LineageConfigWarning, configured, open_client
from mt_magic.sql.query.column_lineage import ColumnOrigin, column_origins


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No openlineage.yml where the client looks, and no OPENLINEAGE variable."""
    import os

    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_off_unless_configured(home: Path) -> None:
    assert not configured({})
    assert open_client({}) is None
    assert configured({"OPENLINEAGE_URL": "http://127.0.0.1:5000"})
    assert not configured({"OPENLINEAGE_URL": "http://127.0.0.1:5000", "OPENLINEAGE_DISABLED": "true"})
    (home / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert configured({})


def test_a_file_transport_from_openlineage_yml(home: Path) -> None:
    events = home / "events.jsonl"
    (home / "openlineage.yml").write_text(f"transport:\n  type: file\n  log_file_path: {events}\n  append: true\n")
    client = open_client({})
    assert client is not None and client.transport.kind == "file"


@pytest.mark.parametrize(
    ("env", "yml", "message"),
    [
        ({"OPENLINEAGE_URL": "localhost:5000"}, None, r"OPENLINEAGE_URL = .* is not an http\(s\) URL; set it to"),
        ({"OPENLINEAGE_CONFIG": "/nowhere/openlineage.yml"}, None, r"/nowhere/openlineage.yml, which is not a file"),
        ({}, "transport:\n  type: no_such_transport\n", r"could not be configured from .*openlineage.yml"),
    ],
)
def test_a_bad_configuration_is_a_warning_that_says_how_to_fix_it(
    home: Path, env: dict[str, str], yml: str | None, message: str
) -> None:
    if yml is not None:
        (home / "openlineage.yml").write_text(yml)
    with pytest.warns(LineageConfigWarning, match=message):
        assert open_client(env) is None


def test_a_credential_in_the_url_stays_out_of_the_warning(home: Path) -> None:
    with pytest.warns(LineageConfigWarning) as caught:
        open_client({"OPENLINEAGE_URL": "ftp://user:hunter2@example.invalid/x"})
    assert "hunter2" not in str(caught[0].message)


def test_names_follow_the_spark_and_airflow_integrations() -> None:
    assert job_name("mt.sales.totals") == "mt_magic.refresh_materialized_table.mt_sales_totals"
    assert location_name("file:/data/wh/sales/orders") == ("file", "/data/wh/sales/orders")
    assert location_name("s3://lake/wh/sales/orders") == ("s3://lake", "wh/sales/orders")
    found = dataset_name("mt.sales.orders", "/data/wh/sales/orders/", "http://127.0.0.1:8181/")
    assert (found.namespace, found.name, found.table_namespace, found.table_name) == (
        "file",
        "/data/wh/sales/orders",
        "http://127.0.0.1:8181",
        "sales.orders",
    )
    assert parent_of("airflow/dag.task/0190") == ("airflow", "dag.task", "0190")
    assert parent_of("not-a-parent") is None


def test_column_origins() -> None:
    origins = column_origins(
        "SELECT o.region, SUM(o.amount) AS total, COUNT(*) AS n, upper(c.name) AS name "
        "FROM mt.s.orders o JOIN customers c ON o.cid = c.id GROUP BY o.region, c.name"
    )
    assert origins == {
        "region": (ColumnOrigin("mt.s.orders", "region", "IDENTITY"),),
        "total": (ColumnOrigin("mt.s.orders", "amount", "AGGREGATION"),),
        "name": (ColumnOrigin("customers", "name", "TRANSFORMATION"),),
    }
    assert column_origins("SELECT * FROM orders") == {}


def test_a_full_queue_drops_instead_of_waiting() -> None:
    emitter = BackgroundEmitter(capacity=2)
    release = threading.Event()
    started = threading.Event()

    def stuck() -> None:  # a consumer that does not answer
        started.set()
        release.wait(10)

    assert emitter.submit(stuck)
    assert started.wait(10)
    accepted = [emitter.submit(lambda: None) for _ in range(5)]
    assert accepted == [True, True, False, False, False] and emitter.dropped == 3
    release.set()
    assert emitter.flush(10)
    assert emitter.close(5)
    assert not emitter.submit(lambda: None)


def test_a_failing_event_does_not_stop_the_next(tmp_path: Path) -> None:
    emitter = BackgroundEmitter(pause=0)
    sent: list[int] = []

    def broken() -> None:
        raise ConnectionError("consumer down")

    emitter.submit(broken)
    emitter.submit(lambda: sent.append(1))
    assert emitter.flush(10) and emitter.close(5)
    assert (emitter.failed, sent) == (1, [1])


def test_after_a_failure_events_are_dropped_for_a_pause() -> None:
    emitter = BackgroundEmitter(pause=600)
    sent: list[int] = []

    def broken() -> None:
        raise ConnectionError("consumer down")

    emitter.submit(broken)
    emitter.submit(lambda: sent.append(1))
    assert emitter.flush(10) and emitter.close(5)
    assert (emitter.failed, emitter.dropped, sent) == (1, 1, [])
