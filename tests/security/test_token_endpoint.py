"""Spark's catalog client does not depend on the REST spec's deprecated ``/v1/oauth/tokens`` (issue 47).

Before: every catalog with a token got ``rest.auth.type=oauth2`` and ``oauth2-server-uri=<catalog>/v1/oauth/tokens``.
With mt_magic's opaque tokens Iceberg never called it, but a token it can read an expiry from (a JWT, as identity
providers and other catalogs issue) was refreshed there before it expired: POSTed, the token in the form, to the
catalog's deprecated endpoint (mt_magic's server does not serve it). Now a token alone is a static bearer
header, as pyiceberg sends it, and no token endpoint is ever asked; a credential keeps OAuth2 with the endpoint the
user configures (Iceberg's own fallback, with its warning, otherwise).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mt_magic.catalog.client import CatalogConfig, masked, spark_catalog_conf


def jwt_expiring_in(seconds: int) -> str:
    """A token Iceberg's OAuth2 client reads an expiry from (it refreshes such a token shortly before then)."""

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': 'ana', 'exp': int(time.time()) + seconds})}.c2ln"


class RecordingCatalog(BaseHTTPRequestHandler):
    """A REST catalog with no namespaces that records each request's method, path and Authorization header."""

    seen: list[tuple[str, str, str]] = []

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        type(self).seen.append((self.command, path, self.headers.get("Authorization", "")))
        body = {"/v1/config": {"defaults": {}, "overrides": {}}, "/v1/namespaces": {"namespaces": []}}.get(path)
        data = json.dumps(body if body is not None else {"error": {"message": "no", "type": "X", "code": 404}})
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    do_GET = do_POST = do_HEAD = _answer  # noqa: N815 - http.server's names

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recording_catalog() -> Iterator[str]:
    RecordingCatalog.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingCatalog)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_token_alone_is_a_static_bearer_header() -> None:
    conf = spark_catalog_conf(CatalogConfig("mt", {"uri": "http://127.0.0.1:1", "token": "t0k"}))
    p = "spark.sql.catalog.mt"
    assert conf[f"{p}.rest.auth.type"] == "none" and conf[f"{p}.header.Authorization"] == "Bearer t0k"
    assert not [key for key in conf if key.endswith((".token", "oauth2-server-uri"))]


def test_oauth2_stays_as_configured_and_names_no_endpoint_of_its_own() -> None:
    p = "spark.sql.catalog.lake"
    credential = spark_catalog_conf(CatalogConfig("lake", {"uri": "https://c.example", "credential": "id:s"}))
    assert credential[f"{p}.rest.auth.type"] == "oauth2" and f"{p}.oauth2-server-uri" not in credential
    idp = "https://idp.example/oauth2/token"
    both = {"uri": "https://c.example", "token": "t", "oauth2-server-uri": idp}
    conf = spark_catalog_conf(CatalogConfig("lake", both))
    assert conf[f"{p}.token"] == "t" and conf[f"{p}.oauth2-server-uri"] == idp
    assert conf[f"{p}.rest.auth.type"] == "oauth2" and f"{p}.header.Authorization" not in conf


def test_a_bearer_header_is_masked_like_a_token() -> None:
    config = CatalogConfig("lake", {"uri": "https://c.example", "header.Authorization": "Bearer t", "warehouse": "w"})
    assert masked(config) == {
        "uri": "https://c.example",
        "header.Authorization": "****",
        "warehouse": "w",
        "type": "rest",
    }


@pytest.mark.spark
def test_spark_asks_no_token_endpoint_even_for_an_expiring_jwt(spark, recording_catalog: str) -> None:  # type: ignore[no-untyped-def]
    token = jwt_expiring_in(6)
    name = f"probe{int(time.time() * 1000) % 10**8}"
    for key, value in spark_catalog_conf(CatalogConfig(name, {"uri": recording_catalog, "token": token})).items():
        spark.conf.set(key, value)
    assert spark.sql(f"SHOW NAMESPACES IN {name}").collect() == []
    threading.Event().wait(
        8
    )  # Iceberg's OAuth2 client refreshed such a token before its expiry, on a thread of its own
    paths = [(method, path) for method, path, _ in RecordingCatalog.seen]
    assert ("GET", "/v1/namespaces") in paths and not [p for _, p in paths if "oauth" in p], paths
    assert {auth for _, _, auth in RecordingCatalog.seen} == {f"Bearer {token}"}
