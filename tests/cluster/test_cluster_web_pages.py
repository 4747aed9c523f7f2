"""The cluster's web pages are the owner's only (issue 47): the master's and the workers' UIs (a worker's shows its
executors' stdout and stderr) refuse a request without the token, a web page's cross-site POST and a second local
user; the owner gets in with the token, as the link ``start`` and ``status`` print does.

Before: ``spark.authenticate`` left them open; anyone who reached the ports read them (the suite's own readiness
check read the master's ``/json/`` without credentials). The driver's UI on the cluster is checked by
``cluster_driver.py`` (``test_standalone_cluster``).
"""

from __future__ import annotations

import subprocess
import sys

from security_probes import assert_owner_only, command_lines_holding

from mt_magic.runtime.spark.cluster import StandaloneCluster


def test_the_master_and_worker_pages_admit_their_owner_only(cluster: StandaloneCluster) -> None:
    token = cluster.ui_token
    assert token and len(token) >= 32 and f"param.token={token}" in cluster.conf_file.read_text()
    assert command_lines_holding(token) == {}
    assert_owner_only(cluster.ui_url, token, "/app/kill/")
    [worker] = cluster.master_state()["workers"]
    assert_owner_only(worker["webuiaddress"], token, "/logPage/")


def test_status_prints_the_owners_link(cluster: StandaloneCluster) -> None:
    state = ["--state", str(cluster.state_dir)]
    run = subprocess.run(
        [sys.executable, "-m", "mt_magic.runtime.spark.cluster", "status", *state],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"{cluster.ui_url}/?token={cluster.ui_token}" in run.stdout, run.stdout + run.stderr
    assert "web pages: the owner's only" in run.stdout
