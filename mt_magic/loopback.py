"""Ports on 127.0.0.1 for what mt_magic starts locally: a catalog, Airflow, a Spark Connect server, a cluster."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (the OS picks it); the caller binds it soon after."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])
