"""Which Iceberg REST catalog mt_magic uses, how pyiceberg opens it, and what Spark needs to reach it.

The catalog is found with pyiceberg's own conventions, so users configure it once for every tool:
``~/.pyiceberg.yaml`` (or ``$PYICEBERG_HOME/.pyiceberg.yaml``) and ``PYICEBERG_CATALOG__<NAME>__<KEY>``
environment variables. With nothing configured under the name, the embedded server of
``$MT_MAGIC_HOME`` is started (or reused) and used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlparse

from mt_magic.catalog.errors import CatalogConfigError
from mt_magic.loopback import direct_session, is_loopback

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

DEFAULT_NAME = "mt"
SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"

# pyiceberg property -> Iceberg Java (Spark) catalog property, where the names differ.
_JAVA_NAMES = {"s3.region": "client.region"}
# Passed to Spark as they are: REST connection and auth settings, and FileIO settings Java understands.
_SPARK_KEYS = frozenset(
    {
        "uri",
        "warehouse",
        "token",
        "credential",
        "scope",
        "audience",
        "resource",
        "oauth2-server-uri",
        "prefix",
        "rest.auth.type",
        "io-impl",
        "snapshot-loading-mode",
        "rest.sigv4-enabled",
        "rest.signing-region",
        "rest.signing-name",
    }
)
_SPARK_PREFIXES = ("s3.", "client.", "gcs.", "adls.", "header.")
_SECRET_WORDS = ("token", "secret", "password", "credential", "key", "sas", "authorization")


def _is_secret(key: str) -> bool:
    key = key.lower()
    return any(word in key for word in _SECRET_WORDS) and not key.endswith(("key-id", "access-key-id"))


@dataclass(frozen=True)
class CatalogConfig:
    """A catalog as pyiceberg properties (``type``, ``uri``, ``token``, ``warehouse``, ``s3.*``, …).

    Attributes:
        name: the catalog's name in pyiceberg's configuration, and by default in Spark.
        properties: pyiceberg catalog properties; read-only.
        embedded: True for the embedded server started by mt_magic.
    """

    name: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    embedded: bool = False

    def __post_init__(self) -> None:
        props = dict(self.properties)
        kind = str(props.get("type", "rest")).lower()
        if kind != "rest":
            raise CatalogConfigError(
                f"Catalog {self.name!r} has type {kind!r}; mt_magic needs an Iceberg REST catalog "
                "(set its 'uri' to the REST endpoint and 'type: rest')."
            )
        uri = props.get("uri")
        if not isinstance(uri, str) or not uri.startswith(("http://", "https://")):
            raise CatalogConfigError(
                f"Catalog {self.name!r} has no REST uri (got {uri!r}); set "
                f"PYICEBERG_CATALOG__{self.name.upper()}__URI=http://host:port or 'uri' in .pyiceberg.yaml."
            )
        props["type"] = "rest"
        object.__setattr__(self, "properties", MappingProxyType(props))

    @property
    def uri(self) -> str:
        return str(self.properties["uri"])

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable (a read-only mapping is not), so a config can be handed to worker processes."""
        return (CatalogConfig, (self.name, dict(self.properties), self.embedded))


def masked(config: CatalogConfig) -> dict[str, Any]:
    """The properties for display: secrets (tokens, credentials, keys, passwords) shown as ``****``."""

    def mask(key: str, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: mask(k, v) for k, v in value.items()}
        return "****" if _is_secret(key) and value else value

    return {key: mask(key, value) for key, value in config.properties.items()}


def configured_catalog(name: str | None = None) -> CatalogConfig | None:
    """The catalog configured for pyiceberg under ``name`` (default: pyiceberg's default catalog), if any.

    Raises:
        CatalogConfigError: a catalog is configured under that name but is not a usable REST catalog.
    """
    from pyiceberg.utils.config import Config

    config = Config()  # re-read: the files and environment may have changed since import
    name = name or config.get_default_catalog_name()
    properties = config.get_catalog_config(name)
    if not properties:
        return None
    return CatalogConfig(name=name, properties=dict(properties))


def resolve_catalog(name: str = DEFAULT_NAME, home: Path | None = None) -> CatalogConfig:
    """The configured catalog ``name``, else the embedded server (started or reused).

    Raises:
        CatalogConfigError: the configured catalog is unusable.
        EmbeddedServerError: the embedded server could not be started.
    """
    configured = configured_catalog(name)
    if configured is not None:
        return configured
    from mt_magic.catalog.embedded import ensure_embedded_server

    server = ensure_embedded_server(home)
    properties = {"type": "rest", "uri": server.uri, "warehouse": server.warehouse}
    if server.token:
        properties["token"] = server.token
    return CatalogConfig(name=name, properties=properties, embedded=True)


def open_catalog(config: CatalogConfig) -> Catalog:
    """A pyiceberg catalog for ``config`` (``pyiceberg.catalog.load_catalog``); one on this machine's loopback
    interface is reached directly, never through ``HTTP_PROXY``/``HTTPS_PROXY`` (the token travels in every request).
    With a local warehouse, the files its tables' writes create are their owner's only (:data:`OWNER_ONLY_IO`).

    Raises:
        CatalogError: the catalog cannot be reached or refuses the configuration.
    """
    from pyiceberg.catalog import load_catalog

    from mt_magic.errors import CatalogError

    try:
        if is_loopback(urlparse(config.uri).hostname):
            catalog = _direct_catalog(config)
        else:
            catalog = load_catalog(config.name, **dict(config.properties))
    except Exception as exc:  # requests/pyiceberg raise many kinds; the caller needs one
        raise CatalogError(f"Cannot open catalog {config.name!r} at {config.uri}: {exc}") from exc
    _retry_reads_on_dropped_connections(catalog)
    _owner_only_local_files(catalog)
    return catalog


OWNER_ONLY_IO = "mt_magic.catalog.owner_only_io.OwnerOnlyFileIO"
"""pyiceberg's PyArrow FileIO creating local files 0600 and folders 0700 (the process's umask is 022 on most
machines: the data files and manifests an in-process refresh writes would be 0644)."""


def _owner_only_local_files(catalog: Catalog) -> None:
    """Make :data:`OWNER_ONLY_IO` the FileIO of ``catalog``'s tables when its warehouse (the configuration's, or what
    the server's ``/v1/config`` said) is local or not named, and no FileIO was chosen (a table's own ``py-io-impl``
    from the server still wins). pyiceberg picks PyArrow's FileIO for local paths, S3 and GCS alike; only for the
    schemes it would give fsspec first (Azure, Hugging Face) does this change which library reads them."""
    from mt_magic.catalog.embedded import local_path

    properties = catalog.properties
    warehouse = properties.get("warehouse")
    if "py-io-impl" in properties or (warehouse and local_path(str(warehouse)) is None):
        return
    properties["py-io-impl"] = OWNER_ONLY_IO


def _direct_catalog(config: CatalogConfig) -> Catalog:
    """``load_catalog``'s REST catalog (the same merge of pyiceberg's configuration), whose HTTP session ignores the
    environment's proxies from its first request (the ``/v1/config`` its constructor sends)."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.utils.config import Config, merge_config
    from requests import Session

    class DirectRestCatalog(RestCatalog):
        def _create_session(self) -> Session:
            return direct_session(config.uri, super()._create_session())

    properties = merge_config(Config().get_catalog_config(config.name) or {}, dict(config.properties))
    return DirectRestCatalog(config.name, **cast("dict[str, str]", properties))


RETRIED_METHODS = frozenset({"GET", "HEAD"})
"""The requests sent again when their connection drops: they change nothing, so a second try is safe. A commit
(POST) is not: the server may have applied it, and only the caller can tell (its conflict check)."""


def _retry_reads_on_dropped_connections(catalog: Catalog) -> None:
    """Send a read again (up to twice) when the server drops or resets its connection before answering.

    A client reuses an idle keep-alive connection; when a server (or a proxy before it) closes that
    connection just as the client sends on it, the request fails with "Connection reset by peer" although
    the catalog is up. requests retries nothing by default; pyiceberg's REST catalog takes its session as
    requests makes it, so its adapters are replaced here (a more specific one pyiceberg mounts, SigV4's on
    the catalog's URI, still wins).
    """
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = getattr(catalog, "_session", None)
    if session is None:
        return
    retry = Retry(total=2, connect=2, read=2, status=0, other=0, allowed_methods=RETRIED_METHODS, raise_on_status=False)
    for prefix in ("http://", "https://"):
        session.mount(prefix, HTTPAdapter(max_retries=retry))


def spark_catalog_conf(config: CatalogConfig, spark_name: str | None = None) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>.*`` settings that make Spark use the same catalog.

    Args:
        config: the catalog.
        spark_name: the catalog's name in Spark (default ``config.name``); Spark caches catalogs by name.

    Returns:
        Settings for ``SparkSession.conf.set`` or the session builder: REST type, uri, warehouse, the token (a
        static ``Authorization`` header when it is the only credential) or the OAuth2 settings, FileIO settings
        (``s3.*``, ``client.*``, …), and ``cache-enabled=false`` so every query sees the latest commit.
    """
    prefix = f"spark.sql.catalog.{spark_name or config.name}"
    conf = {prefix: SPARK_CATALOG_CLASS, f"{prefix}.type": "rest", f"{prefix}.cache-enabled": "false"}
    for key, value in config.properties.items():
        if isinstance(value, Mapping) or value is None:
            continue
        java_key = _JAVA_NAMES.get(key, key)
        if key in _SPARK_KEYS or key in _JAVA_NAMES or key.startswith(_SPARK_PREFIXES):
            conf.setdefault(f"{prefix}.{java_key}", str(value))
    props = config.properties
    if props.get("token") and not any(k in props for k in ("credential", "rest.auth.type", "oauth2-server-uri")):
        # A token alone (the embedded server's, a principal's) is a static bearer token, as pyiceberg sends it: no
        # OAuth2 token endpoint is ever asked. Iceberg's OAuth2 client would refresh an expiring (JWT) token at
        # oauth2-server-uri, defaulting to the catalog's /v1/oauth/tokens, which the REST spec deprecates (and
        # mt_magic's server does not serve), and warns on every catalog load when that is not set.
        del conf[f"{prefix}.token"]
        conf.setdefault(f"{prefix}.rest.auth.type", "none")
        conf.setdefault(f"{prefix}.header.Authorization", f"Bearer {props['token']}")
    elif "token" in props or "credential" in props:
        # OAuth2 as configured: a credential's tokens come from its identity provider's oauth2-server-uri. Without
        # one, Iceberg (and pyiceberg) fall back to the catalog's deprecated /v1/oauth/tokens, and say so.
        conf.setdefault(f"{prefix}.rest.auth.type", "oauth2")
    return conf
