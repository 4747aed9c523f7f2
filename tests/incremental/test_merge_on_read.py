"""Differential tests over merge-on-read sources: position deletes (format v2), deletion vectors (format v3) and
equality deletes (written through Iceberg's Java API: Spark never writes them). After EVERY refresh the table
equals its query run at the source snapshots the new refresh state records, and the refresh was incremental
(a silent fallback fails the test) — with duplicate rows, several snapshots per refresh, a delete that removes
whole files, and a compaction inside the range.
"""

from __future__ import annotations

import os
import random

import pytest
from incremental_testing import assert_matches_oracle, qualified, refresh, run

from mt_magic.runtime.refresh.incremental import FallbackReason, explain
from mt_magic.runtime.spark.connect import is_connect
from mt_magic.vocabulary import RefreshKind

pytestmark = [pytest.mark.spark, pytest.mark.differential]

ROUNDS = int(os.environ.get("MT_DIFFERENTIAL_ROUNDS", "1"))
"""Random rounds after the fixed ones (``MT_DIFFERENTIAL_ROUNDS`` raises them for a soak)."""

QUERIES = {
    "agg": "SELECT g, count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM src GROUP BY g",
    "proj": "SELECT k, g, v * 2 AS v2 FROM src WHERE v IS NULL OR v % 3 <> 0",
    "joined": "SELECT s.k, s.v, d.name FROM src s JOIN dim d ON s.k = d.k",
}


def mor(version: int) -> str:
    return (
        f"TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = 'merge-on-read', "
        "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
    )


class MergeOnReadWriter:
    """Random appends (with duplicate rows), deletes, updates and merges on ``src (k INT, g STRING, v INT)``."""

    def __init__(self, spark, rng: random.Random) -> None:
        self.spark, self.rng = spark, rng

    def append(self) -> None:
        rng = self.rng
        rows = [f"({rng.randint(0, 5)}, 'g{rng.randint(0, 2)}', {rng.choice(['NULL', rng.randint(-3, 9)])})"]
        rows += [rows[0]] * rng.randint(0, 2)  # duplicates: the delta must keep the multiset exact
        rows += [f"({rng.randint(0, 5)}, 'g{rng.randint(0, 2)}', {rng.randint(-3, 9)})" for _ in range(3)]
        self.spark.sql(f"INSERT INTO src VALUES {', '.join(rows)}")

    def delete(self) -> None:
        self.spark.sql(f"DELETE FROM src WHERE k = {self.rng.randint(0, 5)} OR v = {self.rng.randint(-3, 9)}")

    def update(self) -> None:
        change = self.rng.choice(["v = v + 1", "g = 'g9'", "k = k + 1", "v = NULL"])
        self.spark.sql(f"UPDATE src SET {change} WHERE k = {self.rng.randint(0, 5)}")

    def merge(self) -> None:
        k = self.rng.randint(0, 6)
        self.spark.sql(
            f"MERGE INTO src t USING (SELECT {k} AS k, 'g1' AS g, 7 AS v) u ON t.k = u.k "
            "WHEN MATCHED THEN UPDATE SET t.v = t.v + u.v WHEN NOT MATCHED THEN INSERT *"
        )


def create_sources(spark, version: int, partitioned: bool) -> None:
    spec = "PARTITIONED BY (g)" if partitioned else ""
    spark.sql(f"CREATE TABLE src (k INT, g STRING, v INT) USING iceberg {spec} {mor(version)}")
    spark.sql("INSERT INTO src VALUES (1, 'g0', 1), (1, 'g0', 1), (2, 'g1', 5), (3, 'g2', NULL), (4, 'g0', 8)")
    spark.sql("INSERT INTO src VALUES (0, 'g1', 2), (5, 'g2', 3), (2, 'g1', 5)")
    spark.sql(f"CREATE TABLE dim (k INT, name STRING) USING iceberg {mor(version)}")
    spark.sql("INSERT INTO dim VALUES " + ", ".join(f"({k}, 'n{k}')" for k in range(0, 7, 2)) + ", (2, 'two')")


def create_tables(mt) -> None:
    run(
        mt,
        ";\n".join(
            f"CREATE MATERIALIZED TABLE {name} FRESHNESS = INTERVAL '1' MINUTE AS {query}"
            for name, query in QUERIES.items()
        ),
    )


def assert_incremental_and_equal(mt, context: str) -> None:
    for name in QUERIES:
        outcome = refresh(mt, name)
        assert outcome.kind is RefreshKind.INCREMENTAL, f"{context}: {name}: {outcome.strategy}"
        assert outcome.strategy.startswith("incremental:"), outcome.strategy
        _, state = mt.workspace.catalog.load(qualified(mt, name)).last_refresh()
        assert state.strategy == outcome.strategy  # the history says so too
        assert_matches_oracle(mt, name)
        # the refresh's child session never becomes the user's active one (PySpark's createDataFrame would make
        # it so: every later getActiveSession() in the process — connect(), the user's code — got the child)
        if not is_connect(mt.workspace.spark):
            from pyspark.sql import SparkSession

            assert SparkSession.getActiveSession() is mt.workspace.spark


def delete_files(mt, snapshot_key: str) -> int:
    """The last snapshot of ``src``'s summary count ``snapshot_key`` (e.g. added-dvs)."""
    summary = mt.workspace.catalog.load(qualified(mt, "src")).snapshots[-1].summary
    return int(summary.get(snapshot_key, "0"))


@pytest.mark.parametrize(
    ("version", "partitioned", "seed", "marker"),
    [(2, True, 1, "added-position-delete-files"), (3, False, 2, "added-dvs")],
    ids=["v2-position-deletes-partitioned", "v3-deletion-vectors"],
)
def test_merge_on_read_sources_stay_incremental_and_equal_a_recompute(
    mt, spark, version: int, partitioned: bool, seed: int, marker: str
) -> None:
    rng = random.Random(seed)
    create_sources(spark, version, partitioned)
    create_tables(mt)
    writer = MergeOnReadWriter(spark, rng)

    writer.delete()
    assert delete_files(mt, marker) >= 1 or delete_files(mt, "deleted-data-files") >= 1
    writer.update()
    assert delete_files(mt, marker) >= 1  # an UPDATE deletes by position and appends: a delete file
    spark.sql("UPDATE dim SET name = 'zwei' WHERE k = 2")  # the join's other side changes by delete files too
    assert_incremental_and_equal(mt, "delete + update, two snapshots in one range")

    for round_ in range(ROUNDS):
        writer.merge()
        getattr(writer, rng.choice(["append", "delete", "update"]))()
        assert_incremental_and_equal(mt, f"round {round_}")

    spark.sql("DELETE FROM src WHERE g = 'g2'" if partitioned else "DELETE FROM src WHERE k >= 0 OR k IS NULL")
    writer.append()
    assert_incremental_and_equal(mt, "a delete that removes whole files")

    writer.update()
    spark.sql(
        f"CALL {qualified(mt, 'src').split('.')[0]}.system.rewrite_data_files(table => "
        f"'{mt.workspace.default_namespace}.src', options => map('rewrite-all', 'true', 'delete-file-threshold', '1'))"
    )
    writer.delete()
    assert_incremental_and_equal(mt, "a compaction between changes")


def write_equality_delete(spark, table: str, column: str, values: list[int]) -> None:
    """Commit one equality delete file on an unpartitioned table through Iceberg's Java API (Spark's own writes
    never produce equality deletes; pyiceberg 0.10 cannot write delete files)."""
    jvm = spark.sparkContext._jvm
    iceberg = jvm.org.apache.iceberg
    loaded = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    schema = loaded.schema()
    delete_schema = schema.select([column])  # Schema.select(Collection<String>): py4j converts the list
    ids = spark.sparkContext._gateway.new_array(jvm.int, 1)
    ids[0] = schema.findField(column).fieldId()
    factory = iceberg.data.GenericAppenderFactory(schema, loaded.spec(), ids, delete_schema, None)
    location = loaded.locationProvider().newDataLocation(f"eq-delete-{random.randrange(10**9)}.parquet")
    output = iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(loaded.io().newOutputFile(location))
    writer = factory.newEqDeleteWriter(output, iceberg.FileFormat.PARQUET, None)
    for value in values:
        record = iceberg.data.GenericRecord.create(delete_schema)
        record.setField(column, value)
        writer.write(record)
    writer.close()
    loaded.newRowDelta().addDeletes(writer.toDeleteFile()).commit()


def _has_java_class(spark, name: str) -> bool:
    """Whether py4j finds the class (it answers a JavaPackage for a name it cannot load)."""
    from py4j.java_gateway import JavaClass

    found = spark.sparkContext._jvm
    for part in name.split("."):
        found = getattr(found, part)
    return isinstance(found, JavaClass)


def test_equality_deletes_stay_incremental_and_equal_a_recompute(mt, spark) -> None:
    if is_connect(spark):
        pytest.skip("writing an equality delete file needs Iceberg's Java API in this process (classic Spark)")
    if not _has_java_class(spark, "org.apache.iceberg.data.GenericAppenderFactory"):
        # The Spark 4.x runtime jar leaves out iceberg-data's writers; the reading side under test is the same code
        # on both lines, and the 3.5 line writes the deletes.
        pytest.skip("this Iceberg Spark runtime has no GenericAppenderFactory to write an equality delete file with")
    create_sources(spark, 2, False)
    create_tables(mt)
    writer = MergeOnReadWriter(spark, random.Random(3))

    write_equality_delete(spark, qualified(mt, "src"), "k", [1, 4])  # both copies of the duplicate go
    assert delete_files(mt, "added-equality-delete-files") == 1
    assert_incremental_and_equal(mt, "an equality delete")
    assert not spark.sql("SELECT * FROM src WHERE k IN (1, 4)").count()

    writer.append()
    write_equality_delete(spark, qualified(mt, "src"), "k", [2])
    writer.update()  # a position delete after the equality delete, in the same range
    write_equality_delete(spark, qualified(mt, "dim"), "k", [0])
    assert_incremental_and_equal(mt, "equality and position deletes in one range, on both sides of a join")


def test_explain_no_longer_calls_merge_on_read_a_fallback(mt, spark) -> None:
    create_sources(spark, 2, True)
    create_tables(mt)
    MergeOnReadWriter(spark, random.Random(4)).delete()
    explanation = explain(mt.workspace, qualified(mt, "agg"))
    text = str(explanation)
    assert "force a full refresh" not in text and "full recompute" not in text, text
    assert "rows of the data files the delete files touch" in text, text
    assert explanation.next_refresh.startswith("incremental: "), explanation.next_refresh
    assert "row-level (1 snapshot(s))" in explanation.next_refresh, explanation.next_refresh
    assert FallbackReason.MERGE_ON_READ_DELETES.name not in text, text
