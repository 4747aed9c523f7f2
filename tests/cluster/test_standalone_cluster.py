"""A real Spark standalone cluster (master + one worker on 127.0.0.1, from the installed PySpark): tables made
through mt_magic's own ``connect()`` with nothing changed but the master URL refresh on the worker's executor.

The driver runs in its own process (one SparkContext per process; the suite's shared session is local), with the
cluster's ``MT_MAGIC_HOME``: it finds the cluster's secret there, as a kernel does (the cluster authenticates its
clients, ``test_cluster_authentication``). The cluster (``conftest.py``) starts through
:func:`cluster_ports.start_cluster`, which checks that its ports answer with Spark's master; its first try is made
on a web UI port another HTTP server holds, as happened in ``make test`` (issue 51), and must be refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from cluster_ports import ClusterStart, NotSpark, master_state
from security_probes import command_lines_holding

from mt_magic.runtime.spark.cluster import StandaloneCluster

DRIVER = Path(__file__).with_name("cluster_driver.py")
REPO = Path(__file__).resolve().parents[2]
EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


class CommandLineWatch:
    """Reads every process's command line every 0.2 s while a block runs: which held ``secret``, and the executor
    command lines seen (so that a watch that saw none is known to have proved nothing)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.holding: dict[int, str] = {}
        self.executors: dict[int, str] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="cmdline-watch", daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(0.2):
            self.holding.update(command_lines_holding(self.secret))
            self.executors.update(command_lines_holding(EXECUTOR))

    def __enter__(self) -> CommandLineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def test_a_ui_port_another_server_took_is_refused_and_the_master_answers(started: ClusterStart) -> None:
    """The first start, on the port the test's other server holds, is refused. A later start may be refused too:
    on a busy machine a port can be taken again between ``free_port`` and Spark's bind (``make test`` saw it once),
    which is what the retries are for."""
    assert started.refused and started.refused[0][1] == NotSpark.port and "/json/" in NotSpark.asked
    assert NotSpark.port not in [ui for _, ui, _ in started.refused[1:]]
    state = master_state(started.cluster)
    assert state["url"] == started.cluster.master_url and state["status"] == "ALIVE"


def test_cluster_registers_its_worker(cluster: StandaloneCluster) -> None:
    assert len(cluster.alive_workers()) == 1
    assert len(cluster.pids()) == 2


def test_refresh_runs_on_the_workers_executor_and_no_command_line_shows_the_secret(
    cluster: StandaloneCluster, cluster_home: Path
) -> None:
    env = {
        **os.environ,
        "MT_MAGIC_HOME": str(cluster_home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    secret = json.loads(cluster.state_file.read_text())["secret"]
    with CommandLineWatch(secret) as watch:
        proc = subprocess.run(
            [sys.executable, str(DRIVER), cluster.master_url], capture_output=True, text=True, env=env, timeout=900
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])

    assert report["master"] == cluster.master_url
    assert report["ui_owner_only"] is True  # the driver's web UI refused others and let its owner in
    assert report["rows"] == [["ann", 2, 12.5], ["bob", 1, 5.5], ["cy", 1, 1.0]]
    worker_executors = {eid for eid, host in report["executors"].items() if eid != "driver"}
    assert worker_executors, report
    ran_on = set(report["refresh_tasks_by_executor"])
    assert ran_on and ran_on <= worker_executors, report
    # The driver, the master, the worker and the executor ran with the secret: none had it on its command line.
    assert watch.executors and all("-Dspark.authenticate=true" in line for line in watch.executors.values())
    assert watch.holding == {}
