"""Session-scoped fixtures shared by every test layer: one real SparkSession with Iceberg per run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep every test run's embedded catalog, warehouse and state files out of the user's home."""
    home = tmp_path_factory.mktemp("mt_home")
    old = os.environ.get("MT_MAGIC_HOME")
    os.environ["MT_MAGIC_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("MT_MAGIC_HOME", None)
    else:
        os.environ["MT_MAGIC_HOME"] = old


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
