"""Start, find, reuse and stop the embedded REST catalog server (a separate process per ``$MT_MAGIC_HOME``).

Layout under ``$MT_MAGIC_HOME`` (default ``~/.mt_magic``): ``catalog.db`` (SQLite), ``warehouse/``,
``server.json`` (pid, port, URL, warehouse, database, token; mode 0600), ``server.log``, ``server.lock``. The home is
0700 and everything in it is its owner's only (:func:`mt_magic.loopback.owner_only`; the server process runs
under the same umask, so the database, its ``-wal``/``-shm`` and the warehouse's files are 0600 too).
The server writes ``server.json`` itself once its socket listens and removes it on a clean exit; a server
counts as running only if its pid is alive *and* ``/v1/config`` answers. Several kernels sharing a home
reuse one server; a file lock keeps two of them from starting two.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from mt_magic.catalog.errors import EmbeddedServerError
from mt_magic.loopback import OWNER_ONLY_UMASK, owner_only, private_dir

TOKEN_ENV = "MT_MAGIC_CATALOG_TOKEN"
DATABASE_ENV = "MT_MAGIC_CATALOG_DATABASE"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server, as recorded in ``server.json``."""

    uri: str
    """REST endpoint, ``http://127.0.0.1:<port>``."""
    port: int
    pid: int
    warehouse: str
    """Warehouse URI (``file:///…``)."""
    database: str
    """SQLAlchemy URL of the catalog database."""
    token: str | None = None


def local_path(location: str | Path) -> Path | None:
    """The local path a location names — a plain path or any ``file:`` URI (``file:/x``, the form Java and
    Hadoop print, ``file:///x``, ``file://localhost/x``) — or ``None`` for remote storage (``s3://…``)."""
    text = str(location)
    parts = urlparse(text)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path))
    if "://" in text or (len(parts.scheme) > 1 and parts.scheme != "file"):
        return None
    return Path(text)


def warehouse_uri(warehouse: str | Path) -> str:
    """A warehouse as a URI: local directories (paths or ``file:`` URIs) become absolute ``file://`` URIs (and
    are created)."""
    path = local_path(warehouse)
    if path is None:
        return str(warehouse).rstrip("/")
    path = path.expanduser().resolve()
    with owner_only():
        path.mkdir(parents=True, exist_ok=True)
    return path.as_uri()


def location_uri(location: str) -> str:
    """A storage location as a URI: local paths (or ``file:`` URIs) become absolute ``file://`` URIs (nothing is
    created)."""
    path = local_path(location)
    if path is None:
        return location.rstrip("/")
    return path.expanduser().resolve().as_uri()


def display_database(database: str) -> str:
    """The database URL with any password hidden, for messages and ``status``."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(database).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy understands: show nothing that might be secret
        return "<unparseable database URL>"


def mt_home(home: Path | None = None) -> Path:
    """``home``, else ``$MT_MAGIC_HOME``, else ``~/.mt_magic``: made 0700, or tightened to 0700 (with a warning)
    when others could read it (:func:`mt_magic.loopback.private_dir`)."""
    path = Path(home or os.environ.get("MT_MAGIC_HOME") or Path.home() / ".mt_magic").expanduser()
    return private_dir(path)


def state_path(home: Path | None = None) -> Path:
    return mt_home(home) / "server.json"


def default_warehouse(home: Path | None = None) -> Path:
    return mt_home(home) / "warehouse"


def default_database(home: Path | None = None) -> str:
    return f"sqlite:///{mt_home(home) / 'catalog.db'}"


def database_for_warehouse(warehouse: str | Path, home: Path | None = None) -> str:
    """The SQLite catalog database of a warehouse given without a database URL: its own, never shared.

    A local warehouse ``DIR`` keeps it beside itself, ``DIR.catalog.db``; a remote one (``s3://…``) in
    ``$MT_MAGIC_HOME/catalogs/`` under a name derived from its URI. So two servers for two warehouses never
    mix their tables in one database.
    """
    text = str(warehouse)
    local = local_path(text)
    if local is None:
        digest = hashlib.sha256(text.rstrip("/").encode()).hexdigest()[:16]
        folder = mt_home(home) / "catalogs"
        with owner_only():
            folder.mkdir(exist_ok=True)
        return f"sqlite:///{folder / f'{digest}.db'}"
    path = local.expanduser().resolve()
    name = f"{path.name or 'root'}.catalog.db"
    return f"sqlite:///{path.parent / name}"


def write_state(path: Path, server: EmbeddedServer) -> None:
    """Write the state file atomically, readable by the owner only (it holds the token)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(server), f, indent=2)
    os.replace(tmp, path)


def read_state(path: Path) -> EmbeddedServer | None:
    """The recorded server, or ``None`` if there is no (readable) state file."""
    try:
        return EmbeddedServer(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def remove_state(path: Path, pid: int | None = None) -> None:
    """Remove the state file (only if it still names ``pid``, when given)."""
    state = read_state(path)
    if state is None or pid is None or state.pid == pid:
        path.unlink(missing_ok=True)


def _reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is our own child, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def pid_alive(pid: int) -> bool:
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_catalog_process(pid: int, state_file: Path | None = None) -> bool:
    """Guard against pid reuse (and zombies, whose command line is empty) where ``/proc`` exists: the process runs
    ``mt_magic.catalog serve`` (with ``--state-file state_file``, when given), as this user."""
    if not Path("/proc/self").exists():
        return True
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        owner = Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return False
    if owner != os.getuid() or b"mt_magic.catalog" not in argv or b"serve" not in argv:
        return False
    if state_file is None:
        return True
    if b"--state-file" not in argv[:-1]:
        return False
    written = Path(os.fsdecode(argv[argv.index(b"--state-file") + 1]))
    try:
        written = Path(os.readlink(f"/proc/{pid}/cwd")) / written  # a relative path is the server's cwd's
        return written.resolve() == state_file.resolve()
    except OSError:
        return False


def server_alive(pid: int, state_file: Path | None = None) -> bool:
    """The pid is alive and is an mt_magic catalog process (the one writing ``state_file``, when given)."""
    return pid_alive(pid) and _is_catalog_process(pid, state_file)


def answers(server: EmbeddedServer, timeout: float = 2.0) -> bool:
    """Whether ``GET /v1/config`` succeeds with the server's token (stdlib HTTP: no client dependency)."""
    request = urllib.request.Request(f"{server.uri}/v1/config")
    if server.token:
        request.add_header("Authorization", f"Bearer {server.token}")
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    try:
        with direct.open(request, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):  # URLError/HTTPError are OSErrors; a bad URL is a ValueError
        return False


def running_server(home: Path | None = None) -> EmbeddedServer | None:
    """The embedded server of ``home`` if it is alive and answering, else ``None``."""
    state = read_state(state_path(home))
    if state is None or not server_alive(state.pid, state_path(home)):
        return None
    return state if answers(state) else None


@contextmanager
def _home_lock(home: Path) -> Iterator[None]:
    with owner_only(), open(home / "server.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _launch(home: Path, warehouse: Path | str, database: str, token: str | None, timeout: float) -> EmbeddedServer:
    state_file, log_file = state_path(home), home / "server.log"
    state_file.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "mt_magic.catalog",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--warehouse",
        str(warehouse),
        "--state-file",
        str(state_file.resolve()),
    ]
    if not token:
        cmd.append("--insecure-no-auth")
    # The token and the database URL (a password in it) go through the environment: a command line is in `ps`.
    env = {**os.environ, TOKEN_ENV: token or "", DATABASE_ENV: database}
    with owner_only(), open(log_file, "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            close_fds=True,
            umask=OWNER_ONLY_UMASK,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmbeddedServerError(
                f"The embedded catalog server exited with code {proc.returncode} while starting "
                f"(log {log_file}):\n{_log_tail(log_file)}"
            )
        state = read_state(state_file)
        if state is not None and state.pid == proc.pid and answers(state, timeout=1.0):
            return state
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise EmbeddedServerError(
        f"The embedded catalog server did not answer within {timeout:.0f}s (log {log_file}):\n{_log_tail(log_file)}"
    )


def ensure_embedded_server(
    home: Path | None = None,
    token: str | None = None,
    *,
    warehouse: Path | str | None = None,
    database: str | None = None,
    timeout: float = START_TIMEOUT_S,
) -> EmbeddedServer:
    """Return the running embedded server of ``home``, starting one if none answers.

    Args:
        home: state directory; default ``$MT_MAGIC_HOME`` or ``~/.mt_magic``.
        token: bearer token for a new server (default: a random one, kept in ``server.json``); when a
            server is already running, it must match (or be ``None``).
        warehouse: warehouse directory or URI; default ``<home>/warehouse``.
        database: SQLAlchemy URL; default SQLite ``<home>/catalog.db``.
        timeout: seconds to wait for a new server's ``/v1/config``.

    Raises:
        EmbeddedServerError: the server did not come up (the message has its log tail), or the running
            one serves another warehouse or uses another token.
    """
    home = mt_home(home)
    wanted_warehouse = warehouse if warehouse is not None else default_warehouse(home)
    with _home_lock(home):
        current = running_server(home)
        if current is not None:
            if current.warehouse != warehouse_uri(wanted_warehouse):
                raise EmbeddedServerError(
                    f"The embedded catalog server in {home} (pid {current.pid}) serves warehouse "
                    f"{current.warehouse}, not {warehouse_uri(wanted_warehouse)}; stop it first "
                    "(python -m mt_magic.catalog stop) or use another MT_MAGIC_HOME."
                )
            if token is not None and token != current.token:
                raise EmbeddedServerError(
                    f"The embedded catalog server in {home} (pid {current.pid}) runs with another token; "
                    "stop it first (python -m mt_magic.catalog stop)."
                )
            return current
        remove_state(state_path(home))
        return _launch(
            home,
            wanted_warehouse,
            database or default_database(home),
            token if token is not None else secrets.token_urlsafe(24),
            timeout,
        )


def stop_embedded_server(home: Path | None = None, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Stop the embedded server of ``home`` (SIGTERM, then SIGKILL after ``timeout``).

    Returns:
        True if a server process was stopped, False if none was running (a stale state file is removed).
    """
    home = mt_home(home)
    with _home_lock(home):
        state = read_state(state_path(home))
        if state is None or not server_alive(state.pid, state_path(home)):
            remove_state(state_path(home))
            return False
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while server_alive(state.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if server_alive(state.pid):
            os.kill(state.pid, signal.SIGKILL)
            while server_alive(state.pid) and time.monotonic() < deadline + 5:
                time.sleep(0.05)
        remove_state(state_path(home))
        return True
