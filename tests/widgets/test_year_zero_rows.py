"""Rows shown from Spark that Python's ``datetime`` cannot hold (issue 49): a timestamp in year 1 written at +14:00 is
in year 0 in UTC, and collecting it into Python raised "year 0 is out of range" where Spark answers. Each surface
that shows rows (the card's preview, a live query, ``%mt verify``'s samples; a held refresh's sample since 34ee97e)
shows its date and timestamp values as Spark renders them (``runtime.spark.shown_rows``). One table for the three."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest
from mt_testing import run
from shared_catalog import CATALOG

pytestmark = pytest.mark.spark

YEAR_ONE = "TIMESTAMP '0001-01-01 00:00:00+14:00'"
_count = itertools.count()


@pytest.fixture(scope="module")
def year_zero(connection):  # type: ignore[no-untyped-def]
    """(workspace, the table's name, Spark's text of the year-0 timestamp), built once."""
    from dataclasses import replace

    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.service import MaterializedTables

    base, spark = connection.service.workspace, connection.spark
    namespace = f"year_zero_{next(_count)}"
    base.catalog.catalog.create_namespace(namespace)
    mt = MaterializedTables.inline(Engine(replace(base, default_namespace=namespace), connection.service.engine.jobs))
    source, name = f"{CATALOG}.{namespace}.yz_src", f"{CATALOG}.{namespace}.yz"
    spark.sql(f"CREATE TABLE {source} (id INT, ts TIMESTAMP) USING iceberg")
    spark.sql(f"INSERT INTO {source} VALUES (1, {YEAR_ONE}), (2, TIMESTAMP '2026-01-01 00:00:00')")
    run(mt, f"CREATE MATERIALIZED TABLE {name} FRESHNESS = INTERVAL '1' HOUR AS SELECT id, ts FROM {source}")
    text = spark.sql(f"SELECT CAST(ts AS STRING) FROM {name} WHERE id = 1").first()[0]
    assert text.startswith("0000-12-31")  # year 0 in the session's zone (UTC)
    return mt.workspace, name, text


def test_the_cards_preview(year_zero) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.runtime.spark.preview import preview

    workspace, name, text = year_zero
    assert sorted(preview(workspace, name, 10).rows) == [(1, text), (2, "2026-01-01 00:00:00")]


def test_a_live_query(year_zero) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.runtime.inspect.query import collect, resolve

    workspace, name, text = year_zero
    live = collect(workspace, resolve(workspace, f"SELECT id, ts, ts AS ts FROM {name}"), 10, _now)  # names repeat
    assert sorted(live.rows) == [(1, text, text), (2, "2026-01-01 00:00:00", "2026-01-01 00:00:00")]


def test_verifys_samples_and_the_write_it_blames(year_zero, spark) -> None:  # type: ignore[no-untyped-def]
    from mt_magic.runtime.inspect.verify import verify

    workspace, name, text = year_zero
    refreshed = workspace.catalog.load(name).current_snapshot_id
    spark.sql(f"INSERT INTO {name} VALUES (3, {YEAR_ONE})")  # a write that bypassed the refresh
    try:
        found = verify(workspace, name)
        assert (found.missing, found.extra, found.extra_sample) == (0, 1, (f"id=3, ts={text!r}",))
        assert "which wrote the extra rows' file" in found.suspect  # that file found by the row as shown
    finally:
        catalog, inside = name.split(".", 1)
        spark.sql(f"CALL {catalog}.system.rollback_to_snapshot('{inside}', {refreshed})")


def _now() -> datetime:
    return datetime.now(timezone.utc)
