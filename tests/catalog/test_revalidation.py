"""Polls that reuse unchanged metadata: ETag / If-None-Match against the real embedded server, and the plain load
wherever the catalog cannot revalidate."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


@contextmanager
def answers_altered(rest, hook: Callable[..., None]) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """``hook`` changes each answer the client receives (before anything else sees it), for the block."""
    hooks = rest._session.hooks["response"]
    hooks.insert(0, hook)
    try:
        yield
    finally:
        hooks.remove(hook)


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

    with answers_altered(rest, drop_etag):
        first = catalog.load(name, reuse_unchanged=True)
        statuses.clear()
        again = catalog.load(name, reuse_unchanged=True)
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


def _materialized(rest, ident: tuple[str, ...], reads: str) -> None:  # type: ignore[no-untyped-def]
    """A table with a materialized definition reading ``reads``, written as CREATE writes one (no Spark)."""
    from mt_testing import definition_properties

    rest.create_table(ident, schema=ROWS.schema, properties=definition_properties(reads))


def test_a_listing_asks_once_for_every_etag_and_loads_only_what_changed(  # type: ignore[no-untyped-def]
    rest, catalog_config, ns: str, statuses: list[int]
) -> None:
    from mt_magic.catalog.client import open_catalog

    for index in range(5):
        _materialized(rest, (ns, f"m{index}"), f"mt_test.{ns}.src")
    catalog = MaterializedCatalog(rest, "mt_test")
    first = catalog.list_materialized(ns, reuse_unchanged=True)
    statuses.clear()
    again = catalog.list_materialized(ns, reuse_unchanged=True)
    assert statuses == [200] and [a is b for a, b in zip(again, first, strict=True)] == [True] * 5

    other = open_catalog(catalog_config)  # another kernel: a new reader, a definition changed, a table dropped
    _materialized(other, (ns, "new"), f"mt_test.{ns}.m0")
    other.load_table((ns, "m1")).transaction().set_properties(
        {"mt.upstream": f'["mt_test.{ns}.m0"]'}
    ).commit_transaction()
    other.drop_table((ns, "m2"))
    statuses.clear()
    changed = {info.name: info for info in catalog.list_materialized(ns, reuse_unchanged=True)}
    assert sorted(statuses) == [200, 200, 200]  # the ETags, then m1 and new (the unchanged three: no request)
    assert sorted(changed) == [f"mt_test.{ns}.{t}" for t in ("m0", "m1", "m3", "m4", "new")]
    for name, info in changed.items():
        assert info == catalog.load(name), name  # exactly what a full load says
    assert changed[f"mt_test.{ns}.m0"] is first[0]
    m1 = changed[f"mt_test.{ns}.m1"].definition
    assert m1 is not None and m1.upstream == (f"mt_test.{ns}.m0",)


def test_the_whole_catalog_is_one_request_when_nothing_changed(rest, ns: str, statuses: list[int]) -> None:  # type: ignore[no-untyped-def]
    rest.create_namespace((ns, "inner"))
    _materialized(rest, (ns, "top"), "mt_test.x.y")
    _materialized(rest, (ns, "inner", "deep"), "mt_test.x.y")
    catalog = MaterializedCatalog(rest, "mt_test")
    first = catalog.list_materialized(reuse_unchanged=True)
    walked = MaterializedCatalog(rest, "mt_test")
    walked._revalidated._no_etags = True  # as on a server without the ETag listing: namespace by namespace
    assert sorted(i.name for i in first) == sorted(i.name for i in walked.list_materialized(reuse_unchanged=True))
    assert {f"mt_test.{ns}.top", f"mt_test.{ns}.inner.deep"} <= {i.name for i in first}
    statuses.clear()
    again = catalog.list_materialized(reuse_unchanged=True)
    assert statuses == [200] and [i.name for i in again] == [i.name for i in first]


def test_a_table_this_client_cannot_load_is_asked_about_again_only_once_it_changes(  # type: ignore[no-untyped-def]
    rest, ns: str, statuses: list[int]
) -> None:
    """A listed table whose load fails (a name pyiceberg cannot put in a URL, like ``..``, or one dropped between
    the listing and its load) is not loaded at every listing again: only once its ETag changes."""
    _materialized(rest, (ns, "ok"), "mt_test.x.y")
    rest.create_table((ns, "lost"), schema=ROWS.schema)
    catalog = MaterializedCatalog(rest, "mt_test")

    def lost(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        if response.url.endswith(f"/{ns}/tables/lost"):
            response.status_code = 404

    with answers_altered(rest, lost):
        assert [i.name for i in catalog.list_materialized(ns, reuse_unchanged=True)] == [f"mt_test.{ns}.ok"]
        assert statuses.count(404) == 2  # the conditional load, then the plain one
        statuses.clear()
        assert [i.name for i in catalog.list_materialized(ns, reuse_unchanged=True)] == [f"mt_test.{ns}.ok"]
        assert statuses == [200]  # the ETag listing alone
    rest.load_table((ns, "lost")).append(ROWS)  # changed: asked about again, and now loads
    statuses.clear()
    assert [i.name for i in catalog.list_materialized(ns, reuse_unchanged=True)] == [f"mt_test.{ns}.ok"]
    assert statuses == [200, 200]


def test_a_server_without_the_etag_listing_is_asked_once_then_listed_table_by_table(  # type: ignore[no-untyped-def]
    rest, ns: str, statuses: list[int]
) -> None:
    from mt_magic.catalog.revalidation import TABLE_ETAGS

    _materialized(rest, (ns, "m"), f"mt_test.{ns}.src")
    catalog = MaterializedCatalog(rest, "mt_test")

    def unknown_path(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        if TABLE_ETAGS in response.url:  # as a server without mt_magic's endpoint answers it
            response.status_code = 404

    with answers_altered(rest, unknown_path):
        first = catalog.list_materialized(ns, reuse_unchanged=True)
        statuses.clear()
        again = catalog.list_materialized(ns, reuse_unchanged=True)
    assert [i.name for i in first] == [f"mt_test.{ns}.m"] and again == first
    assert statuses == [200, 304]  # the namespace's listing, the table's conditional load: never the ETags again


@pytest.mark.slow
def test_on_icebergs_reference_server_a_listing_falls_back_and_stays_exact(tmp_path: Path) -> None:
    from reference_catalog import reference_server

    from mt_magic.catalog.client import CatalogConfig, open_catalog
    from mt_magic.catalog.revalidation import TABLE_ETAGS

    with reference_server(tmp_path) as url:
        config = CatalogConfig("reference", {"uri": url, "warehouse": (tmp_path / "warehouse").as_uri()})
        rest, other = open_catalog(config), open_catalog(config)
        rest.create_namespace("ns")
        _materialized(rest, ("ns", "m"), "reference.ns.src")
        asked: list[tuple[str, int]] = []
        rest._session.hooks["response"].append(lambda r, *a, **k: asked.append((r.url, r.status_code)))
        catalog = MaterializedCatalog(rest, "reference")
        assert [i.name for i in catalog.list_materialized(reuse_unchanged=True)] == ["reference.ns.m"]
        [(_, refused)] = [(u, s) for u, s in asked if TABLE_ETAGS in u]
        assert refused != 200
        _materialized(other, ("ns", "new"), "reference.ns.m")  # another kernel's reader, a moment ago
        asked.clear()
        listed = catalog.list_materialized(reuse_unchanged=True)
        assert [i.name for i in listed] == ["reference.ns.m", "reference.ns.new"]
        assert not [u for u, _ in asked if TABLE_ETAGS in u]  # asked once per client, then table by table
        assert listed == MaterializedCatalog(other, "reference").list_materialized()
