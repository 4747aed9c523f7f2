"""A real Spark standalone cluster (master + one worker on 127.0.0.1, from the installed PySpark): tables made
through mt_magic's own ``connect()`` with nothing changed but the master URL refresh on the worker's executor.

The driver runs in its own process (one SparkContext per process; the suite's shared session is local)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mt_magic.loopback import free_port
from mt_magic.runtime.spark.cluster import ClusterSettings, StandaloneCluster

DRIVER = Path(__file__).with_name("cluster_driver.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    settings = ClusterSettings(
        workers=1,
        worker_cores=1,
        worker_memory="1g",
        port=free_port(),
        ui_port=free_port(),
        state_dir=tmp_path_factory.mktemp("cluster"),
    )
    standalone = StandaloneCluster(settings)
    standalone.start()
    yield standalone
    standalone.stop()


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
