"""The Iceberg runtime from Maven Central: the jar that fits the installed Spark, pinned, cached, and clear
errors when Maven, the pin or the network is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from mt_magic.errors import RuntimeSetupError
from mt_magic.runtime.spark import iceberg_maven, session


def test_each_spark_line_gets_its_own_runtime_artifact() -> None:
    assert iceberg_maven.runtime_for("3.5.9").coordinates == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"
    assert iceberg_maven.runtime_for("4.1.4").coordinates == "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
    assert iceberg_maven.runtime_for("4.0.1", scala="2.13").jar_name == "iceberg-spark-runtime-4.0_2.13-1.10.2.jar"


def test_unsupported_spark_line_names_the_supported_ones() -> None:
    with pytest.raises(RuntimeSetupError, match=r"Spark 3\.4\.1 \(line 3\.4\); supported lines: 3\.5, 4\.0, 4\.1"):
        iceberg_maven.runtime_for("3.4.1")


def test_scala_mismatch_is_refused() -> None:
    with pytest.raises(RuntimeSetupError, match=r"Scala 2\.13, but the pinned runtime is for Scala 2\.12"):
        iceberg_maven.runtime_for("3.5.9", scala="2.13")


def test_installed_pyspark_has_a_pinned_runtime() -> None:
    import pyspark

    version, scala = iceberg_maven.installed_spark()
    runtime = iceberg_maven.installed_runtime()
    assert version == pyspark.__version__
    assert pyspark.__version__.startswith(runtime.spark_line + ".")
    assert scala == runtime.scala


def test_make_setup_cached_the_pinned_jar() -> None:
    runtime = iceberg_maven.installed_runtime()
    jar = iceberg_maven.cached_jar(runtime)
    assert jar is not None, f"run `make setup`: {runtime.jar_name} is not in {iceberg_maven.maven_dir()}"
    assert session.iceberg_classpath_conf(session.SparkSettings(iceberg="maven")) == {"spark.jars": str(jar)}


def test_a_jar_with_another_checksum_is_not_used(tmp_path: Path) -> None:
    runtime = iceberg_maven.installed_runtime()
    (tmp_path / runtime.jar_name).write_bytes(b"PK not the pinned jar")
    assert iceberg_maven.cached_jar(runtime, tmp_path) is None


def test_missing_maven_names_the_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MT_MAGIC_JARS_DIR", str(tmp_path))
    monkeypatch.setattr(iceberg_maven.shutil, "which", lambda _: None)
    with pytest.raises(RuntimeSetupError, match=r"Maven \(`mvn`\) is not installed.*make setup.*apt-get install maven"):
        session.iceberg_classpath_conf(session.SparkSettings(iceberg="maven"))


def test_failed_fetch_shows_mavens_own_words(tmp_path: Path) -> None:
    missing = iceberg_maven.IcebergRuntime("9.9", "2.13", "0.0.0-not-released", "0" * 64)
    with pytest.raises(
        RuntimeSetupError,
        match=r"(?s)Maven could not fetch org\.apache\.iceberg:"
        r"iceberg-spark-runtime-9\.9_2\.13:0\.0\.0-not-released.*ERROR",
    ):
        iceberg_maven.fetch(missing, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_offline_fallback_refuses_spark_4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(iceberg_maven, "installed_spark", lambda: ("4.1.4", "2.13"))
    with pytest.raises(RuntimeSetupError, match=r"offline assembles the runtime for Spark 3\.5 only.*=maven"):
        session.iceberg_classpath_conf(session.SparkSettings(iceberg="offline"))


@pytest.mark.spark
def test_the_session_runs_the_runtime_of_its_spark_line(spark) -> None:
    runtime = iceberg_maven.installed_runtime()
    assert spark.version.startswith(runtime.spark_line + ".")
    jvm = spark.sparkContext._jvm
    catalog_class = jvm.org.apache.spark.util.Utils.classForName(session.ICEBERG_CATALOG_CLASS, True, False)
    assert runtime.jar_name in str(catalog_class.getProtectionDomain().getCodeSource().getLocation())


@pytest.mark.spark
def test_spark_4_sessions_keep_ansi_mode_on(spark) -> None:
    """The refresh engine's SQL is tested under Spark 4's default ANSI mode, not with it switched off."""
    spark_4 = iceberg_maven.installed_runtime().spark_line.startswith("4.")
    assert spark.conf.get("spark.sql.ansi.enabled") == ("true" if spark_4 else "false")
