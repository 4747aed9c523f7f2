"""Catalog outage: the REST catalog process is stopped while a manager refreshes, then started again on the same
port. Meanwhile the manager pauses (statuses and the ``%mt`` dashboard say why), counts no failures and does not
spin; afterwards every table catches up with no manual step.

The test owns its server (its own database, warehouse and port), so stopping it disturbs nothing else.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_support import append_batch, rows_of, wait_until

from mt_magic.runtime.status import EventKind, RefreshEvent

pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

CATALOG, NS = "mtout", "o"
TOTALS = f"{CATALOG}.{NS}.totals"
OUTAGE_S = 12


class CatalogProcess:
    """``python -m mt_magic.catalog serve`` on a fixed port, stopped and started at will."""

    def __init__(self, home: Path) -> None:
        self.home = home
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.proc: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [
            sys.executable,
            "-m",
            "mt_magic.catalog",
            "serve",
            "--port",
            str(self.port),
            "--warehouse",
            str(self.home / "warehouse"),
            "--uri",
            f"sqlite:///{self.home / 'catalog.db'}",
            "--insecure-no-auth",
        ]
        env = {**os.environ, "MT_MAGIC_CATALOG_TOKEN": ""}
        with open(self.home / "server.log", "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        wait_until(self._answers, 60, "the catalog server to answer")

    def _answers(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.uri}/v1/config", timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[CatalogProcess]:
    server = CatalogProcess(tmp_path)
    server.start()
    os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__URI"] = server.uri
    os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__TYPE"] = "rest"
    try:
        yield server
    finally:
        server.stop()
        for key in ("URI", "TYPE"):
            os.environ.pop(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key}", None)


def test_an_outage_pauses_the_manager_visibly_and_every_table_catches_up_after(spark, catalog) -> None:
    from pyiceberg.catalog import load_catalog

    from mt_magic.runtime.connection import ConnectionSettings, connect
    from mt_magic.sql import parse_cell
    from mt_magic.widgets.render import dashboard_html

    iceberg = load_catalog(CATALOG, type="rest", uri=catalog.uri)
    conn = connect(ConnectionSettings(catalog_name=CATALOG, namespace=NS, use_namespace=False))
    events: list[RefreshEvent] = []
    conn.manager.subscribe(events.append)
    try:
        spark.sql(f"CREATE TABLE {CATALOG}.{NS}.events (batch INT, v INT) USING iceberg")
        append_batch(iceberg, (NS, "events"), 0)
        for statement in parse_cell(
            "CREATE MATERIALIZED TABLE totals FRESHNESS = INTERVAL '3' SECOND "
            "AS SELECT batch, count(*) AS n FROM events GROUP BY batch"
        ):
            conn.service.execute(statement).refresh.result(timeout=180)
        append_batch(iceberg, (NS, "events"), 1)
        wait_until(lambda: {r[0] for r in rows_of(iceberg, (NS, "totals"))} == {0, 1}, 60, "a scheduled refresh")

        catalog.stop()
        wait_until(lambda: conn.manager.paused, 30, "the manager to notice the outage")
        mark = len(events)
        time.sleep(OUTAGE_S)
        status = conn.service.status(TOTALS)
        assert status.paused and "catalog" in status.paused and "paused" in dashboard_html([status])
        assert status.consecutive_failures == 0
        during = events[mark:]
        assert not [e for e in during if e.kind is EventKind.REFRESH_FAILED]
        assert len(during) < 10, f"the manager spun during the outage: {[(e.kind, e.message) for e in during]}"

        catalog.start()
        append_batch(iceberg, (NS, "events"), 2)
        wait_until(
            lambda: {r[0] for r in rows_of(iceberg, (NS, "totals"))} == {0, 1, 2},
            120,
            "the table to catch up after the outage",
        )
        wait_until(lambda: not conn.manager.paused, 30, "the pause to end")
        after = conn.service.status(TOTALS)
        assert after.paused is None and after.consecutive_failures == 0 and after.state.value != "failed"
    finally:
        conn.close()
