"""Where a Spark Connect client of this machine finds the token of the server this user started
(:mod:`.connect_server` writes ``connect.json``, 0600, in its state directory; :mod:`.connect` reads it here).

Its own module so that the client does not import the server, which builds on the session that uses the client.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlparse

from mt_magic.catalog.embedded import mt_home
from mt_magic.loopback import is_loopback, runs

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""PySpark's own: the token a Connect client sends when its URL has none."""
STATE_NAME = "connect.json"
"""The running server's pid, port and token, in its state directory."""
CONF_NAME = "spark-connect.conf"
"""The server's settings file (its command line names it, so a pid is known to be that server's)."""


def default_state_dir() -> Path:
    """``$MT_MAGIC_HOME/spark-connect``: the state directory of the server this user starts."""
    return mt_home() / "spark-connect"


def client_url(url: str, state_dir: Path | None = None) -> str:
    """The URL a client connects with for ``url``: a server on this machine's loopback gets its token.

    The token is the URL's own (``;token=``), else ``$SPARK_CONNECT_AUTHENTICATE_TOKEN``, else that of the server
    this user started on the URL's port (``connect.json`` in ``state_dir``, default ``$MT_MAGIC_HOME/spark-connect``).
    With a token the host becomes ``localhost``: PySpark sends a token over a plain loopback channel only to that
    name (to any other it opens TLS, which the server does not speak). Other URLs are returned as they are.
    """
    parts = urlparse(url)
    try:
        port = parts.port
    except ValueError:
        return url
    if parts.scheme != "sc" or port is None or not is_loopback(parts.hostname):
        return url
    tail = url.split("/;", 1)[1] if "/;" in url else ""
    params = dict(p.split("=", 1) for p in tail.split(";") if "=" in p)
    if "token" not in params and not os.environ.get(TOKEN_ENV):
        token = _local_token(port, state_dir)
        if token is None:
            return url
        params["token"] = token
    text = ";".join(f"{key}={value}" for key, value in params.items())
    return f"sc://localhost:{port}/;{text}" if text else f"sc://localhost:{port}"


def _local_token(port: int, state_dir: Path | None) -> str | None:
    """The token of the Connect server this user started on ``port`` (from its ``connect.json``), if it runs."""
    try:
        folder = state_dir or default_state_dir()
        state = json.loads((folder / STATE_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("port") != port or not isinstance(state.get("pid"), int):
        return None
    if not runs(state["pid"], folder / CONF_NAME):
        return None
    token = state.get("token")
    return token if isinstance(token, str) and token else None
