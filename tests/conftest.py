"""Session-scoped fixtures shared by every test layer: one real SparkSession with Iceberg per run.

The run's own MT_MAGIC_HOME is set in the repository's root conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="session")
def spark():
    """The one real SparkSession (local[2], Iceberg extensions and jars) shared by all Spark tests."""
    from mt_magic.runtime.session import SparkSettings, get_or_create_session

    session = get_or_create_session(SparkSettings(master="local[2]", driver_memory="3g"))
    yield session
    session.stop()


@pytest.fixture
def hadoop_catalog(spark, tmp_path: Path) -> str:
    """A throw-away Iceberg Hadoop catalog registered on the shared session; returns its name."""
    name = f"h{abs(hash(tmp_path)) % 10**8}"
    spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", str(tmp_path / "warehouse"))
    return name
