"""``python -m mt_magic.catalog serve`` as an operator runs it: each warehouse keeps its own database, and
the bearer token never shows in what the server logs or answers."""

from __future__ import annotations

from pathlib import Path

import httpx
from serve_process import serving

from mt_magic.catalog.embedded import EmbeddedServer

SECRET = "s3cr3t-token-that-must-never-leak"


def test_each_warehouse_keeps_its_own_database(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with serving("--warehouse", str(tmp_path / name)) as url:
            assert httpx.post(f"{url}/v1/namespaces", json={"namespace": [f"only_{name}"]}).status_code == 200
            listed = httpx.get(f"{url}/v1/namespaces").json()["namespaces"]
            assert listed == [[f"only_{name}"]]  # the other warehouse's namespace is not here
        assert (tmp_path / f"{name}.catalog.db").is_file()
    with serving("--warehouse", str(tmp_path / "a")) as url:  # and it is found again on restart
        assert httpx.get(f"{url}/v1/namespaces").json()["namespaces"] == [["only_a"]]


def test_the_token_never_appears_in_logs_or_answers(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    answers: list[str] = []
    with serving("--warehouse", str(tmp_path / "wh"), "--log-level", "debug", token=SECRET, log=log) as url:
        good = {"Authorization": f"Bearer {SECRET}"}
        for headers in (good, {"Authorization": f"Bearer {SECRET}x"}, {"Authorization": SECRET}, {}):
            answers.append(httpx.get(f"{url}/v1/namespaces", headers=headers).text)
        with httpx.Client(base_url=url, headers={**good, "Content-Type": "application/json"}) as http:
            answers.append(http.post("/v1/namespaces", content=b"{oops").text)
            answers.append(http.get("/v1/namespaces/missing/tables/t").text)
            answers.append(
                http.post("/v1/namespaces", json={"namespace": ["n"], "properties": {"location": "/etc"}}).text
            )
    assert "401" in answers[1] and "400" in answers[4] and "404" in answers[5] and "403" in answers[6]
    text = log.read_text()
    assert "GET /v1/namespaces" in text  # debug logging was on and captured
    assert SECRET not in text and not any(SECRET in answer for answer in answers)


def test_the_embedded_servers_log_holds_no_token(
    catalog_server: EmbeddedServer, catalog_home: Path, http: httpx.Client
) -> None:
    http.get("/v1/namespaces/missing")
    assert catalog_server.token and catalog_server.token not in (catalog_home / "server.log").read_text()


def test_file_uris_are_locations_like_paths(tmp_path: Path) -> None:
    """``--warehouse file:/x`` and ``--allow-location file:/x`` (the form Java and Hadoop print) name ``/x``; they
    once made a directory named ``file:`` in the working directory."""
    allowed = tmp_path / "allowed"
    with serving("--warehouse", f"file:{tmp_path / 'wh'}", "--allow-location", f"file:{allowed}") as url:
        assert httpx.post(f"{url}/v1/namespaces", json={"namespace": ["n"]}).status_code == 200
        schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
        for name, location in (("inside", f"file:{allowed}/t"), ("default", None)):
            body = {"name": name, "schema": schema, **({"location": location} if location else {})}
            response = httpx.post(f"{url}/v1/namespaces/n/tables", json=body)
            assert response.status_code == 200, response.text
        assert response.json()["metadata"]["location"].startswith((tmp_path / "wh").as_uri())
    assert (tmp_path / "wh.catalog.db").is_file() and any((allowed / "t" / "metadata").iterdir())
    assert not Path("file:").exists() and not (tmp_path / "file:").exists()
