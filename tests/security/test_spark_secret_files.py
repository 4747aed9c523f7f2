"""How a driver gets the standalone cluster's secret without a command line (issue 47): the parts that need no JVM.

The cluster's daemons and a driver read ``spark.authenticate.secret`` from a 0600 properties file. A driver finds the
cluster's secret only for the cluster this user runs on that loopback port (``cluster.json`` in
``$MT_MAGIC_HOME/spark-cluster``, its processes alive and naming its settings file), and its ``spark-submit`` reads
it from a file that keeps the user's own ``spark-defaults.conf`` first and is gone once the JVM started. The real
cluster's refusals are in ``tests/cluster/test_cluster_authentication.py``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mt_magic.runtime.spark.cluster import CONF_NAME, STATE_NAME, driver_conf
from mt_magic.runtime.spark.properties import SUBMIT_ARGS_ENV, driver_launch_properties


@pytest.fixture
def running_cluster(tmp_path: Path) -> Iterator[Path]:
    """A cluster's state as ``start`` leaves it, its "daemon" a process whose command line names the settings."""
    state = tmp_path / "home" / "spark-cluster"
    state.mkdir(parents=True, mode=0o700)
    conf = state / CONF_NAME
    conf.write_text("spark.authenticate=true\n")
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "--properties-file", str(conf)])
    (state / "pids").write_text(f"{daemon.pid}\n")
    cmdline = Path(f"/proc/{daemon.pid}/cmdline")
    pause = threading.Event()
    for _ in range(100):  # a just-started process's command line reads empty for a moment
        if not cmdline.exists() or cmdline.read_bytes():
            break
        pause.wait(0.05)
    (state / STATE_NAME).write_text(json.dumps({"port": 7177, "ui_port": 8181, "authenticate": True, "secret": "s3"}))
    yield state
    daemon.kill()
    daemon.wait()


def test_a_driver_gets_the_secret_of_this_users_cluster_on_that_port_only(running_cluster: Path) -> None:
    found = {"spark.authenticate": "true", "spark.authenticate.secret": "s3"}
    assert driver_conf("spark://127.0.0.1:7177", running_cluster) == found
    assert driver_conf("spark://localhost:7177", running_cluster) == found
    assert driver_conf("spark://127.0.0.1:7178", running_cluster) == {}  # another port: another cluster
    assert driver_conf("spark://10.0.0.8:7177", running_cluster) == {}  # another machine
    assert driver_conf("local[2]", running_cluster) == {}
    (running_cluster / "pids").write_text("1\n")  # a pid that is not this cluster's daemon
    assert driver_conf("spark://127.0.0.1:7177", running_cluster) == {}


def test_a_cluster_started_without_authentication_gives_no_secret(running_cluster: Path) -> None:
    (running_cluster / STATE_NAME).write_text(json.dumps({"port": 7177, "ui_port": 8181, "authenticate": False}))
    assert driver_conf("spark://127.0.0.1:7177", running_cluster) == {}


def test_the_drivers_properties_file_is_private_keeps_the_users_defaults_and_is_gone_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.eventLog.enabled true\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    monkeypatch.setenv(SUBMIT_ARGS_ENV, "--packages a:b:1 pyspark-shell")
    folder = tmp_path / "home"
    with driver_launch_properties({"spark.authenticate.secret": "s3\\cr"}, folder):
        args = os.environ[SUBMIT_ARGS_ENV].split()
        assert args[0] == "--properties-file" and args[2:] == ["--packages", "a:b:1", "pyspark-shell"]
        path = Path(args[1])
        assert path.parent == folder and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text() == "spark.eventLog.enabled true\nspark.authenticate.secret=s3\\\\cr\n"
    assert os.environ[SUBMIT_ARGS_ENV] == "--packages a:b:1 pyspark-shell"
    assert not path.exists()


def test_a_properties_file_the_user_named_is_kept_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "mine.conf"
    own.write_text("spark.executor.memory 2g\n")
    monkeypatch.setenv(SUBMIT_ARGS_ENV, f"--properties-file {own}")
    with driver_launch_properties({"spark.authenticate": "true"}, tmp_path / "home"):
        args = os.environ[SUBMIT_ARGS_ENV].split()
        assert args[2:] == ["pyspark-shell"]
        assert Path(args[1]).read_text() == "spark.executor.memory 2g\nspark.authenticate=true\n"
    assert os.environ[SUBMIT_ARGS_ENV] == f"--properties-file {own}"


def test_nothing_changes_for_a_master_that_needs_no_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(SUBMIT_ARGS_ENV, raising=False)
    with driver_launch_properties({}, tmp_path):
        assert SUBMIT_ARGS_ENV not in os.environ
    assert list(tmp_path.iterdir()) == []
