"""The client: pyiceberg's configuration conventions, the embedded fallback, Spark settings, masking."""

from __future__ import annotations

from pathlib import Path

import pytest

from mt_magic.catalog.client import (
    CatalogConfig,
    configured_catalog,
    masked,
    open_catalog,
    resolve_catalog,
    spark_catalog_conf,
)
from mt_magic.catalog.embedded import EmbeddedServer, running_server, stop_embedded_server
from mt_magic.catalog.errors import CatalogConfigError
from mt_magic.errors import CatalogError


@pytest.fixture
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point pyiceberg's config search at empty directories and drop PYICEBERG_* variables."""
    import os

    for key in [k for k in os.environ if k.upper().startswith("PYICEBERG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_environment_variables_configure_a_catalog(
    no_user_config: Path, monkeypatch: pytest.MonkeyPatch, catalog_server: EmbeddedServer
) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", catalog_server.uri)
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__TOKEN", catalog_server.token or "")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__S3__ENDPOINT", "http://minio:9000")
    config = configured_catalog("lake")
    assert config is not None and not config.embedded
    assert config.properties["s3.endpoint"] == "http://minio:9000"
    assert resolve_catalog("lake") == config  # configured wins over the embedded default
    open_catalog(config).list_namespaces()  # reachable with the configured token


def test_yaml_file_in_pyiceberg_home_configures_the_default_catalog(no_user_config: Path) -> None:
    (no_user_config / ".pyiceberg.yaml").write_text(
        "default-catalog: warehouse1\ncatalog:\n  warehouse1:\n    uri: https://rest.example.com/api\n"
        "    credential: client:secret\n    warehouse: analytics\n"
    )
    config = configured_catalog()
    assert config is not None and config.name == "warehouse1"
    assert dict(config.properties) == {
        "uri": "https://rest.example.com/api",
        "credential": "client:secret",
        "warehouse": "analytics",
        "type": "rest",
    }


def test_non_rest_catalog_is_refused_with_the_reason(no_user_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__LOCAL__URI", "sqlite:///x.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__LOCAL__TYPE", "sql")
    with pytest.raises(CatalogConfigError, match="'local' has type 'sql'; mt_magic needs an Iceberg REST"):
        configured_catalog("local")
    with pytest.raises(CatalogConfigError, match="no REST uri"):
        CatalogConfig("bad", {"uri": "thrift://hive:9083"})


def test_unconfigured_name_falls_back_to_the_embedded_server(no_user_config: Path, tmp_path: Path) -> None:
    home = tmp_path / "mt_home"
    assert configured_catalog("mt") is None
    try:
        config = resolve_catalog("mt", home=home)
        assert config.embedded and config.properties["token"]
        server = running_server(home)
        assert server is not None and config.uri == server.uri
        assert resolve_catalog("mt", home=home) == config  # reused, not restarted
        catalog = open_catalog(config)
        catalog.create_namespace("fallback")
        assert ("fallback",) in catalog.list_namespaces()
    finally:
        stop_embedded_server(home)


def test_spark_conf_carries_connection_auth_and_io_settings() -> None:
    config = CatalogConfig(
        "lake",
        {
            "uri": "https://rest.example.com",
            "warehouse": "wh",
            "token": "t0k",
            "credential": "id:secret",
            "scope": "PRINCIPAL_ROLE:ALL",
            "s3.endpoint": "http://minio:9000",
            "s3.region": "eu-west-1",
            "s3.access-key-id": "AK",
            "s3.secret-access-key": "SK",
            "header.X-Iceberg-Access-Delegation": "vended",
            "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            "ssl": {"cabundle": "/ca.pem"},
        },
    )
    conf = spark_catalog_conf(config, spark_name="spark_lake")
    p = "spark.sql.catalog.spark_lake"
    assert conf == {
        p: "org.apache.iceberg.spark.SparkCatalog",
        f"{p}.type": "rest",
        f"{p}.cache-enabled": "false",
        f"{p}.uri": "https://rest.example.com",
        f"{p}.warehouse": "wh",
        f"{p}.token": "t0k",
        f"{p}.credential": "id:secret",
        f"{p}.scope": "PRINCIPAL_ROLE:ALL",
        f"{p}.rest.auth.type": "oauth2",
        f"{p}.s3.endpoint": "http://minio:9000",
        f"{p}.client.region": "eu-west-1",
        f"{p}.s3.access-key-id": "AK",
        f"{p}.s3.secret-access-key": "SK",
        f"{p}.header.X-Iceberg-Access-Delegation": "vended",
    }
    assert spark_catalog_conf(config)["spark.sql.catalog.lake.type"] == "rest"


def test_masked_hides_every_secret_and_nothing_else() -> None:
    config = CatalogConfig(
        "lake",
        {
            "uri": "https://rest.example.com",
            "token": "t0k",
            "credential": "id:secret",
            "s3.access-key-id": "AK",
            "s3.secret-access-key": "SK",
            "adls.sas-token.acct": "sas",
            "warehouse": "wh",
            "auth": {"type": "oauth2", "oauth2": {"client_secret": "cs", "client_id": "ci"}},
        },
    )
    shown = masked(config)
    assert shown["token"] == shown["credential"] == shown["s3.secret-access-key"] == "****"
    assert shown["adls.sas-token.acct"] == "****" and shown["auth"]["oauth2"]["client_secret"] == "****"
    assert shown["uri"] == "https://rest.example.com" and shown["s3.access-key-id"] == "AK"
    assert shown["auth"]["oauth2"]["client_id"] == "ci" and shown["warehouse"] == "wh"
    assert "t0k" not in repr(shown) and "SK" not in repr(shown)


def test_unreachable_catalog_is_a_catalog_error() -> None:
    with pytest.raises(CatalogError, match="Cannot open catalog 'down' at http://127.0.0.1:9"):
        open_catalog(CatalogConfig("down", {"uri": "http://127.0.0.1:9"}))
