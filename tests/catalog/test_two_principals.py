"""Two clients of two principals on one catalog, in two processes at once (issue 48): each commits to its own
namespace's table, is refused (403) on the other's and changes nothing there; the audit lists every change with
the principal who made it.

The server is the embedded one in a home of its own; ana may write ``team_a`` and read ``team_b``, bob the reverse.
Each process is a client as a kernel or pipeline is one: pyiceberg's REST catalog opened by mt_magic with its own
token, appending rows (a commit: data files, a manifest, a new snapshot).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from mt_magic.catalog.access import AccessClient, audit_lines
from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import ensure_embedded_server, stop_embedded_server

pytestmark = pytest.mark.slow  # ~30 s: ten command-line calls set up the principals, roles and grants

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("who", pa.string())])
CLIENT = """
import json, sys
import pyarrow as pa
import pytest
from pyiceberg.exceptions import ForbiddenError
from mt_magic.catalog.client import CatalogConfig, open_catalog
uri, token, name, tables = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
catalog = open_catalog(CatalogConfig("mt", {"uri": uri, "token": token}))
done = {}
for table_name in tables:
    table = catalog.load_table(table_name)
    rows = pa.table({"id": [1, 2], "who": [name, name]}, schema=table.schema().as_arrow())
    try:
        table.append(rows)
        done[table_name] = "committed"
    except ForbiddenError as exc:
        done[table_name] = f"refused: {exc}"
print(json.dumps(done))
"""


def cli(home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "PYICEBERG_"))}
    run = subprocess.run(
        [sys.executable, "-m", "mt_magic.catalog", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_two_principals_commit_only_where_they_may_and_the_audit_names_each(tmp_path: Path) -> None:
    home = tmp_path / "team_home"
    server = ensure_embedded_server(home)
    try:
        admin = open_catalog(CatalogConfig("mt", {"uri": server.uri, "token": server.token}))
        for ns in ("team_a", "team_b"):
            admin.create_namespace(ns)
            admin.create_table(f"{ns}.events", SCHEMA)
        tokens = {}
        for name, own, other in (("ana", "team_a", "team_b"), ("bob", "team_b", "team_a")):
            tokens[name] = cli(home, "principals", "create", name).strip().splitlines()[-1]
            cli(home, "roles", "create", f"{name}_role")
            cli(home, "roles", "add", f"{name}_role", name)
            cli(home, "grants", "add", f"{name}_role", "write", "--namespace", own)
            cli(home, "grants", "add", f"{name}_role", "read-data", "--namespace", other)
        before = {ns: admin.load_table(f"{ns}.events").metadata_location for ns in ("team_a", "team_b")}

        both = ["team_a.events", "team_b.events"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_")}
        clients = {
            name: subprocess.Popen(
                [sys.executable, "-c", CLIENT, server.uri, tokens[name], name, *both],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for name in ("ana", "bob")
        }
        results = {}
        for name, proc in clients.items():
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-3000:]
            results[name] = json.loads(out.strip().splitlines()[-1])

        assert results["ana"]["team_a.events"] == "committed" and results["bob"]["team_b.events"] == "committed"
        assert (
            results["ana"]["team_b.events"].startswith("refused: ") and "lacks write" in results["ana"]["team_b.events"]
        )
        assert (
            results["bob"]["team_a.events"].startswith("refused: ") and "lacks write" in results["bob"]["team_a.events"]
        )
        for ns, writer in (("team_a", "ana"), ("team_b", "bob")):
            table = admin.load_table(f"{ns}.events")
            assert table.metadata_location != before[ns]
            assert set(table.scan().to_arrow().column("who").to_pylist()) == {writer}  # the other's rows never landed

        entries = AccessClient(admin).audit(limit=500)
        commits = {(e["principal"], ".".join(e["object"]["name"])) for e in entries if e["action"] == "commit"}
        assert commits == {("ana", "team_a.events"), ("bob", "team_b.events")}, audit_lines(entries)
        made = {(e["principal"], e["action"]) for e in entries}
        assert {("admin", "create-namespace"), ("admin", "create"), ("admin", "principal-create")} <= made
        assert {("admin", "grant"), ("admin", "role-assign")} <= made
        print("\n".join(audit_lines(entries)))  # the excerpt the issue asks to show (pytest -s)
    finally:
        stop_embedded_server(home)
