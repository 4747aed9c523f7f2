"""A real Spark standalone cluster (master + one worker on 127.0.0.1, from the installed PySpark): tables made
through mt_magic's own ``connect()`` with nothing changed but the master URL refresh on the worker's executor.

The driver runs in its own process (one SparkContext per process; the suite's shared session is local). The
cluster starts through :func:`cluster_ports.start_cluster`, which checks that its ports answer with Spark's master;
its first try is made on a web UI port another HTTP server holds, as happened in ``make test`` (issue 51), and must
be refused."""

from __future__ import annotations

import http.server
import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_ports import ClusterStart, free_ports, master_state, start_cluster

from mt_magic.loopback import HOST, free_port
from mt_magic.runtime.spark.cluster import StandaloneCluster

DRIVER = Path(__file__).with_name("cluster_driver.py")
REPO = Path(__file__).resolve().parents[2]


class _NotSpark(http.server.BaseHTTPRequestHandler):
    """Another server of the suite: an HTML page on every path (JupyterLab's, a catalog's)."""

    asked: list[str] = []
    port = 0

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).asked.append(self.path)
        body = b"<html><body>not Spark</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterStart]:
    decoy = http.server.ThreadingHTTPServer((HOST, 0), _NotSpark)
    serving = threading.Thread(target=decoy.serve_forever, name="not-spark", daemon=True)
    serving.start()
    try:
        _NotSpark.port = decoy.server_address[1]
        taken = (free_port(), _NotSpark.port)  # the race: the UI port is another server's by now
        start = start_cluster(tmp_path_factory.mktemp("cluster"), itertools.chain([taken], free_ports()))
    finally:
        decoy.shutdown()
        decoy.server_close()
    yield start
    start.cluster.stop()


@pytest.fixture(scope="module")
def cluster(started: ClusterStart) -> StandaloneCluster:
    return started.cluster


def test_a_ui_port_another_server_took_is_refused_and_the_master_answers(started: ClusterStart) -> None:
    assert [ui for _, ui, _ in started.refused] == [_NotSpark.port] and "/json/" in _NotSpark.asked
    state = master_state(started.cluster.settings.ui_port)
    assert state["url"] == started.cluster.master_url and state["status"] == "ALIVE"


def test_cluster_registers_its_worker(cluster: StandaloneCluster) -> None:
    assert len(cluster.alive_workers()) == 1
    assert len(cluster.pids()) == 2


def test_refresh_runs_on_the_workers_executor(cluster: StandaloneCluster, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MT_MAGIC_HOME": str(tmp_path / "home"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, str(DRIVER), cluster.master_url], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])

    assert report["master"] == cluster.master_url
    assert report["rows"] == [["ann", 2, 12.5], ["bob", 1, 5.5], ["cy", 1, 1.0]]
    worker_executors = {eid for eid, host in report["executors"].items() if eid != "driver"}
    assert worker_executors, report
    ran_on = set(report["refresh_tasks_by_executor"])
    assert ran_on and ran_on <= worker_executors, report
