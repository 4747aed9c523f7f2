"""Spark's web pages without a Java compiler (issue 47): mt_magic does not open a page it cannot guard.

The filter that keeps a web UI to its owner (:mod:`mt_magic.runtime.spark.ui_auth`) is compiled on first use. Without
``javac`` a driver's UI is turned off with a warning that says what and how to fix it, and a standalone cluster (whose
master and workers always serve pages) refuses to start. The pages themselves are tried in
``test_no_secret_in_argv`` (a local session's UI) and ``tests/cluster/test_cluster_web_pages.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mt_magic.errors import RuntimeSetupError
from mt_magic.runtime.spark import ui_auth
from mt_magic.runtime.spark.cluster import ClusterSettings, StandaloneCluster


@pytest.fixture
def no_javac(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No compiler on PATH or in JAVA_HOME, and an MT_MAGIC_HOME without a compiled filter."""
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("MT_MAGIC_HOME", str(tmp_path / "home"))
    return tmp_path


def test_without_javac_a_drivers_ui_is_turned_off_with_a_fix(
    no_javac: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ui_auth.guarded_driver_conf({ui_auth.UI_CONF: "true"}) == ({ui_auth.UI_CONF: "false"}, None)
    warned = capsys.readouterr().err
    assert "Spark's web UI is turned off: javac (a Java compiler) is not installed" in warned
    assert "Fix: install a JDK" in warned
    assert ui_auth.guarded_driver_conf({ui_auth.UI_CONF: "false"}) == ({}, None)  # no UI asked for: nothing to say


def test_without_javac_a_cluster_does_not_start(no_javac: Path) -> None:
    cluster = StandaloneCluster(ClusterSettings(workers=1, state_dir=no_javac / "cluster"))
    with pytest.raises(RuntimeSetupError, match="javac") as refused:
        cluster.start(timeout=5)
    assert "Fix: install a JDK" in str(refused.value)
    assert cluster.pids() == [] and not cluster.pid_file.exists()


@pytest.mark.spark  # no JVM: the settings need the cached Iceberg runtime for the installed Spark
def test_a_connect_servers_web_ui_is_off_or_its_owners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Connect server's UI is off, as every session mt_magic builds; asked for, it gets the filter and a token
    in the server's 0600 settings file, never on its command line (``ConnectServer.command``)."""
    from mt_magic.runtime.spark.connect_server import ConnectServer, ConnectServerSettings, server_conf

    monkeypatch.setenv("MT_MAGIC_HOME", str(tmp_path / "home"))
    off = server_conf(ConnectServerSettings(state_dir=tmp_path / "off"))
    assert off[ui_auth.UI_CONF] == "false" and ui_auth.FILTERS_CONF not in off
    server = ConnectServer(ConnectServerSettings(state_dir=tmp_path / "on", extra={ui_auth.UI_CONF: "true"}))
    server.write_conf()
    token = server.ui_token()
    assert token is not None and len(token) == 64
    assert f"{ui_auth.FILTERS_CONF}={ui_auth.FILTER_CLASS}" in server.conf_file.read_text()
    assert server.conf_file.stat().st_mode & 0o077 == 0
    try:
        command = server.command()
    except RuntimeSetupError:  # PySpark 3.5's wheel ships no Connect server: no command to read
        return
    assert not any(token in arg for arg in command)
