"""A table's folders are its own (issue 48): the pure rule the server applies at create, commit and before it vends
credentials (:mod:`mt_magic.catalog.server.own_places`); the requests themselves are in ``test_vended_credentials``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mt_magic.catalog.server.errors_http import RestError
from mt_magic.catalog.server.locations import resolved
from mt_magic.catalog.server.own_places import check_own_places, view_folder

OTHERS = [
    (owner, [resolved(folder) for folder in folders])
    for owner, folders in [("table b.other", ["s3://w/wh/b/other", "s3://w/data/other"]), ("a view", ["s3://w/wh/a/v"])]
]
FOLDERS = [("the warehouse", "s3://w/wh"), ("namespace a", "s3://w/wh/a"), ("namespace b", "s3://w/wh/b")]


@pytest.mark.parametrize(
    ("place", "reached"),
    [
        ("s3://w/wh", "the warehouse"),
        ("s3://w/wh/", "the warehouse"),
        ("s3://w", "no place that can be compared"),
        ("s3://w/wh/b", "namespace b"),
        ("s3://w/wh/b/other", "table b.other"),
        ("s3://w/wh/b/other/data", "table b.other"),
        ("s3://w/data", "table b.other"),
        ("s3://w/wh/a/v/x", "a view"),
    ],
)
def test_a_place_over_anothers_folder_is_refused_naming_it(place: str, reached: str) -> None:
    with pytest.raises(RestError, match=f"reaches .*{reached}.*Fix: ") as refused:
        check_own_places("table a.t", ["s3://w/wh/a/t", place], OTHERS, FOLDERS)
    assert refused.value.status == 403


def test_a_tables_own_folders_inside_its_namespace_pass() -> None:
    check_own_places("table a.t", ["s3://w/wh/a/t", "s3://w/wh/a/t/data", "s3://w/elsewhere/t"], OTHERS, FOLDERS)
    assert view_folder("s3://w/wh/a/v/metadata/00001-x.metadata.json") == "s3://w/wh/a/v"


def test_a_create_reads_no_other_tables_metadata_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check needs every table's folders; each metadata file is read once while it is current, however many
    tables the parsed-metadata cache holds (before: every create read each table past the cache's size again), and
    the next check sees a table's new folders."""
    from access_app import client, create_table, ok
    from test_rest_locations import SCHEMA

    from mt_magic.catalog.server import tables_store

    monkeypatch.setattr(tables_store, "CACHED_TABLES", 2)
    reads: list[str] = []
    read = tables_store.read_metadata
    monkeypatch.setattr(
        tables_store, "read_metadata", lambda io, location: reads.append(location) or read(io, location)
    )
    admin = client(f"sqlite:///{tmp_path}/catalog.db", tmp_path / "warehouse")
    ok(admin.post("/v1/namespaces", json={"namespace": ["a"]}))
    for index in range(8):
        create_table(admin, "a", f"t{index}")
    reads.clear()
    create_table(admin, "a", "new")
    assert [location.split("/a/")[1].split("/")[0] for location in reads] == ["t7"], reads  # new since the last
    moved = str(tmp_path / "warehouse" / "elsewhere" / "t0")
    ok(admin.post("/v1/namespaces/a/tables/t0", json={"updates": [{"action": "set-location", "location": moved}]}))
    under = {"name": "under", "schema": SCHEMA, "location": f"{moved}/x"}  # the moved folder is seen at once
    refused = admin.post("/v1/namespaces/a/tables", json=under)
    assert refused.status_code == 403 and "the files of table a.t0" in refused.text, refused.text


def test_a_creates_queries_do_not_grow_with_the_namespaces(tmp_path: Path) -> None:
    """The check reads every namespace's folder in a fixed number of queries (before: each namespace's properties one
    by one on every create, 2.6 s per create among 300 namespaces)."""
    import gc

    from access_app import client, create_table, ok
    from sqlalchemy import event

    from mt_magic.catalog.server.namespaces import NamespaceStore

    admin = client(f"sqlite:///{tmp_path}/catalog.db", tmp_path / "warehouse")
    [store] = [
        o
        for o in gc.get_objects()
        if isinstance(o, NamespaceStore) and o.catalog.engine.url.database == f"{tmp_path}/catalog.db"
    ]
    statements: list[str] = []
    event.listen(store.catalog.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))

    def queries_of_a_create(name: str) -> int:
        statements.clear()
        create_table(admin, "n0", name)
        return len(statements)

    for index in range(3):
        ok(admin.post("/v1/namespaces", json={"namespace": [f"n{index}"]}))
    queries_of_a_create("warm_up")  # first-use reads
    few = queries_of_a_create("first")
    for index in range(3, 30):
        ok(admin.post("/v1/namespaces", json={"namespace": [f"n{index}", "inner"]}))
    assert queries_of_a_create("second") == few
