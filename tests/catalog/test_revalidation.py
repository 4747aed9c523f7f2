"""Polls that reuse unchanged metadata: ETag / If-None-Match against the real embedded server, and the plain load
wherever the catalog cannot revalidate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.errors import NoSuchMaterializedTableError

ROWS = pa.table({"k": pa.array([1, 2], pa.int64())})


@pytest.fixture
def statuses(rest) -> Iterator[list[int]]:  # type: ignore[no-untyped-def]
    """The status of every answer the pyiceberg client receives during the test."""
    seen: list[int] = []

    def record(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(response.status_code)

    hooks = rest._session.hooks["response"]
    hooks.append(record)
    yield seen
    hooks.remove(record)


def test_an_unchanged_table_is_answered_304_and_its_last_metadata_reused(rest, ns: str, statuses: list[int]) -> None:  # type: ignore[no-untyped-def]
    table = rest.create_table((ns, "t"), schema=ROWS.schema)
    table.append(ROWS)
    catalog, name = MaterializedCatalog(rest, "mt_test"), f"mt_test.{ns}.t"

    first = catalog.load(name, reuse_unchanged=True)
    statuses.clear()
    again = catalog.load(name, reuse_unchanged=True)
    assert again is first and statuses == [304]
    assert again == catalog.load(name)  # exactly what a full load says

    table.append(ROWS)
    statuses.clear()
    changed = catalog.load(name, reuse_unchanged=True)
    assert statuses == [200]
    assert changed.current_snapshot_id != first.current_snapshot_id
    assert [s.snapshot_id for s in changed.snapshots][:-1] == [s.snapshot_id for s in first.snapshots]
    assert changed == catalog.load(name)
    assert catalog.load(name, reuse_unchanged=True) is changed


def test_without_etags_every_poll_loads_in_full(rest, ns: str, statuses: list[int]) -> None:  # type: ignore[no-untyped-def]
    rest.create_table((ns, "t"), schema=ROWS.schema).append(ROWS)
    catalog, name = MaterializedCatalog(rest, "mt_test"), f"mt_test.{ns}.t"

    def drop_etag(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        response.headers.pop("ETag", None)

    hooks = rest._session.hooks["response"]
    hooks.insert(0, drop_etag)
    try:
        first = catalog.load(name, reuse_unchanged=True)
        statuses.clear()
        again = catalog.load(name, reuse_unchanged=True)
    finally:
        hooks.remove(drop_etag)
    assert statuses == [200] and again == first and again is not first


def test_a_dropped_table_is_refused_as_a_load_refuses_it(rest, ns: str) -> None:  # type: ignore[no-untyped-def]
    rest.create_table((ns, "t"), schema=ROWS.schema).append(ROWS)
    catalog, name = MaterializedCatalog(rest, "mt_test"), f"mt_test.{ns}.t"
    catalog.load(name, reuse_unchanged=True)
    rest.drop_table((ns, "t"))
    with pytest.raises(NoSuchMaterializedTableError, match="does not exist"):
        catalog.load(name, reuse_unchanged=True)


def test_a_catalog_that_is_not_rest_loads_in_full(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    sql = SqlCatalog("local", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    sql.create_namespace("n")
    sql.create_table(("n", "t"), schema=ROWS.schema).append(ROWS)
    catalog = MaterializedCatalog(sql, "local")
    first = catalog.load("local.n.t", reuse_unchanged=True)
    assert first == catalog.load("local.n.t", reuse_unchanged=True) == catalog.load("local.n.t")
    assert first.current_snapshot_id is not None
