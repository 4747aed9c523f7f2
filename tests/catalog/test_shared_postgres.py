"""A shared catalog on a real PostgreSQL, started by the test itself: two server processes on one
database and one warehouse, concurrent commits through both, none lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from concurrent_writers import concurrent_appends
from postgres_cluster import missing_reason, postgres_cluster
from serve_process import serving, serving_many

TOKEN = "shared-team-token"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")]


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with postgres_cluster() as url:
        yield url


def test_two_servers_share_one_postgres_catalog(postgres_url: str, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    args = ("--warehouse", warehouse, "--uri", postgres_url)
    # started at once on a fresh database: both create the catalog's tables at the same moment
    with serving_many(2, *args, token=TOKEN) as [first, second]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with (
            httpx.Client(base_url=first, headers=headers, timeout=30) as a,
            httpx.Client(base_url=second, headers=headers, timeout=30) as b,
        ):
            assert a.post("/v1/namespaces", json={"namespace": ["team.db"]}).status_code == 200
            assert a.post("/v1/namespaces", json={"namespace": ["team.db", "ä b"]}).status_code == 200
            assert b.get("/v1/namespaces", params={"parent": "team.db"}).json()["namespaces"] == [["team.db", "ä b"]]
            assert b.post("/v1/namespaces", json={"namespace": ["team.db"]}).status_code == 409

        report = concurrent_appends([first, second], TOKEN, writers=4, commits=5)
    print(report.summary())
    assert report.lost == 0 and report.snapshots == report.rows == 20, report.summary()


def test_commits_through_either_server_build_on_each_other(postgres_url: str, tmp_path: Path) -> None:
    args = ("--warehouse", str(tmp_path / "warehouse"), "--uri", postgres_url)
    schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
    with serving(*args) as first, serving(*args) as second:
        with httpx.Client(base_url=first, timeout=30) as a, httpx.Client(base_url=second, timeout=30) as b:
            a.post("/v1/namespaces", json={"namespace": ["stale"]})
            uuid = a.post("/v1/namespaces/stale/tables", json={"name": "t", "schema": schema}).json()["metadata"][
                "table-uuid"
            ]
            seen = b.get("/v1/namespaces/stale/tables/t").json()["metadata-location"]
            assert (
                a.post(
                    "/v1/namespaces/stale/tables/t",
                    json={"updates": [{"action": "set-properties", "updates": {"by": "a"}}]},
                ).status_code
                == 200
            )
            stale = {
                "requirements": [
                    {"type": "assert-table-uuid", "uuid": uuid},
                    {"type": "assert-current-schema-id", "current-schema-id": 0},
                ],
                "updates": [{"action": "set-properties", "updates": {"by": "b"}}],
            }
            # b's view is outdated, but its requirements still hold: the server rebases and keeps both changes
            assert b.post("/v1/namespaces/stale/tables/t", json=stale).status_code == 200
            props = a.get("/v1/namespaces/stale/tables/t").json()["metadata"]["properties"]
            assert props["by"] == "b" and seen != a.get("/v1/namespaces/stale/tables/t").json()["metadata-location"]
            assert (
                b.post(
                    "/v1/namespaces/stale/tables/t",
                    json={
                        **stale,
                        "requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
                    },
                ).status_code
                == 409
            )
