"""``python -m mt_magic refresh`` (what each Airflow task runs) refreshes a table only under its refresh lease: while a
kernel holds the lease and does not hand it over (it is mid-refresh), the one-shot waits, then fails with who holds
it and commits nothing; once the kernel lets go, the one-shot refreshes and gives the lease back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from airflow_helpers import one_shot
from shared_catalog import CATALOG

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

NS = "oneshot_lease"
TABLE = f"{CATALOG}.{NS}.totals"


def test_the_one_shot_refresh_waits_for_the_kernels_lease(connection, one_shot_table) -> None:
    from mt_magic.catalog.leases import CatalogLeases
    from mt_magic.runtime.manager.lease_keeper import LeaseKeeper, LeaseWishes
    from mt_magic.runtime.workspace import utc_now

    one_shot_table(
        NS,
        "events (k INT, v INT)",
        "(1, 2), (1, 3)",
        "CREATE MATERIALIZED TABLE totals AS SELECT k, sum(v) AS total FROM events GROUP BY k",
    )
    base = connection.service.workspace
    spark = base.spark
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.events VALUES (2, 5)")
    before = base.catalog.load(TABLE).last_refresh()[0].snapshot_id

    # The lease outlives the one-shot's Spark start even on a loaded machine (at 30 s it expired first, once, at load
    # 40-80, and the one-shot rightly took it): this kernel holds it without renewing.
    kernel = LeaseKeeper(CatalogLeases(base.catalog.catalog, CATALOG), "kernel under test", timedelta(minutes=10))
    busy = frozenset({TABLE})
    kernel.sync(LeaseWishes(busy, busy=busy), utc_now())  # a kernel mid-refresh: it never hands the lease over
    assert kernel.holds(TABLE, utc_now())
    try:
        waited = one_shot(TABLE, "--lease-wait", "5")
        assert waited.returncode == 1
        assert f"{TABLE} is being refreshed by kernel under test" in waited.stderr, waited.stderr[-2000:]
        assert base.catalog.load(TABLE).last_refresh()[0].snapshot_id == before  # nothing committed
    finally:
        kernel.release_all()

    done = one_shot(TABLE, "--trigger", "scheduled")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mt_magic result: " in done.stdout and "lease held as airflow pid" in done.stdout, done.stdout
    rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {TABLE}").collect())
    assert rows == [(1, 5), (2, 5)]
    last = base.catalog.load(TABLE).last_refresh()[0]
    assert last.snapshot_id != before and last.summary.get("mt.refresh-trigger") == "scheduled"
    assert TABLE not in CatalogLeases(base.catalog.catalog, CATALOG).read().leases  # given back
