"""A web page in the user's browser cannot change the catalog (issue 47).

Before: a ``text/plain`` POST with a foreign ``Origin`` (what any page may send cross-site without asking) created a
namespace in a tokenless server, and a ``Host`` naming the page's own domain (DNS rebinding) was answered. Now the
first gets 415, the second 403, the catalog is unchanged, and no answer carries a CORS header.
"""

from __future__ import annotations

import json

import httpx
import pytest
from security_probes import catalog_cli

EVIL = "http://evil.example"


def namespaces(url: str) -> list[list[str]]:
    return list(httpx.get(f"{url}/v1/namespaces").json()["namespaces"])


def assert_no_cors(response: httpx.Response) -> None:
    assert not [h for h in response.headers if h.lower().startswith("access-control-")]


def test_a_cross_site_text_plain_post_is_refused(tokenless_server: str) -> None:
    url = tokenless_server
    before = namespaces(url)
    body = json.dumps({"namespace": ["pwned"], "properties": {}})
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        response = httpx.post(
            f"{url}/v1/namespaces", content=body, headers={"Content-Type": content_type, "Origin": EVIL}
        )
        assert response.status_code == 415, response.text
        assert "application/json" in response.json()["error"]["message"]
        assert_no_cors(response)
    assert namespaces(url) == before
    # The same body as JSON (what pyiceberg and Spark send) is served: the refusal is the type's, not the body's.
    assert httpx.post(f"{url}/v1/namespaces", content=body, headers={"Content-Type": "application/json"}).is_success
    assert ["pwned"] in namespaces(url)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_rebound_host_is_refused(tokenless_server: str, method: str) -> None:
    url = tokenless_server
    before = namespaces(url)
    port = url.rsplit(":", 1)[1]
    body = json.dumps({"namespace": ["rebound"]})
    response = httpx.request(
        method,
        f"{url}/v1/namespaces",
        content=body if method == "POST" else None,
        headers={"Host": f"evil.example:{port}", "Origin": f"{EVIL}:{port}", "Content-Type": "application/json"},
    )
    assert response.status_code == 403, response.text
    assert "--allow-host evil.example" in response.json()["error"]["message"]
    assert_no_cors(response)
    assert namespaces(url) == before
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):  # the loopback names are served
        assert httpx.get(f"{url}/v1/namespaces", headers={"Host": host}).status_code == 200


def test_a_preflight_gets_no_cors_grant(tokenless_server: str) -> None:
    response = httpx.options(
        f"{tokenless_server}/v1/namespaces",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert response.status_code >= 400
    assert_no_cors(response)


def test_serve_without_a_token_is_refused_unless_asked_for_by_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    refused = catalog_cli("serve", "--port", "0", "--warehouse", str(tmp_path / "wh"))
    assert refused.returncode == 2
    assert "error: serve: no token, so anyone who reaches the port could read and change the catalog" in refused.stderr
    assert "Fix: export MT_MAGIC_CATALOG_TOKEN=$(openssl rand -hex 24) (or --token-file FILE)" in refused.stderr
    assert "--insecure-no-auth" in refused.stderr


def test_the_tokenless_server_warns_at_start(tokenless_server: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = (tmp_path / "serve.log").read_text()
    assert "WARNING: no authentication (--insecure-no-auth)" in log and tokenless_server in log
