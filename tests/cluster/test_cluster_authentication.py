"""The standalone cluster authenticates its clients (``spark.authenticate``) and shows its secret to nobody (issue 47).

Before: the master took any client. A second local user — who could not read the owner's ``server.json`` — ran a
PySpark driver against it (no settings at all) whose task, run by the worker's executor as the cluster's owner,
read that file, the catalog's token in it; and ``spark-submit --deploy-mode cluster`` had the worker start a driver
of their choosing, as the owner. Now each start makes a secret that the daemons read from a 0600 settings file, and a
driver without it, or with a wrong one, registers nothing; mt_magic's own drivers find it as they find the catalog's
token (``test_standalone_cluster``), and no command line holds it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cluster_ports import master_state
from security_probes import command_lines_holding, other_user, readable_by

from mt_magic.loopback import free_port
from mt_magic.runtime.spark.cluster import CONF_NAME, STATE_NAME, StandaloneCluster

INTRUDER = """
import sys
from pyspark.sql import SparkSession
builder = SparkSession.builder.master(sys.argv[1]).appName("intruder").config("spark.executor.memory", "512m")
if len(sys.argv) > 2:
    builder = builder.config("spark.authenticate", "true").config("spark.authenticate.secret", sys.argv[2])
spark = builder.getOrCreate()
print("ran as", spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("os").getuid()).collect())
"""
SASL_REFUSALS = {"no secret": "Expected SaslMessage", "a wrong secret": "DIGEST-MD5: digest response format violation"}
"""Why the master's connection refused each driver (Spark's SASL handshake, in the driver's log)."""
REFUSED = "Failed to connect to master"
"""What a driver's log says when the master refuses it (it tries three times, 20 s apart, then gives up)."""


def clean_env() -> dict[str, str]:
    """No MT_MAGIC_*, SPARK_*, PYSPARK_* settings: a client that knows nothing of the cluster but its URL."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "SPARK_", "PYSPARK", "PYICEBERG_"))}


def apps_and_drivers(cluster: StandaloneCluster) -> list[str]:
    """Every application and driver the master knows, running or ended."""
    state = master_state(cluster)
    apps = [a.get("name", "?") for key in ("activeapps", "completedapps") for a in state.get(key, [])]
    drivers = [d.get("id", "?") for key in ("activedrivers", "completeddrivers") for d in state.get(key, [])]
    return apps + drivers


def refused_driver(cmd: list[str], env: dict[str, str], log: Path, user: str | None = None) -> str:
    """Run a driver until its log says the master refused it (then end it: its retries take a minute), or it exits;
    returns its log."""
    prefix = ["runuser", "-u", user, "--"] if user else []
    with log.open("wb") as out:
        proc = subprocess.Popen([*prefix, *cmd], stdout=out, stderr=subprocess.STDOUT, env=env)
    pause = threading.Event()
    deadline = time.monotonic() + 120
    try:
        while proc.poll() is None and time.monotonic() < deadline and REFUSED not in log.read_text(errors="replace"):
            pause.wait(0.5)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    return log.read_text(errors="replace")


def test_the_secret_is_the_owners_and_on_no_command_line(cluster: StandaloneCluster) -> None:
    state = json.loads(cluster.state_file.read_text())
    secret = state["secret"]
    assert state["authenticate"] is True and len(secret) >= 32
    assert f"spark.authenticate.secret={secret}" in cluster.conf_file.read_text()
    assert stat.S_IMODE(cluster.state_dir.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in cluster.state_dir.iterdir() if p.is_file()}
    assert {CONF_NAME, STATE_NAME} <= set(modes) and set(modes.values()) == {0o600}, modes
    assert command_lines_holding(secret) == {}
    daemons = command_lines_holding(str(cluster.conf_file))  # the master's and the worker's: there to read
    assert len(daemons) == 2 and all("--properties-file" in line for line in daemons.values())


def test_a_second_user_reads_nothing_of_the_clusters_state(cluster: StandaloneCluster) -> None:
    user = other_user()
    files = [p for p in cluster.state_dir.rglob("*") if p.is_file()]
    assert cluster.conf_file in files and cluster.state_file in files
    assert readable_by(user, files) == []


@pytest.mark.parametrize("credentials", ["no secret", "a wrong secret"])
def test_a_driver_without_the_secret_registers_no_application(
    cluster: StandaloneCluster, tmp_path: Path, credentials: str
) -> None:
    cmd = [sys.executable, "-c", INTRUDER, cluster.master_url]
    if credentials == "a wrong secret":
        cmd.append("0" * 64)
    env = {**clean_env(), "SPARK_LOCAL_IP": "127.0.0.1"}
    before = apps_and_drivers(cluster)
    log = refused_driver(cmd, env, tmp_path / "intruder.log")
    assert REFUSED in log and SASL_REFUSALS[credentials] in log and "ran as" not in log, log[-3000:]
    assert apps_and_drivers(cluster) == before


def test_a_second_user_submits_no_driver(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """``spark-submit --deploy-mode cluster`` as another local user: before, the worker started the driver it named,
    as the cluster's owner."""
    user = other_user()
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    submit = spark_home / "bin" / "spark-submit"
    jar = next((spark_home / "jars").glob("hadoop-client-api-*.jar"))  # any jar with a main class will do
    reach = subprocess.run(["runuser", "-u", user, "--", "test", "-r", str(jar)], capture_output=True)
    if reach.returncode != 0 or not shutil.which("java"):
        pytest.skip(f"{user} cannot run this PySpark's spark-submit ({spark_home} or java out of reach)")
    folder = tmp_path / "other"
    folder.mkdir()
    folder.chmod(0o777)
    env = {**clean_env(), "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1", "HOME": str(folder)}
    before = apps_and_drivers(cluster)
    cmd = [str(submit), "--master", cluster.master_url, "--deploy-mode", "cluster"]
    cmd += ["--conf", "spark.standalone.submit.waitAppCompletion=false", "--class", "org.apache.hadoop.fs.FsShell"]
    run = subprocess.run(
        ["runuser", "-u", user, "--", *cmd, str(jar), "-ls", "/"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        cwd=folder,
    )
    assert run.returncode != 0 and "Expected SaslMessage" in run.stderr, run.stderr[-3000:]
    assert "successfully submitted" not in run.stderr
    assert apps_and_drivers(cluster) == before


def test_a_cluster_without_authentication_is_asked_for_by_name_and_says_so(tmp_path: Path) -> None:
    state = tmp_path / "insecure"
    base = [sys.executable, "-m", "mt_magic.runtime.spark.cluster"]
    ports = ["--port", str(free_port()), "--ui-port", str(free_port()), "--state", str(state)]
    started = subprocess.run(
        [*base, "start", "--workers", "0", "--insecure-no-auth", *ports], capture_output=True, text=True, timeout=180
    )
    try:
        assert started.returncode == 0, started.stderr
        assert "WARNING: no authentication (--insecure-no-auth)" in started.stderr
        assert "run their code on the workers as you" in started.stderr
        assert "read the master's and workers' web pages" in started.stderr  # they stay open, and it says so
        status = subprocess.run([*base, "status", "--state", str(state)], capture_output=True, text=True, timeout=60)
        assert "authentication: NONE (--insecure-no-auth)" in status.stdout, status.stdout + status.stderr
        assert "(open to everyone: --insecure-no-auth)" in status.stdout
        assert "spark.authenticate" not in (state / CONF_NAME).read_text()
    finally:
        subprocess.run([*base, "stop", "--state", str(state)], capture_output=True, timeout=120)
