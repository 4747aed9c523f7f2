"""Refresh leases on the real REST catalog: the lease map's write is a compare-and-set, unlike a property write.

Each "process" is its own pyiceberg client of the one server, as separate kernels are.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlparse

import pytest

from mt_magic.catalog.client import open_catalog
from mt_magic.catalog.leases import KEPT_SNAPSHOTS, CatalogLeases, Lease, LeaseConflictError
from mt_magic.runtime.manager.lease_keeper import LeaseKeeper, LeaseWishes

TTL = timedelta(seconds=30)
LOST_COMMITS_LEAVE_NO_FILES = True
"""The embedded server deletes the metadata file of a commit that lost its compare-and-set; Iceberg's reference
server keeps them (``tests/reference_line`` turns this off), so only the metadata log is bounded there."""


@pytest.fixture
def stores(catalog_config):  # type: ignore[no-untyped-def]
    return [CatalogLeases(open_catalog(catalog_config), "mt_test") for _ in range(5)]


def test_of_writers_that_read_the_same_map_exactly_one_wins(stores):
    table = f"mt_test.db.t_{uuid.uuid4().hex[:8]}"
    now = datetime.now(timezone.utc)
    for round_ in range(3):
        bases = [store.read() for store in stores]
        assert len({base.version for base in bases}) == 1
        winners: list[int] = []
        losers: list[int] = []
        start = threading.Barrier(len(stores))

        def take(i: int, bases=bases, start=start, winners=winners, losers=losers) -> None:  # type: ignore[no-untyped-def]
            start.wait()
            try:
                stores[i].write(bases[i], {**bases[i].leases, table: Lease(table, f"p{i}", now + TTL)})
                winners.append(i)
            except LeaseConflictError:
                losers.append(i)

        threads = [threading.Thread(target=take, args=(i,)) for i in range(len(stores))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(winners) == 1 and len(losers) == len(stores) - 1, f"round {round_}: {winners} won"
        assert stores[0].read().leases[table].holder == f"p{winners[0]}"


def test_plain_property_writes_both_succeed_so_they_cannot_carry_a_lease(catalog_config):
    """Why leases are not table properties: no REST requirement asserts a property, so both writers 'win'."""
    first, second = open_catalog(catalog_config), open_catalog(catalog_config)
    first.create_namespace_if_not_exists("lease_props")
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    ident = ("lease_props", f"t_{uuid.uuid4().hex[:8]}")
    first.create_table(ident, Schema(NestedField(1, "id", LongType(), required=False)))
    a, b = first.load_table(ident), second.load_table(ident)  # both see "no holder"
    assert "holder" not in a.properties and "holder" not in b.properties
    with a.transaction() as tx:
        tx.set_properties(holder="a")
    with b.transaction() as tx:
        tx.set_properties(holder="b")  # accepted although it was decided on a stale read
    assert first.load_table(ident).properties["holder"] == "b"


def test_keepers_hand_a_table_over_through_the_catalog_and_old_lease_snapshots_expire(stores):
    table = f"mt_test.db.t_{uuid.uuid4().hex[:8]}"
    a, b = LeaseKeeper(stores[0], "A", TTL), LeaseKeeper(stores[1], "B", TTL)
    now = datetime.now(timezone.utc)
    a.sync(LeaseWishes(frozenset({table})), now)
    b.sync(LeaseWishes(frozenset({table}), urgent=frozenset({table})), now)
    assert a.holds(table, now) and not b.holds(table, now)
    assert stores[2].read().leases[table].wanted_by == "B"
    a.sync(LeaseWishes(frozenset({table})), now)  # idle: hands it over
    b.sync(LeaseWishes(frozenset({table})), now)
    assert b.holds(table, now) and not a.holds(table, now)
    for i in range(KEPT_SNAPSHOTS + 3):
        b.sync(LeaseWishes(frozenset({table})), now + TTL * (i + 1) / 2)  # each renews
    lease_table = stores[2]._table()
    assert len(lease_table.metadata.snapshots) <= KEPT_SNAPSHOTS + 1
    assert len(lease_table.metadata.metadata_log) <= 10  # previous-versions-max
    metadata_dir = Path(urlparse(lease_table.metadata_location).path).parent
    if LOST_COMMITS_LEAVE_NO_FILES:
        assert len(list(metadata_dir.glob("*.metadata.json"))) <= 12  # previous-versions-max 10 + a concurrent one
    assert len(list(metadata_dir.glob("snap-*.avro"))) <= KEPT_SNAPSHOTS + 1
    b.release_all()
    assert table not in stores[3].read().leases


def test_an_unchanged_lease_map_is_not_sent_again_and_a_change_is_read(stores):
    """Every manager reads the map every few seconds; it changes every ten or so (issue 37: 500 leases were parsed
    from the wire at each read)."""
    table = f"mt_test.db.t_{uuid.uuid4().hex[:8]}"
    reader, writer = stores[0], stores[1]
    statuses: list[int] = []

    def record(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        statuses.append(response.status_code)

    first = reader.read()
    reader.catalog._session.hooks["response"].append(record)
    again = reader.read()
    assert statuses == [304] and again == first

    base = writer.read()
    writer.write(base, {**base.leases, table: Lease(table, "B", datetime.now(timezone.utc) + TTL)})
    statuses.clear()
    changed = reader.read()
    assert statuses == [200] and changed.leases[table].holder == "B" and changed.version != first.version


def test_a_lease_write_is_one_commit_that_also_drops_the_oldest_snapshot(stores):
    """Renewals come every ten seconds: a second commit per write to expire old snapshots doubled them."""
    store, table = stores[0], f"mt_test.db.t_{uuid.uuid4().hex[:8]}"
    commits: list[str] = []

    def record(response, *args, **kwargs):  # type: ignore[no-untyped-def]
        if response.request.method == "POST":
            commits.append(response.request.path_url)

    store.catalog._session.hooks["response"].append(record)
    now = datetime.now(timezone.utc)
    for renewal in range(KEPT_SNAPSHOTS + 2):
        base = store.read()
        commits.clear()
        store.write(base, {**base.leases, table: Lease(table, "A", now + TTL * (renewal + 1))})
        assert len(commits) == 1
    lease_table = store._table()
    assert len(lease_table.metadata.snapshots) == KEPT_SNAPSHOTS
    assert store.read().leases[table].expires_at == now.replace(microsecond=now.microsecond // 1000 * 1000) + TTL * (
        KEPT_SNAPSHOTS + 2
    )
