"""What mt_magic starts locally: ports on 127.0.0.1 for a catalog, Airflow, a Spark Connect server and a cluster, and
the files they keep under ``$MT_MAGIC_HOME``, which only their owner may read.

Notebooks run on shared machines (a JupyterHub, a team's VM, a CI runner): the catalog's database, its warehouse,
the logs and the state files hold a user's rows and tokens. Everything mt_magic writes there is made under
:data:`OWNER_ONLY_UMASK` (folders 0700, files 0600), by :func:`owner_only` in this process and by
``subprocess.Popen(..., umask=OWNER_ONLY_UMASK)`` for the servers it starts, not chmod-ed after the fact.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from requests import Session

HOST = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
"""The host names a loopback server answers to (a browser's ``Host`` header: anything else is DNS rebinding)."""

OWNER_ONLY_UMASK = 0o077
"""Folders 0700, files 0600: what every writer of mt_magic's files runs under."""

_UMASK_LOCK = threading.RLock()


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a URL's host name) names this machine's loopback interface."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def direct_session(url: str, session: Session | None = None) -> Session:
    """A ``requests`` session (``session``, or a new one) that reaches ``url`` directly when it names loopback: the
    environment's ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` and ``.netrc`` are ignored, so a token or password sent
    to a server of this machine never goes to a proxy. Other URLs keep the environment's settings."""
    if session is None:
        import requests

        session = requests.Session()
    if is_loopback(urlparse(url).hostname):
        session.trust_env = False
    return session


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (the OS picks it); the caller binds it soon after."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextmanager
def owner_only() -> Iterator[None]:
    """Whatever this process creates inside the block is its owner's only (umask 077, restored after).

    The umask is the process's: keep the block to the file operations themselves (a ``mkdir``, an ``open``). Blocks
    of several threads take turns, so one never restores the umask under another.
    """
    with _UMASK_LOCK:
        previous = os.umask(OWNER_ONLY_UMASK)
        try:
            yield
        finally:
            os.umask(previous)


def runs(pid: int, marker: str | Path) -> bool:
    """Whether ``pid`` is alive, this user's, and (where ``/proc`` tells) has ``marker`` in its command line: a pid
    file's process is still the one mt_magic started, not another that got its number since."""
    try:
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    proc = Path(f"/proc/{pid}")
    if not Path("/proc/self").exists():
        return True
    try:
        return proc.stat().st_uid == os.getuid() and os.fsencode(str(marker)) in (proc / "cmdline").read_bytes()
    except OSError:
        return False


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner can enter: made 0700 (with any missing parents), or, when it exists and
    others may read or enter it, tightened to 0700 with a one-line warning saying so.

    Raises:
        PermissionError: the folder is another user's and open to others (the message says how to fix it).
    """
    with owner_only():
        path.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        if path.stat().st_uid != os.getuid():
            raise PermissionError(
                f"{path} is another user's folder and open to others (mode {mode:o}); mt_magic keeps tokens and "
                f"data there. Fix: use a folder of your own (MT_MAGIC_HOME=…), or have its owner run chmod 700 {path}"
            )
        os.chmod(path, mode & 0o700 | 0o700)
        # Printed, not logged: the library's logger has no handler in a notebook or a shell, and this must be seen.
        print(f"mt_magic: {path} was readable by other users (mode {mode:o}); now 0700 (owner only)", file=sys.stderr)
    return path
