"""Everything mt_magic writes under ``MT_MAGIC_HOME`` is its owner's only (issue 47).

The embedded catalog is started the README's way in a home inside a 0755 folder, under the usual umask (022), and
a table is written with pyiceberg. Before: the home was 0755 and every file in it 0644 (``catalog.db``,
``server.log``, the warehouse's metadata and data): any local user read them. Now the home and every folder in it are
0700, every file mt_magic or its server writes 0600, and a second local user reads none of them.

The clients' own writes too: a table's data files, manifests and manifest lists written by Spark (through Hadoop's
local file system, which sets each file's mode from its ``fs.permissions.umask-mode``) and by pyiceberg (an
in-process refresh; the process's umask). Before: after a Spark refresh and an in-process one, 21 files (parquet,
avro, their ``.crc``) were 0644 and 3 folders 0755. Now none.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from security_probes import catalog_cli, other_user, readable_by

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import EmbeddedServer, ensure_embedded_server, mt_home, stop_embedded_server

DRIVER = Path(__file__).with_name("owner_only_driver.py")
REPO = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def home_with_a_table(open_parent: Path, usual_umask: None) -> Iterator[tuple[Path, EmbeddedServer]]:
    home = open_parent / "mthome"
    server = ensure_embedded_server(home)
    try:
        catalog = open_catalog(
            CatalogConfig("mt", {"uri": server.uri, "token": server.token, "warehouse": server.warehouse})
        )
        namespace = f"ns_{uuid.uuid4().hex[:6]}"
        catalog.create_namespace(namespace)
        table = catalog.create_table(f"{namespace}.secrets", pa.schema([("card", pa.string())]))
        table.append(pa.table({"card": ["4111 1111 1111 1111"]}))
        yield home, server
    finally:
        stop_embedded_server(home)


def test_every_folder_is_0700_and_every_file_the_server_writes_0600(
    home_with_a_table: tuple[Path, EmbeddedServer],
) -> None:
    home, _ = home_with_a_table
    folders = [home, *(p for p in home.rglob("*") if p.is_dir())]
    files = [p for p in home.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"catalog.db", "catalog.db-wal", "catalog.db-shm", "server.json", "server.log", "server.lock"} <= names
    assert any(p.name.endswith(".metadata.json") for p in files) and any(p.suffix == ".parquet" for p in files)
    # The client's own writes too (pyiceberg's data folder, data files and manifests, made by this process).
    assert {p.name for p in folders} >= {"data"} and {p.suffix for p in files} >= {".parquet", ".avro"}
    assert mode(home) == 0o700
    assert {str(p): oct(mode(p)) for p in folders if mode(p) != 0o700} == {}
    assert {str(p): oct(mode(p)) for p in files if mode(p) != 0o600} == {}


def test_a_second_user_reads_no_file_under_the_home(home_with_a_table: tuple[Path, EmbeddedServer]) -> None:
    user = other_user()
    home, _ = home_with_a_table
    files = [p for p in home.rglob("*") if p.is_file()]
    control = home.parent / "readable-by-all.txt"
    control.write_text("a file anyone may read")
    control.chmod(0o644)
    assert readable_by(user, [control]) == [str(control)]  # the probe can succeed: the home's modes decide
    assert readable_by(user, files) == []


def test_a_home_others_can_read_is_tightened_with_a_warning(
    open_parent: Path, usual_umask: None, capsys: pytest.CaptureFixture[str]
) -> None:
    home = open_parent / "old_home"
    home.mkdir()
    home.chmod(0o755)
    (home / "catalog.db").write_text("rows")
    assert mt_home(home) == home
    assert mode(home) == 0o700
    warning = f"mt_magic: {home} was readable by other users (mode 755); now 0700 (owner only)\n"
    assert capsys.readouterr().err == warning
    mt_home(home)
    assert capsys.readouterr().err == ""  # said once: the home stays tightened


def test_a_fresh_home_and_its_parents_are_made_0700(open_parent: Path, usual_umask: None) -> None:
    home = open_parent / "a" / "b" / "home"
    mt_home(home)
    assert [mode(p) for p in (open_parent / "a", open_parent / "a" / "b", home)] == [0o700] * 3


def test_status_of_a_server_without_authentication_says_so(open_parent: Path) -> None:
    home = open_parent / "noauth"
    ensure_embedded_server(home, token="")
    try:
        status = catalog_cli("status", "--home", str(home))
    finally:
        stop_embedded_server(home)
    assert status.returncode == 0, status.stderr
    assert "token: NONE: no authentication (--insecure-no-auth)" in status.stdout
    assert "no authentication" in (home / "server.log").read_text()


@pytest.mark.spark
@pytest.mark.kernel  # a process of its own with its own Spark, as a runner is: the waiting tier runs it
def test_no_file_a_spark_refresh_and_an_in_process_refresh_write_is_open_to_others(open_parent: Path) -> None:
    home = open_parent / "notebook_home"
    env = {
        **os.environ,
        "MT_MAGIC_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    for name in [k for k in env if k.startswith(("PYICEBERG_", "MT_MAGIC_SPARK_"))]:
        del env[name]  # the embedded catalog of this home, a local Spark
    run = subprocess.run(
        [sys.executable, str(DRIVER)], capture_output=True, text=True, env=env, timeout=900, umask=0o022
    )
    assert run.returncode == 0, run.stderr[-3000:]
    strategies = json.loads(run.stdout.strip().splitlines()[-1])
    assert strategies["first"] == "full recompute" and strategies["second"].endswith(
        "in process (DuckDB), no Spark job"
    )
    entries = [home, *home.rglob("*")]
    written = {p.suffix for p in entries if p.is_file()}
    assert {".parquet", ".avro", ".crc", ".json", ".db"} <= written, written  # Spark's, pyiceberg's and the server's
    open_to_others = {str(p.relative_to(home)): oct(mode(p)) for p in entries if mode(p) & 0o077 and not p.is_symlink()}
    assert open_to_others == {}
