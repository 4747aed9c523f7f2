"""The foundation: a real SparkSession writes and reads Iceberg, and set-up problems give clear errors."""

from __future__ import annotations

import pytest

from mt_magic.errors import RuntimeSetupError
from mt_magic.runtime.spark import iceberg_jars, iceberg_maven, session


@pytest.mark.spark
def test_two_inserts_make_two_append_snapshots(spark, hadoop_catalog: str) -> None:
    table = f"{hadoop_catalog}.db.events"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {hadoop_catalog}.db")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'c')")

    rows = spark.sql(f"SELECT id, name FROM {table} ORDER BY id").collect()
    assert [(r.id, r.name) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]
    history = spark.sql(
        f"SELECT operation, summary['added-records'] AS added FROM {table}.snapshots ORDER BY committed_at"
    ).collect()
    assert [(h.operation, h.added) for h in history] == [("append", "2"), ("append", "1")]


@pytest.mark.spark
def test_active_session_is_reused_and_gets_the_catalog(spark, tmp_path) -> None:
    conf = {
        "spark.sql.catalog.reuse_cat": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.reuse_cat.type": "hadoop",
        "spark.sql.catalog.reuse_cat.warehouse": str(tmp_path),
    }
    again = session.get_or_create_session(catalog_conf=conf)
    assert again is spark
    again.sql("CREATE NAMESPACE reuse_cat.ns")
    assert [r[0] for r in again.sql("SHOW NAMESPACES IN reuse_cat").collect()] == ["ns"]


@pytest.mark.spark
def test_spark_ui_is_off_and_logs_are_quiet(spark) -> None:
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(session.shutil, "which", lambda _: None)
    with pytest.raises(RuntimeSetupError, match=r"Java is not installed.*make setup"):
        session.check_java()


def test_missing_offline_jars_are_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("MT_MAGIC_JARS_DIR", str(tmp_path / "empty"))
    with pytest.raises(RuntimeSetupError, match=r"jars are not in .*MT_MAGIC_ICEBERG=offline make setup"):
        iceberg_jars.require_jars()


def test_packages_route_is_configuration_only() -> None:
    conf = session.iceberg_classpath_conf(session.SparkSettings(iceberg="packages"))
    assert conf == {"spark.jars.packages": iceberg_maven.installed_runtime().coordinates}


def test_unknown_iceberg_source_is_rejected() -> None:
    with pytest.raises(RuntimeSetupError, match=r"MT_MAGIC_ICEBERG='ivy'.*'maven', 'packages' or 'offline'"):
        session.SparkSettings(iceberg="ivy")


def test_corrupt_cached_jar_fails_the_presence_check(tmp_path) -> None:
    (tmp_path / iceberg_jars.RUNTIME_JAR).write_bytes(b"not a jar")
    (tmp_path / iceberg_jars.COMPANION_JAR).write_bytes(b"not a jar")
    assert iceberg_jars.cached_jars(tmp_path) is None
