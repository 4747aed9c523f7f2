"""A throw-away PostgreSQL cluster for tests and benchmarks (imported by name).

Uses the binaries of Debian's ``postgresql`` package (``scripts/setup.sh --test`` installs it): ``initdb``
in a fresh temporary directory, ``pg_ctl start`` on a free loopback port, trust authentication, and
``pg_ctl stop`` plus removal at the end. PostgreSQL refuses to run as root, so as root the cluster runs as
the package's ``postgres`` system user (``runuser``), which owns the temporary directory.
"""

from __future__ import annotations

import getpass
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mt_magic.loopback import free_port

UNPRIVILEGED_USER = "postgres"


def binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest Debian version first), ``None`` if absent."""
    found = shutil.which("pg_ctl")
    if found and Path(found).with_name("initdb").exists():
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: -int(p.parts[-3]))
    return candidates[0].parent if candidates else None


def missing_reason() -> str | None:
    """Why a cluster cannot be started here, ``None`` if it can."""
    if binaries() is None:
        return "PostgreSQL binaries not found (install Debian's postgresql package: scripts/setup.sh --test)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(UNPRIVILEGED_USER)
        except KeyError:
            return f"running as root and there is no {UNPRIVILEGED_USER!r} user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root without runuser to drop privileges for PostgreSQL"
    return None


def _run(*cmd: str) -> None:
    prefix = ["runuser", "-u", UNPRIVILEGED_USER, "--"] if os.geteuid() == 0 else []
    result = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=120, cwd="/")
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a cluster; yields the SQLAlchemy URL of its ``postgres`` database (superuser, no password)."""
    bindir = binaries()
    assert bindir is not None, missing_reason()
    root = Path(tempfile.mkdtemp(prefix="mt_pg_"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    user = UNPRIVILEGED_USER if os.geteuid() == 0 else getpass.getuser()
    data = root / "data"
    try:
        _run(str(bindir / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync")
        port = _start(bindir, data, root)
        try:
            yield f"postgresql+psycopg2://{user}@127.0.0.1:{port}/postgres"
        finally:
            _run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


START_ATTEMPTS = 3


def _start(bindir: Path, data: Path, root: Path) -> int:
    """Start the cluster on a free port; the port it listens on. PostgreSQL refuses a port another server took
    between ``free_port`` and its bind (``pg_ctl -w start`` fails): then it is started again on another."""
    for attempt in range(START_ATTEMPTS):
        port = free_port()
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        try:
            _run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w", "start")
            return port
        except RuntimeError:
            if attempt == START_ATTEMPTS - 1:
                raise
    raise RuntimeError(f"START_ATTEMPTS is {START_ATTEMPTS}")
