"""A connection the server drops between two requests (issue 35's CI: "Connection reset by peer" after a pause).

Two sides: the embedded server keeps an idle connection open longer than a kernel's or a script's usual pause
(uvicorn's own default closed it after 5 s, so a client pausing 5 s raced the close), and mt_magic's pyiceberg
client sends a read again when its reused connection is reset. The second is shown on a small server that resets
the first connection's second request, the moment a real server's keep-alive close can hit (the real one's
moment cannot be chosen); the same server fails pyiceberg's own client, so the test can fail.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.catalog.embedded import EmbeddedServer
from mt_magic.catalog.server.app import KEEP_ALIVE_SECONDS

UVICORN_DEFAULT_KEEP_ALIVE = 5


def _closed_by_peer(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


def test_the_server_keeps_an_idle_connection_open_past_a_short_pause(catalog_server: EmbeddedServer) -> None:
    host, port = catalog_server.uri.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"Authorization": f"Bearer {catalog_server.token}"} if catalog_server.token else {}
    try:
        connection.request("GET", "/v1/config", headers=headers)
        assert connection.getresponse().read() and connection.sock is not None
        sock = connection.sock
        pause = UVICORN_DEFAULT_KEEP_ALIVE + 1
        time.sleep(pause)
        assert not _closed_by_peer(sock), f"the server closed an idle connection within {pause} s"
        connection.request("GET", "/v1/namespaces", headers=headers)
        assert connection.getresponse().status == 200
        assert connection.sock is sock  # the same connection answered
    finally:
        connection.close()
    assert KEEP_ALIVE_SECONDS > UVICORN_DEFAULT_KEEP_ALIVE + 1


class ResettingServer:
    """Answers ``/v1/config`` and ``/v1/namespaces``; resets the first request sent on a reused connection."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.uri = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.requests: list[str] = []
        self.resets = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn, self.connections), daemon=True).start()

    def _handle(self, conn: socket.socket, number: int) -> None:
        reader = conn.makefile("rb")
        served = 0
        while True:
            line = reader.readline()
            if not line:
                break
            while reader.readline() not in (b"\r\n", b"\n", b""):
                pass
            method, path = line.decode().split()[:2]
            self.requests.append(f"{number} {method} {path.split('?')[0]}")
            if served == 1 and not self.resets:  # a reused connection: reset it (RST), as a racing close does
                self.resets += 1
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                break
            body = {"defaults": {}, "overrides": {}} if path.startswith("/v1/config") else {"namespaces": [["a"]]}
            data = json.dumps(body).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            conn.sendall(head.encode() + data)
            served += 1
        reader.close()
        conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def resetting() -> Iterator[ResettingServer]:
    server = ResettingServer()
    yield server
    server.close()


def test_a_read_on_a_reset_connection_is_sent_again(resetting: ResettingServer) -> None:
    catalog = open_catalog(CatalogConfig(name="resetting", properties={"type": "rest", "uri": resetting.uri}))
    assert catalog.list_namespaces() == [("a",)]
    assert catalog.list_namespaces() == [("a",)]  # on the same connection: reset, then sent on a new one
    assert resetting.resets == 1
    assert resetting.requests == [
        "1 GET /v1/config",
        "2 GET /v1/namespaces",
        "2 GET /v1/namespaces",
        "3 GET /v1/namespaces",
    ]


def test_pyiceberg_alone_fails_on_the_same_server(resetting: ResettingServer) -> None:
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("resetting", type="rest", uri=resetting.uri)
    assert catalog.list_namespaces() == [("a",)]
    with pytest.raises(requests.exceptions.ConnectionError, match="reset|aborted"):
        catalog.list_namespaces()
