"""A statement's catalog requests do not grow with the catalog: CREATE, ALTER and REFRESH of one table make as
many requests among 200 other tables as in a catalog without them (each statement reads the tables it names and
their sources, never a listing of the catalog). DROP (and RENAME) must know every table that reads the one they
change, exactly, so they list the catalog: one request for every table's ETag, then a load of each table changed
since this process last read it — a reader another process created a moment ago is found."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from mt_testing import catalog_requests, run

from mt_magic.errors import DependencyError
from mt_magic.runtime.cell import execute_cell
from mt_magic.sql import parse_cell

_tables = itertools.count()


def counting(mt):  # type: ignore[no-untyped-def]
    """Count the REST requests the service's catalog client sends (by method)."""
    return catalog_requests(mt, lambda request: request.method)


def statements(mt, table: str) -> Counter:
    cells = [
        f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT k, count(*) AS n FROM src GROUP BY k",
        f"ALTER MATERIALIZED TABLE {table} SET FRESHNESS = INTERVAL '2' MINUTE",
        f"ALTER MATERIALIZED TABLE {table} SUSPEND",
        f"ALTER MATERIALIZED TABLE {table} RESUME",
        f"ALTER MATERIALIZED TABLE {table} REFRESH",
    ]
    with counting(mt) as counts:
        for cell in cells:
            [statement] = parse_cell(cell)
            result = mt.execute(statement)
            if result.refresh is not None:
                result.refresh.result(timeout=300)
    return counts


@pytest.fixture
def src(spark, mt) -> None:
    spark.sql("CREATE TABLE src (k INT) USING iceberg")
    spark.sql("INSERT INTO src VALUES (1), (2)")


def test_statements_cost_the_same_among_200_other_tables(spark, mt, src) -> None:
    statements(mt, "warm_up")  # first-use costs (config, the view endpoints) are not the point
    alone = statements(mt, "first")
    pyiceberg = mt.workspace.catalog.catalog
    namespace = f"crowd{next(_tables)}"
    pyiceberg.create_namespace(namespace)
    schema = spark.table("src").schema
    import pyarrow as pa

    arrow = pa.schema([pa.field(f.name, pa.int32()) for f in schema.fields])
    for index in range(200):
        pyiceberg.create_table((namespace, f"t{index}"), schema=arrow)
    crowded = statements(mt, "second")
    assert crowded == alone, f"alone {dict(alone)}, among 200 more tables {dict(crowded)}"


def _readers(rest, namespace: str, count: int, reads: str, prefix: str = "r") -> None:  # type: ignore[no-untyped-def]
    """``count`` materialized tables reading ``reads``, written as CREATE writes them, by another catalog client."""
    import pyarrow as pa
    from mt_testing import definition_properties

    properties = definition_properties(reads)
    schema = pa.schema([pa.field("k", pa.int32())])
    for index in range(count):
        rest.create_table((namespace, f"{prefix}{index}"), schema=schema, properties=properties)


def _other_client(mt):  # type: ignore[no-untyped-def]
    """A second pyiceberg client of the same catalog: another kernel's."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("other", **mt.workspace.catalog.catalog.properties)


def rename_and_drop_requests(mt, table: str) -> dict[str, Counter]:  # type: ignore[no-untyped-def]
    """The requests of a RENAME and then a DROP of a new table (each reads every table's sources)."""
    run(mt, f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    with counting(mt) as renamed:
        run(mt, f"ALTER MATERIALIZED TABLE {table} RENAME TO {table}_moved")
    with counting(mt) as dropped:
        run(mt, f"DROP MATERIALIZED TABLE {table}_moved")
    return {"RENAME": renamed, "DROP": dropped}


def test_rename_and_drop_cost_the_same_among_120_other_materialized_tables(spark, mt, src) -> None:
    rename_and_drop_requests(mt, "warm_up")
    alone = rename_and_drop_requests(mt, "first")
    namespace = f"idle{next(_tables)}"
    other = _other_client(mt)
    other.create_namespace(namespace)
    _readers(other, namespace, 120, f"{mt.workspace.catalog.spark_name}.{namespace}.orders")
    rename_and_drop_requests(mt, "reads_them")  # this process reads each new table once (a kernel's discovery does)
    crowded = rename_and_drop_requests(mt, "second")
    assert crowded == alone, f"alone {alone}, among 120 more materialized tables {crowded}"


def test_drop_finds_the_reader_another_client_created_or_changed_a_moment_ago(spark, mt, src) -> None:
    run(mt, "CREATE MATERIALIZED TABLE base FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    run(mt, "CREATE MATERIALIZED TABLE bystander FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    run(mt, "DROP MATERIALIZED TABLE IF EXISTS nothing")  # every table read: the next check reuses them
    namespace, other = mt.workspace.default_namespace, _other_client(mt)
    base = f"{mt.workspace.catalog.spark_name}.{namespace}.base"

    _readers(other, namespace, 1, base, prefix="fresh")
    with pytest.raises(DependencyError, match=f"{namespace}.fresh0"):
        run(mt, "DROP MATERIALIZED TABLE base")
    other.drop_table((namespace, "fresh0"))

    bystander = other.load_table((namespace, "bystander"))  # unchanged since read, until now
    bystander.transaction().set_properties({"mt.upstream": f'["{base}"]'}).commit_transaction()
    with pytest.raises(DependencyError, match=f"{namespace}.bystander"):
        run(mt, "DROP MATERIALIZED TABLE base")


def test_rename_moves_the_reader_another_client_created_a_moment_ago(spark, mt, src) -> None:
    run(mt, "CREATE MATERIALIZED TABLE old_name FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    run(mt, "DROP MATERIALIZED TABLE IF EXISTS nothing")  # every table read: the next check reuses them
    namespace, other = mt.workspace.default_namespace, _other_client(mt)
    spark_name = mt.workspace.catalog.spark_name
    _readers(other, namespace, 1, f"{spark_name}.{namespace}.old_name", prefix="late")

    run(mt, "ALTER MATERIALIZED TABLE old_name RENAME TO new_name")
    _, definition = mt.workspace.catalog.load_materialized(f"{spark_name}.{namespace}.late0")
    assert definition.upstream == (f"{spark_name}.{namespace}.new_name",)


def _table_loads(mt, cell: str, cascade: bool = False, together: bool = False) -> Counter:  # type: ignore[no-untyped-def]
    """The GET requests of each table path (and of the ETag listing) while ``cell`` runs (``together``: as one
    ``%%materialized`` cell, every statement checked before the first applies; else statement by statement)."""

    def path(request):  # type: ignore[no-untyped-def]
        tail = request.url.split("/v1/", 1)[-1].split("?", 1)[0]
        return tail if request.method == "GET" and ("/tables/" in tail or tail.endswith("table-etags")) else None

    with catalog_requests(mt, path) as counts:
        if together:
            execute_cell(mt, parse_cell(cell), cascade)
        else:
            run(mt, cell, cascade=cascade)
    return counts


def test_a_drop_loads_each_table_it_drops_once_from_check_to_apply(spark, mt, src) -> None:
    """DROP's check reads its plan (the listing: the table, its readers) and hands it to the apply: the table is not
    loaded again (before: 3 loads of the table, the check's, the scheduler lookup's and the view drop's; with
    CASCADE the listing twice and 3 loads of each table)."""
    run(mt, "CREATE MATERIALIZED TABLE base FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    run(mt, "CREATE MATERIALIZED TABLE reader FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM base")
    run(mt, "CREATE MATERIALIZED TABLE lone FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    namespace = mt.workspace.default_namespace
    alone = _table_loads(mt, "DROP MATERIALIZED TABLE lone")
    assert alone[f"namespaces/{namespace}/tables/lone"] <= 1, alone  # at most the listing's, when it changed
    assert alone["mt/table-etags"] == 1, alone
    cascaded = _table_loads(mt, "DROP MATERIALIZED TABLE base", cascade=True)
    assert cascaded["mt/table-etags"] == 1, cascaded
    for table in ("base", "reader"):
        assert cascaded[f"namespaces/{namespace}/tables/{table}"] <= 1, cascaded


def test_suspend_and_resume_read_the_scheduler_once_from_check_to_apply(spark, mt, src) -> None:
    """SUSPEND's and RESUME's check reads the table's scheduler and hands it to the apply as its plan, on their own
    and in a cell alike (before: SUSPEND loaded the table 4 times, RESUME 6; then 3 and 5 on their own, but 10 for
    the two in one cell, whose applies read the scheduler again; then 3 and 5, the apply reading the definition,
    then loading the table again to write it, and RESUME reading it a third time to check its options). What is
    left: the check's, the apply's one load (read, checked, written on) and RESUME's manager record."""
    run(mt, "CREATE MATERIALIZED TABLE paused FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM src")
    path = f"namespaces/{mt.workspace.default_namespace}/tables/paused"
    suspended = _table_loads(mt, "ALTER MATERIALIZED TABLE paused SUSPEND")
    resumed = _table_loads(mt, "ALTER MATERIALIZED TABLE paused RESUME")
    assert suspended[path] == 2, suspended  # 4, then 3 before
    assert resumed[path] == 3, resumed  # 6, then 5 before
    freshened = _table_loads(mt, "ALTER MATERIALIZED TABLE paused SET FRESHNESS = INTERVAL '2' MINUTE")
    assert freshened[path] == 3, freshened  # the check's, the apply's, the manager's record (6, then 4 before)
    both = "ALTER MATERIALIZED TABLE paused SUSPEND; ALTER MATERIALIZED TABLE paused RESUME"
    together = _table_loads(mt, both, together=True)
    assert together[path] == suspended[path] + resumed[path] == 5, together  # 10 before: RESUME's plan is kept
