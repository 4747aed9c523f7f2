"""Small append-only refreshes run in process (DuckDB over Arrow, committed by pyiceberg): which queries may,
that the rows equal a full recompute, that the commit is one snapshot Spark reads, that a concurrent writer
still fails the commit, and that anything going wrong before the commit runs the refresh on Spark instead."""

from __future__ import annotations

import pytest
from incremental_testing import assert_matches_oracle, qualified, refresh, run

from mt_magic.errors import RefreshConflictError
from mt_magic.runtime.refresh.incremental import in_process
from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS, eligibility
from mt_magic.sql.query.in_process_gate import unsupported

TYPES = [("k", "int"), ("g", "string"), ("v", "long"), ("p", "decimal(10, 2)"), ("f", "double"), ("ts", "timestamptz")]
SRC = "cat.ns.src"


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT g, count(*) AS n, sum(v) AS s, min(ts) AS lo, max(p) AS hi FROM {SRC} GROUP BY g",
        f"SELECT count(*) AS n, sum(p) AS s FROM {SRC} WHERE g IN ('a', 'b') AND NOT v BETWEEN 1 AND 5",
        f"SELECT DISTINCT g, k FROM {SRC} WHERE v IS NOT NULL OR k <> 3",
        f"SELECT k, g FROM {SRC} WHERE g >= 'm'",
        f"SELECT k, g FROM {SRC} WHERE k > -3 AND p IN (1.5, 2, -0.25) AND v BETWEEN 1 AND 3000000000",
    ],
)
def test_simple_queries_may_run_in_process(query: str) -> None:
    assert unsupported(query, TYPES) is None


HOURLY = (
    f"SELECT g, date_trunc('HOUR', ts) AS hour, count(*) AS n, max(ts) AS hi FROM {SRC} "
    "GROUP BY g, date_trunc('HOUR', ts)"
)


@pytest.mark.parametrize(
    ("query", "zone", "why"),
    [
        (HOURLY, "UTC", None),
        (HOURLY, "Etc/UTC", None),
        (f"SELECT k FROM {SRC} WHERE date_trunc('week', ts) < ts", "+00:00", None),
        (HOURLY, "America/Los_Angeles", "other than UTC"),
        (HOURLY, None, "other than UTC"),  # not recorded: the product's zone may be anything
        (f"SELECT date_trunc('MILLISECOND', ts) AS t FROM {SRC}", "UTC", "date_trunc to MILLISECOND"),
        (f"SELECT date_trunc('HOUR', g) AS t FROM {SRC}", "UTC", "date_trunc of string"),
        (f"SELECT g, count(*) AS n FROM {SRC} GROUP BY 1", "UTC", "a GROUP BY key other than"),
        (f"SELECT k > 3 AS big, count(*) AS n FROM {SRC} GROUP BY k > 3", "UTC", "a GROUP BY key other than"),
    ],
)
def test_date_trunc_runs_in_process_only_in_a_utc_session(query: str, zone: str | None, why: str | None) -> None:
    reason = unsupported(query, TYPES, time_zone=zone)
    assert reason is None if why is None else why in (reason or ""), reason


@pytest.mark.parametrize(
    ("query", "why"),
    [
        (f"SELECT k, v * 2 AS v2 FROM {SRC}", "Mul"),
        (f"SELECT g, min(f) AS m FROM {SRC} GROUP BY g", "type not run in process"),
        (f"SELECT * FROM {SRC}", "f is double"),
        (f"SELECT g, sum(g) AS s FROM {SRC} GROUP BY g", "a sum of string"),
        (f"SELECT g, count(DISTINCT k) AS n FROM {SRC} GROUP BY g", "COUNT(DISTINCT …)"),
        (f"SELECT g, count(*) FROM {SRC} GROUP BY g", "without a name"),
        (f"SELECT k FROM {SRC} WHERE g = 1", "across types"),
        (f"SELECT k FROM {SRC} WHERE k = '1'", "across types"),
        (f"SELECT k FROM {SRC} WHERE ts > '2024-01-01'", "across types"),
        (f"SELECT upper(g) AS u FROM {SRC}", "Upper"),
        (f"SELECT g, sum(v + 1) AS s FROM {SRC} GROUP BY g", "expression"),
    ],
)
def test_queries_whose_semantics_could_differ_run_on_spark(query: str, why: str) -> None:
    reason = unsupported(query, TYPES)
    assert reason is not None and why in reason, reason


@pytest.fixture
def src(spark, mt):
    name = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {name} (k INT, g STRING, v BIGINT, p DECIMAL(10, 2), ts TIMESTAMP) USING iceberg")
    spark.sql(
        f"INSERT INTO {name} SELECT CAST(id % 7 AS INT), concat('g', id % 3), id, CAST(id / 10 AS DECIMAL(10, 2)), "
        "TIMESTAMP '2024-12-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) FROM range(40)"
    )
    return name


def _append(spark, name: str, start: int) -> None:
    spark.sql(
        f"INSERT INTO {name} SELECT CAST(id % 7 AS INT), concat('g', id % 4), IF(id % 5 = 0, NULL, id), "
        "CAST(id / 10 AS DECIMAL(10, 2)), TIMESTAMP '2024-12-02 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) "
        f"FROM range({start}, {start + 25})"
    )


AGG = (
    "SELECT g, count(*) AS n, count(v) AS nv, sum(v) AS s, sum(p) AS sp, min(ts) AS lo, max(ts) AS hi "
    "FROM src WHERE k <> 3 GROUP BY g"
)


def test_an_aggregate_over_appends_merges_in_process_and_equals_a_recompute(spark, mt, src) -> None:
    from datetime import datetime, timezone

    from mt_magic.runtime.status import RefreshRequest
    from mt_magic.vocabulary import RefreshTrigger

    run(mt, f"CREATE MATERIALIZED TABLE agg FRESHNESS = INTERVAL '1' MINUTE AS {AGG}")
    for start in (100, 200):
        _append(spark, src, start)
        group = f"in-process-{start}"
        now = datetime.now(timezone.utc)
        outcome = mt.engine.refresh(
            RefreshRequest(qualified(mt, "agg"), RefreshTrigger.SCHEDULED, now, job_group=group)
        )
        assert outcome.strategy == f"incremental: merge the aggregated delta · {IN_PROCESS}"
        assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []
        assert_matches_oracle(mt, "agg")
    info = mt.workspace.catalog.load(qualified(mt, "agg"))
    last = info.snapshots[-1]
    assert last.operation == "overwrite" and last.refresh_state is not None  # one snapshot: rows and state
    assert last.refresh_state.source_states[0].snapshot_id == mt.workspace.catalog.load(src).current_snapshot_id


def test_a_projection_over_appends_appends_in_process(spark, mt, src) -> None:
    run(mt, "CREATE MATERIALIZED TABLE proj FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, g, v FROM src WHERE k < 4")
    _append(spark, src, 300)
    outcome = refresh(mt, "proj")
    assert outcome.strategy == f"incremental: append the delta · {IN_PROCESS}", outcome.strategy
    assert outcome.rows_written == sum(1 for i in range(300, 325) if i % 7 < 4)
    assert mt.workspace.catalog.load(qualified(mt, "proj")).snapshots[-1].operation == "append"
    assert_matches_oracle(mt, "proj")
    spark.sql(f"INSERT INTO {src} VALUES (6, 'x', 1, 1.00, TIMESTAMP '2024-12-03 00:00:00')")  # filtered out
    outcome = refresh(mt, "proj")
    assert outcome.strategy.endswith(IN_PROCESS) and outcome.rows_written == 0
    state = mt.workspace.catalog.load(qualified(mt, "proj")).snapshots[-1].refresh_state  # committed all the same
    assert (
        state is not None and state.source_states[0].snapshot_id == mt.workspace.catalog.load(src).current_snapshot_id
    )


def test_a_merge_partitioned_by_a_group_key_reads_and_rewrites_only_the_touched_partitions(
    spark, mt, src, monkeypatch
) -> None:
    table = qualified(mt, "by_g")
    run(
        mt,
        "CREATE MATERIALIZED TABLE by_g PARTITIONED BY (g) FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT g, k, count(*) AS n, max(ts) AS hi FROM src GROUP BY g, k",
    )

    def files() -> dict[str, set[str]]:
        by_partition: dict[str, set[str]] = {}
        for row in spark.sql(f"SELECT partition.g AS g, file_path FROM {table}.files").collect():
            by_partition.setdefault(row.g, set()).add(row.file_path)
        return by_partition

    before = files()
    assert sorted(before) == ["g0", "g1", "g2"]  # 7 groups each: 21 rows
    monkeypatch.setattr(eligibility, "IN_PROCESS_MAX_ROWS", 12)  # over the table, not over one partition + delta
    spark.sql(f"INSERT INTO {src} VALUES (1, 'g1', 5, 1.00, TIMESTAMP '2024-12-05 00:00:00')")
    outcome = refresh(mt, "by_g")
    assert outcome.strategy == f"incremental: merge the aggregated delta · partitions g (1 value(s)) · {IN_PROCESS}"
    after = files()
    assert after["g0"] == before["g0"] and after["g2"] == before["g2"] and after["g1"] != before["g1"]
    assert_matches_oracle(mt, "by_g")


def test_the_engine_option_pins_spark_and_is_checked(spark, mt, src) -> None:
    run(
        mt,
        f"CREATE MATERIALIZED TABLE on_spark WITH ('incremental.engine' = 'spark') "
        f"FRESHNESS = INTERVAL '1' MINUTE AS {AGG}",
    )
    _append(spark, src, 400)
    outcome = refresh(mt, "on_spark")
    assert outcome.strategy == "incremental: merge the aggregated delta"
    assert_matches_oracle(mt, "on_spark")
    with pytest.raises(Exception, match="'incremental.engine' = 'duck'.*'auto'.*'spark'"):
        run(mt, f"CREATE MATERIALIZED TABLE bad WITH ('incremental.engine' = 'duck') AS {AGG}")
    assert not spark.catalog.tableExists(qualified(mt, "bad"))


def test_a_failure_before_the_commit_runs_the_refresh_on_spark(spark, mt, src, monkeypatch) -> None:
    from mt_magic.catalog import rows

    run(mt, f"CREATE MATERIALIZED TABLE agg2 FRESHNESS = INTERVAL '1' MINUTE AS {AGG}")

    def unreadable(*args, **kwargs):
        raise rows.NotReadableInProcess("test: delete files")

    monkeypatch.setattr(rows, "appended_rows", unreadable)
    _append(spark, src, 500)
    outcome = refresh(mt, "agg2")
    assert outcome.strategy == "incremental: merge the aggregated delta"
    assert_matches_oracle(mt, "agg2")


def test_a_writer_committing_between_the_check_and_the_commit_fails_it(spark, mt, src, monkeypatch) -> None:
    from mt_magic.catalog import rows

    run(mt, f"CREATE MATERIALIZED TABLE agg3 FRESHNESS = INTERVAL '1' MINUTE AS {AGG}")
    table = qualified(mt, "agg3")
    real = rows.commit_files

    def after_another_writer(*args, **kwargs):
        spark.sql(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
        return real(*args, **kwargs)

    monkeypatch.setattr(rows, "commit_files", after_another_writer)
    _append(spark, src, 600)
    before = mt.workspace.catalog.load(table).current_snapshot_id
    with pytest.raises(RefreshConflictError, match="changed during the refresh"):
        refresh(mt, "agg3")
    after = mt.workspace.catalog.load(table)
    assert after.snapshots[-2].snapshot_id == before and after.snapshots[-1].refresh_state is None  # only the intruder


QUERIES = {
    "groups": AGG,
    "total": "SELECT count(*) AS n, sum(p) AS sp, max(g) AS top, min(ts) AS lo FROM src WHERE g IN ('g1', 'g2')",
    "distinct": "SELECT DISTINCT g, k FROM src WHERE v IS NULL OR v >= 10",
    "rows": "SELECT k, g, p, ts FROM src WHERE p BETWEEN 1 AND 4 OR g = 'g0'",
    "star": "SELECT * FROM src WHERE k > 2",
}


PARTITIONED = {"groups_by_g": "groups", "rows_by_g": "rows"}
"""Shapes also kept in a table partitioned by ``g`` (identity; NULL and string partition values): pyiceberg
writes the partitions in process."""


def test_identity_partitions_may_run_in_process_other_transforms_run_on_spark() -> None:
    assert in_process.partitioning_reason(()) is None
    assert in_process.partitioning_reason(("identity", "identity")) is None
    assert in_process.partitioning_reason(("identity", "bucket[16]")) == "a bucket[16] partition transform"
    assert in_process.partitioning_reason(("identity",), spec_count=2) == "an evolved partition spec"


def _random_rows(rng, count: int) -> str:
    def value(make) -> str:  # type: ignore[no-untyped-def]
        return "NULL" if rng.random() < 0.15 else make()

    rows = []
    for _ in range(count):
        k = value(lambda: str(rng.randint(0, 8)))
        g = value(lambda: f"'g{rng.randint(0, 4)}'")
        v = value(lambda: str(rng.randint(-(2**40), 2**40)))
        p = value(lambda: f"{rng.randint(-99999, 99999) / 100:.2f}")
        ts = value(lambda: f"TIMESTAMP '2024-12-0{rng.randint(1, 9)} {rng.randint(0, 23):02d}:00:00'")
        rows.append(f"({k}, {g}, {v}, {p}, {ts})")
    return ", ".join(rows)


ENGINES = ("auto", "spark")
UTC_SESSION = ", 'spark.sql.session.timeZone' = 'UTC'"


def _create_twins(mt, shapes: dict[str, tuple[str, str]], options: str = "") -> None:
    """For each name → (query, head): ``<name>_auto`` (in process where it may) and ``<name>_spark`` (pinned to
    Spark), ``head`` before WITH (e.g. PARTITIONED BY), ``options`` more WITH options."""
    cells = [
        f"CREATE MATERIALIZED TABLE {name}_{engine} {head}WITH ('incremental.engine' = '{engine}'{options}) "
        f"FRESHNESS = INTERVAL '1' MINUTE AS {query}"
        for name, (query, head) in shapes.items()
        for engine in ENGINES
    ]
    run(mt, ";".join(cells))


def test_in_process_and_spark_agree_under_random_appends(spark, mt, src) -> None:
    """Differential: every query on both engines, after every seeded random append (NULLs everywhere)."""
    import random

    rng = random.Random(15)
    shapes = {name: (query, "") for name, query in QUERIES.items()}
    shapes.update({name: (QUERIES[base], "PARTITIONED BY (g) ") for name, base in PARTITIONED.items()})
    _create_twins(mt, shapes)
    for _ in range(4):
        spark.sql(f"INSERT INTO {src} VALUES {_random_rows(rng, rng.randint(1, 30))}")
        for name in shapes:
            in_process_outcome, spark_outcome = refresh(mt, f"{name}_auto"), refresh(mt, f"{name}_spark")
            assert in_process_outcome.strategy.endswith(IN_PROCESS), in_process_outcome.strategy
            assert IN_PROCESS not in spark_outcome.strategy
            assert_matches_oracle(mt, f"{name}_auto")
            assert_matches_oracle(mt, f"{name}_spark")
        for name in PARTITIONED:  # Spark prunes by the partition values pyiceberg wrote
            for where in ("g = 'g1'", "g IS NULL", "g > 'g2'"):
                rows = [
                    sorted(
                        map(repr, spark.sql(f"SELECT * FROM {qualified(mt, f'{name}_{e}')} WHERE {where}").collect())
                    )
                    for e in ("auto", "spark")
                ]
                assert rows[0] == rows[1], f"{name} WHERE {where}: {rows[0]} != {rows[1]}"


@pytest.mark.parametrize(("zone", "in_process"), [("UTC", True), ("America/Los_Angeles", False)])
def test_an_hourly_aggregate_merges_in_process_in_utc_and_on_spark_elsewhere(spark, mt, src, zone, in_process) -> None:
    hourly = HOURLY.replace(SRC, "src")
    name = f"hourly_{'utc' if in_process else 'la'}"
    run(
        mt,
        f"CREATE MATERIALIZED TABLE {name} WITH ('spark.sql.session.timeZone' = '{zone}') "
        f"FRESHNESS = INTERVAL '1' MINUTE AS {hourly}",
    )
    for start in (700, 800):
        _append(spark, src, start)
        outcome = refresh(mt, name)
        assert outcome.strategy.startswith("incremental: merge the aggregated delta"), outcome.strategy
        assert outcome.strategy.endswith(IN_PROCESS) is in_process, outcome.strategy
        assert_matches_oracle(mt, name)


UNITS = ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND")


def _random_instants(rng, count: int) -> str:
    """Instants from year 2 to 9999, the Julian-Gregorian gap, leap days and microseconds (NULLs too)."""
    picks = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.1:
            picks.append("NULL")
            continue
        # from year 2: PySpark cannot hand Python an instant of 0001-01-01 (datetime.fromtimestamp refuses it)
        year = rng.choice((2, 999, 1500, 1582, 1583, 1900, 1970, 2000, 2024, 2038, 9999)) if roll < 0.6 else None
        year = year or rng.randint(2, 9999)
        month, day = (10, rng.randint(1, 20)) if year == 1582 and rng.random() < 0.5 else (rng.randint(1, 12), 28)
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)  # proleptic Gregorian, as Spark's
        day = 29 if month == 2 and leap and rng.random() < 0.5 else rng.randint(1, day)
        clock = (
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}"
        )
        picks.append(f"TIMESTAMP '{year:04d}-{month:02d}-{day:02d} {clock}'")
    return ", ".join(f"({i}, {p})" for i, p in enumerate(picks))


def test_date_trunc_in_process_and_on_spark_agree_under_random_instants(spark, mt) -> None:
    """Differential: every unit, grouped and projected, in process and pinned to Spark, after seeded appends."""
    import random

    rng = random.Random(29)
    name = qualified(mt, "instants")
    spark.sql(f"CREATE TABLE {name} (k INT, ts TIMESTAMP) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES {_random_instants(rng, 40)}")
    queries = {
        f"{unit.lower()}_g": f"SELECT date_trunc('{unit}', ts) AS t, count(*) AS n, min(ts) AS lo FROM instants "
        f"GROUP BY date_trunc('{unit}', ts)"
        for unit in UNITS
    }
    for unit in ("WEEK", "hour", "Second"):  # a projection, the unit in any case
        queries[f"{unit.lower()}_p"] = (
            f"SELECT k, date_trunc('{unit}', ts) AS t FROM instants WHERE date_trunc('{unit}', ts) < ts"
        )
    _create_twins(mt, {f"tr_{label}": (query, "") for label, query in queries.items()}, UTC_SESSION)
    tables = [f"tr_{label}_{engine}" for label in queries for engine in ENGINES]
    for _ in range(2):
        spark.sql(f"INSERT INTO {name} VALUES {_random_instants(rng, rng.randint(10, 30))}")
        for table in tables:
            outcome = refresh(mt, table)
            assert outcome.strategy.endswith(IN_PROCESS) is table.endswith("_auto"), f"{table}: {outcome.strategy}"
            assert_matches_oracle(mt, table)
