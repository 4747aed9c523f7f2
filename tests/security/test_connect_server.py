"""The Spark Connect server authenticates its clients and shows no secret (issue 47), on the Connect line's server.

Before: ``make spark-connect-start`` ran any client's SQL without credentials (as its owner, with the catalog's
token: a client with a clean environment created a namespace) and had that token on its command line. Now it asks
for ``spark.connect.authenticate.token`` (from a 0600 settings file), which clients of the same ``MT_MAGIC_HOME`` find
in ``connect.json``; a client without it, or with a wrong one, is refused and changes nothing.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from security_probes import command_lines_holding

pytestmark = pytest.mark.spark

INTRUDER = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).create()
spark.sql("CREATE NAMESPACE mt.intruder").collect()
"""


@pytest.fixture
def connect_state() -> Path:
    if os.environ.get("MT_TEST_SPARK_CONNECT") != "1":
        pytest.skip("needs the run's Spark Connect server: the Connect line (make test-connect) runs this")
    return Path(os.environ["MT_MAGIC_HOME"]) / "spark-connect"


def clean_env() -> dict[str, str]:
    """A client with no credentials at all: no MT_MAGIC_*, no SPARK_CONNECT_*, no PySpark settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "SPARK_", "PYICEBERG_", "PYSPARK"))}


def test_no_token_is_on_a_command_line_and_the_settings_are_the_owners(connect_state: Path) -> None:
    home = connect_state.parent
    connect_token = json.loads((connect_state / "connect.json").read_text())["token"]
    catalog_tokens = [json.loads(p.read_text())["token"] for p in (home / "server.json", *home.glob("*/server.json"))]
    settings = (connect_state / "spark-connect.conf").read_text()
    assert all(token and token in settings for token in [connect_token, *catalog_tokens])  # the secrets are real
    assert "spark.ui.enabled=false" in settings.splitlines()  # no web UI: nothing there to guard (ui_auth if on)
    for token in [connect_token, *catalog_tokens]:
        assert command_lines_holding(token) == {}
    assert command_lines_holding(str(connect_state / "spark-connect.conf"))  # the server's line is there to read
    assert stat.S_IMODE(connect_state.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in connect_state.iterdir() if p.is_file()}
    assert modes and set(modes.values()) == {0o600}, modes


@pytest.mark.parametrize("credentials", ["none", "wrong token"])
def test_a_client_without_the_token_is_refused_and_changes_nothing(
    connect_state: Path, request: pytest.FixtureRequest, credentials: str
) -> None:
    port = json.loads((connect_state / "connect.json").read_text())["port"]
    url = f"sc://127.0.0.1:{port}" if credentials == "none" else f"sc://localhost:{port}/;token=wrong"
    intruder = subprocess.run(
        [sys.executable, "-c", INTRUDER, url], capture_output=True, text=True, env=clean_env(), timeout=300
    )
    assert intruder.returncode != 0 and "UNAUTHENTICATED" in intruder.stderr, intruder.stderr[-2000:]
    spark = request.getfixturevalue("spark")  # after the skip: a session-scoped fixture would be set up first
    assert "intruder" not in {row[0] for row in spark.sql("SHOW NAMESPACES IN mt").collect()}


def test_a_client_of_the_same_home_finds_the_token(connect_state: Path) -> None:
    probe = "from mt_magic.runtime.spark.connect import remote_session; import sys\n"
    probe += "print(remote_session(sys.argv[1]).sql('SELECT 40 + 2').collect()[0][0])"
    env = {**clean_env(), "MT_MAGIC_HOME": str(connect_state.parent)}
    url = json.loads((connect_state / "connect.json").read_text())["url"]
    client = subprocess.run([sys.executable, "-c", probe, url], capture_output=True, text=True, env=env, timeout=300)
    assert client.stdout.strip() == "42", client.stderr[-2000:]
