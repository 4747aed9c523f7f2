"""No secret on a command line, nor through a proxy (issue 47).

Any local user reads every process's command line (``ps``, ``/proc/*/cmdline``). Before: ``serve --token T`` was the
only way to give a hand-started server its token besides the environment, silently; the Spark Connect server got the
catalog's token as ``--conf spark.sql.catalog.mt.token=…`` (and so did a kernel's own Spark JVM, PySpark handing a new
session's settings to spark-submit); a request to 127.0.0.1 went through ``HTTP_PROXY`` with its token. Now the
tokens travel in the environment or 0600 files, and loopback requests go direct (the catalog's, and Airflow's health
check and API client, which send its password and token).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from security_probes import assert_owner_only, command_lines_holding, other_user, url_of

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server
from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings
from mt_magic.scheduling.local_airflow import api_server_healthy


class RecordingProxy:
    """A "proxy" on loopback that records each request it is sent and answers 502."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.requests.append(conn.recv(65536).split(b"\r\n", 1)[0].decode(errors="replace"))
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def close(self) -> None:
        self.sock.close()
        self.thread.join(timeout=10)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingProxy]:
    recorder = RecordingProxy()
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, recorder.url)
    yield recorder
    recorder.close()


def test_the_loopback_catalog_is_reached_directly_whatever_the_proxy(proxy: RecordingProxy, tmp_path: Path) -> None:
    server = ensure_embedded_server(tmp_path / "home")
    try:
        # The environment's proxy is in force for requests in general: this one goes to it (and gets its 502).
        assert requests.get(f"{server.uri}/v1/config").status_code == 502
        assert proxy.requests == [f"GET {server.uri}/v1/config HTTP/1.1"]
        catalog = open_catalog(CatalogConfig("mt", {"uri": server.uri, "token": server.token}))
        catalog.create_namespace("direct")
        assert ("direct",) in catalog.list_namespaces()
    finally:
        stop_embedded_server(tmp_path / "home")
    assert len(proxy.requests) == 1  # none of the catalog's requests, and so none of its tokens, went to the proxy


def test_a_token_file_keeps_the_token_out_of_ps_and_token_on_the_command_line_warns(tmp_path: Path) -> None:
    token = secrets.token_hex(16)
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    log = tmp_path / "serve.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "PYICEBERG_"))}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mt_magic.catalog", "serve", "--port", "0", "--token-file", str(token_file)]
            + ["--warehouse", str(tmp_path / "wh")],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean,
        )
    try:
        url = url_of(proc, log)
        assert command_lines_holding(token) == {}
        assert requests.get(f"{url}/v1/namespaces").status_code == 401
        assert requests.get(f"{url}/v1/namespaces", headers={"Authorization": f"Bearer {token}"}).ok
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    warned = subprocess.run(
        [sys.executable, "-m", "mt_magic.catalog", "serve", "--token", "x", "--token-file", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=clean,
    )
    assert "warning: --token puts the token on the command line, where every local user reads it (ps)" in warned.stderr


def test_the_embedded_servers_token_and_database_are_not_on_its_command_line(tmp_path: Path) -> None:
    server = ensure_embedded_server(tmp_path / "home")
    try:
        assert server.token and command_lines_holding(server.token) == {}
        assert command_lines_holding(server.database) == {}
        assert command_lines_holding(f"--state-file {tmp_path / 'home' / 'server.json'}")  # the probe sees it
    finally:
        stop_embedded_server(tmp_path / "home")


LOCAL_SESSION = """
import sys
from mt_magic.runtime.spark.session import SparkSettings, get_or_create_session
from mt_magic.runtime.spark.ui_auth import TOKEN_CONF
conf = {"spark.sql.catalog.probe": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.probe.type": "rest",
        "spark.sql.catalog.probe.uri": "http://127.0.0.1:9", "spark.sql.catalog.probe.token": sys.argv[1][::-1]}
spark = get_or_create_session(SparkSettings(master="local[1]", driver_memory="512m", ui=True), conf)
assert spark.conf.get("spark.sql.catalog.probe.token") == sys.argv[1][::-1]
spark_conf = spark.sparkContext.getConf()
rpc = f"{spark_conf.get('spark.driver.host')}:{spark_conf.get('spark.driver.port')}"
secret = spark_conf.get("spark.authenticate.secret")
print("ready", spark.sparkContext.uiWebUrl, spark_conf.get(TOKEN_CONF), rpc, secret, flush=True)
sys.stdin.read()
"""


@dataclass(frozen=True)
class LocalSession:
    """A kernel's new local session with its web UI on, in a process of its own (the module's one JVM)."""

    catalog_token: str
    ui_url: str
    ui_token: str
    rpc: str
    """The driver's RPC address (host:port)."""
    secret: str
    """Its ``spark.authenticate.secret``."""


@pytest.fixture(scope="module")
def local_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSession]:
    token = secrets.token_hex(16)  # the probe's own command line holds it reversed, never as it is
    home = tmp_path_factory.mktemp("local-session") / "home"
    proc = subprocess.Popen(
        [sys.executable, "-c", LOCAL_SESSION, token],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MT_MAGIC_HOME": str(home)},
    )
    try:
        assert proc.stdout is not None
        ready, ui_url, ui_token, rpc, secret = proc.stdout.readline().split()
        assert ready == "ready"
        yield LocalSession(token[::-1], ui_url, ui_token, rpc, secret)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=120)


@pytest.mark.spark
def test_a_new_local_sessions_jvm_has_no_catalog_token_on_its_command_line(local_session: LocalSession) -> None:
    jvms = command_lines_holding("org.apache.spark.deploy.SparkSubmit").values()
    assert [line for line in jvms if "java" in line]  # the session's JVM is there to be read
    assert command_lines_holding(local_session.catalog_token) == {}
    assert command_lines_holding(local_session.ui_token) == {}
    assert len(local_session.secret) == 64 and command_lines_holding(local_session.secret) == {}


@pytest.mark.spark
def test_a_local_sessions_web_ui_admits_its_owner_only(local_session: LocalSession) -> None:
    """Before: the driver's UI (4040) answered anyone, its kill links included (``spark.ui.killEnabled``)."""
    assert len(local_session.ui_token) == 64
    assert_owner_only(local_session.ui_url, local_session.ui_token, "/jobs/job/kill/")


class FakeAirflow(BaseHTTPRequestHandler):
    """Airflow 3's API server as far as the health check, a login and /api/v2/version go."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._answer(
            {"/api/v2/monitor/health": {"metadatabase": {"status": "healthy"}}, "/api/v2/version": {"version": "3"}}
        )

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer({"/auth/token": {"access_token": "airflow-jwt"}})

    def _answer(self, bodies: dict[str, object]) -> None:
        body = json.dumps(bodies.get(self.path, {})).encode()
        self.send_response(200 if self.path in bodies else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_loopback_airflow_is_checked_and_logged_into_directly_whatever_the_proxy(proxy: RecordingProxy) -> None:
    """Before: the start's health check and the client (its user's password, then its token) went to HTTP_PROXY."""
    airflow = ThreadingHTTPServer(("127.0.0.1", 0), FakeAirflow)
    threading.Thread(target=airflow.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{airflow.server_address[1]}"
    try:
        assert api_server_healthy(url)
        client = AirflowClient(AirflowSettings(url=url, username="admin", password="pw"))
        assert client.version() == "3"
        client.close()
    finally:
        airflow.shutdown()
        airflow.server_close()
    assert proxy.requests == []


@pytest.mark.spark
def test_a_second_user_reaches_no_endpoint_of_a_local_driver(local_session: LocalSession) -> None:
    """Before: a local driver's RPC server (it listens whatever the master) took anyone's connection: an executor
    started as another user against it was answered ("Cannot find endpoint"), so any endpoint was theirs to ask. Now
    the driver asks for its fresh ``spark.authenticate`` secret and refuses the handshake."""
    user = other_user()
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK", "MT_MAGIC_"))}
    intruder = [str(spark_home / "bin" / "spark-class"), "org.apache.spark.executor.CoarseGrainedExecutorBackend"]
    intruder += ["--driver-url", f"spark://CoarseGrainedScheduler@{local_session.rpc}", "--executor-id", "99"]
    intruder += ["--hostname", "127.0.0.1", "--cores", "1", "--app-id", "intruder"]
    run = subprocess.run(
        ["runuser", "-u", user, "--", *intruder],
        capture_output=True,
        text=True,
        timeout=180,
        env={**env, "SPARK_HOME": str(spark_home)},
        cwd="/tmp",
    )
    log = run.stdout + run.stderr
    assert run.returncode != 0 and "Expected SaslMessage" in log, log[-3000:]
    assert "Cannot find endpoint" not in log
