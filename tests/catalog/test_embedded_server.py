"""The embedded server's life cycle: start, reuse, stop, restart with the data intact, the CLI, and failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from mt_magic.catalog.client import CatalogConfig, open_catalog, spark_catalog_conf
from mt_magic.catalog.embedded import (
    EmbeddedServer,
    answers,
    ensure_embedded_server,
    running_server,
    state_path,
    stop_embedded_server,
)
from mt_magic.catalog.errors import EmbeddedServerError


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mt_magic.catalog", *args], capture_output=True, text=True, timeout=60)


def config_of(server: EmbeddedServer) -> CatalogConfig:
    return CatalogConfig("restart", {"uri": server.uri, "token": server.token})


def test_running_server_is_reused_and_state_is_private(catalog_server: EmbeddedServer, catalog_home: Path) -> None:
    again = ensure_embedded_server(catalog_home)
    assert again == catalog_server
    assert state_path(catalog_home).stat().st_mode & 0o077 == 0  # the token is readable by the owner only
    assert json.loads(state_path(catalog_home).read_text())["pid"] == catalog_server.pid
    with pytest.raises(EmbeddedServerError, match="another token"):
        ensure_embedded_server(catalog_home, token="different")
    with pytest.raises(EmbeddedServerError, match="serves warehouse"):
        ensure_embedded_server(catalog_home, warehouse=catalog_home / "elsewhere")


@pytest.mark.spark
def test_catalog_survives_a_restart(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = ensure_embedded_server(tmp_path)
    assert first.token  # a random token by default
    catalog = open_catalog(config_of(first))
    catalog.create_namespace("keep")
    catalog.create_table(("keep", "t"), schema=pa.schema([("id", pa.int64())])).append(
        pa.table({"id": pa.array([1, 2], pa.int64())})
    )
    for key, value in spark_catalog_conf(config_of(first), spark_name="restart_a").items():
        spark.conf.set(key, value)
    spark.sql("INSERT INTO restart_a.keep.t VALUES (3)")

    assert stop_embedded_server(tmp_path) is True
    assert not answers(first) and running_server(tmp_path) is None and not state_path(tmp_path).exists()

    second = ensure_embedded_server(tmp_path)
    try:
        assert second.pid != first.pid and second.warehouse == first.warehouse
        reopened = open_catalog(config_of(second))
        assert sorted(reopened.load_table(("keep", "t")).scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
        for key, value in spark_catalog_conf(config_of(second), spark_name="restart_b").items():
            spark.conf.set(key, value)
        assert [r.id for r in spark.sql("SELECT id FROM restart_b.keep.t ORDER BY id").collect()] == [1, 2, 3]
    finally:
        stop_embedded_server(tmp_path)


def test_stale_state_file_is_replaced(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state_path(tmp_path).write_text(
        json.dumps(
            {
                "uri": "http://127.0.0.1:9",
                "port": 9,
                "pid": dead.pid,
                "warehouse": "file:///x",
                "database": "sqlite:///x",
                "token": None,
            }
        )
    )
    assert running_server(tmp_path) is None
    assert stop_embedded_server(tmp_path) is False and not state_path(tmp_path).exists()
    server = ensure_embedded_server(tmp_path, token="t")
    try:
        assert server.pid != dead.pid and answers(server)
    finally:
        assert stop_embedded_server(tmp_path) is True


def test_failed_start_reports_the_server_log(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedServerError, match=r"exited with code \d+ while starting(.|\n)*in-memory SQLite"):
        ensure_embedded_server(tmp_path, database="sqlite:///:memory:")
    assert not state_path(tmp_path).exists()


def test_cli_status_and_stop(tmp_path: Path) -> None:
    assert cli("status", "--home", str(tmp_path)).returncode == 1
    server = ensure_embedded_server(tmp_path, token="cli-secret")
    status = cli("status", "--home", str(tmp_path))
    assert status.returncode == 0 and server.uri in status.stdout
    assert "cli-secret" not in status.stdout and "****" in status.stdout
    assert "cli-secret" in cli("status", "--home", str(tmp_path), "--show-token").stdout
    stop = cli("stop", "--home", str(tmp_path))
    assert stop.stdout.strip() == "stopped" and not answers(server)
    assert cli("stop", "--home", str(tmp_path)).stdout.strip() == "not running"


def test_cli_serve_runs_in_the_foreground_and_stops_on_sigterm(tmp_path: Path) -> None:
    import signal

    import httpx

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mt_magic.catalog",
            "serve",
            "--port",
            "0",
            "--warehouse",
            str(tmp_path / "wh"),
            "--uri",
            f"sqlite:///{tmp_path / 'c.db'}",
            "--insecure-no-auth",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MT_MAGIC_CATALOG_TOKEN": ""},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split()[3]
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{url}/v1/config", timeout=10).status_code == 200  # no token configured: open
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
