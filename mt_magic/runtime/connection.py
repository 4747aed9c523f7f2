"""Connect the pieces: catalog (configured or embedded) → Spark session → engine → refresh manager.

Used by the IPython extension and by the headless runner (``python -m mt_magic run``), so a notebook that
defines tables and a service that keeps them fresh run exactly the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mt_magic.catalog.leases import CatalogLeases
from mt_magic.catalog.tables import MaterializedCatalog
from mt_magic.runtime.manager.lease_keeper import DEFAULT_LEASE_TTL, LeaseKeeper, catalog_principal, holder_id
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.manager.watchdog import StallPolicy
from mt_magic.runtime.refresh.engine import Engine
from mt_magic.runtime.service import MaterializedTables
from mt_magic.runtime.spark.quoting import identifier
from mt_magic.runtime.spark.session import SparkSettings, get_or_create_session, spark_jobs, spark_target
from mt_magic.runtime.spark.session_cache import session_cache, settings_before
from mt_magic.runtime.workspace import Workspace, utc_now

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mt_magic.catalog.client import CatalogConfig
    from mt_magic.runtime.manager.loop import Subscriber
    from mt_magic.sql.ddl.freshness import FreshnessRules


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything ``connect`` needs; the magics fill it from their traitlets."""

    catalog_name: str = "mt"
    namespace: str = "default"
    spark: SparkSettings = field(default_factory=SparkSettings)
    max_concurrent_refreshes: int = 2
    rules: FreshnessRules | None = None
    start_manager: bool = True
    """Run the refresh manager's thread (refreshes in the background); ``False`` runs each refresh inline."""
    failures_before_suspend: int = 5
    """Consecutive failed refreshes after which a table suspends itself until RESUME."""
    use_namespace: bool = True
    """Make the catalog and namespace current in the user's session, so queries can use short names."""
    refresher: str = "kernel"
    """How this process appears as the holder of refresh leases ("kernel", "runner"); with a manager only."""
    lease_ttl: timedelta = DEFAULT_LEASE_TTL
    """How long a refresh lease outlives its holder (a crashed kernel's tables wait this long for another)."""
    stall: StallPolicy = field(default_factory=StallPolicy)
    """When a running refresh is flagged STALLED and when the manager gives up on it (``manager.watchdog``)."""


@dataclass
class Connection:
    """A live connection; ``close()`` stops the manager and releases the refreshes' child sessions (the Spark
    session and catalog stay up)."""

    catalog_config: CatalogConfig
    spark: SparkSession
    service: MaterializedTables
    manager: RefreshManager | None

    def close(self, timeout: float = 10.0) -> bool:
        """Stop the manager (running refreshes are cancelled) and release the refreshes' child sessions; True if
        everything ended within ``timeout`` s."""
        stopped = True if self.manager is None else self.manager.stop(timeout)
        self.service.workflows.close()
        self.service.engine.jobs.close()
        self.service.engine.close()
        return stopped

    def describe(self) -> dict[str, str]:
        """The effective settings, for ``%mt config`` (secrets masked)."""
        from mt_magic.catalog.client import masked

        workspace = self.service.workspace
        shown = {f"catalog.{k}": str(v) for k, v in masked(self.catalog_config).items()}
        return {
            "catalog": str(self.catalog_config.name),
            **shown,
            "namespace": workspace.default_namespace,
            **spark_target(self.spark),
            "spark.version": self.spark.version,
            "freshness.threshold": str(workspace.rules.threshold),
            "refresh manager": "running" if self.manager is not None else "off",
        }


def connect(
    settings: ConnectionSettings | None = None,
    clock: Callable[[], datetime] = utc_now,
    subscribers: Sequence[Subscriber] = (),
) -> Connection:
    """Open the catalog (the embedded server when none is configured), the Spark session, and the manager.

    Args:
        settings: what to connect to; the defaults use the embedded catalog.
        clock: the manager's and the workspace's clock.
        subscribers: event callbacks subscribed *before* the manager starts, so they also see the tables it
            discovers and the catch-up refreshes it starts at once (the headless runner logs those).

    Raises:
        RuntimeSetupError: Java, Spark or the Iceberg jars are missing.
        CatalogError: the catalog cannot be opened.
    """
    from mt_magic.catalog.client import open_catalog, resolve_catalog, spark_catalog_conf
    from mt_magic.sql.ddl.freshness import FreshnessRules

    settings = settings or ConnectionSettings()
    catalog_config = resolve_catalog(settings.catalog_name)
    catalog_conf = spark_catalog_conf(catalog_config)
    before = settings_before(catalog_conf)
    spark = get_or_create_session(settings.spark, catalog_conf)
    cache = session_cache(spark, catalog_config.name, catalog_conf, before)
    pyiceberg_catalog = open_catalog(catalog_config)
    pyiceberg_catalog.create_namespace_if_not_exists(settings.namespace)
    if settings.use_namespace:
        spark.sql(f"USE {identifier(catalog_config.name)}.{identifier(settings.namespace)}")
    workspace = Workspace(
        spark=spark,
        catalog=MaterializedCatalog(pyiceberg_catalog, catalog_config.name),
        default_namespace=settings.namespace,
        rules=settings.rules or FreshnessRules(),
        clock=clock,
    )
    engine = Engine(workspace, spark_jobs(spark, catalog_conf), cache)
    retry = RetryPolicy(suspend_after=settings.failures_before_suspend)
    if not settings.start_manager:
        service = MaterializedTables.inline(engine, retry)
        for callback in subscribers:
            service.subscribe(callback)
        return Connection(catalog_config, spark, service, None)
    leases = LeaseKeeper(
        CatalogLeases(pyiceberg_catalog, catalog_config.name),
        holder_id(settings.refresher, catalog_principal(pyiceberg_catalog)),
        settings.lease_ttl,
    )
    manager = RefreshManager(
        engine,
        clock=clock,
        max_concurrent_jobs=settings.max_concurrent_refreshes,
        retry=retry,
        leases=leases,
        stall_policy=settings.stall,
    )
    for callback in subscribers:
        manager.subscribe(callback)
    manager.start()
    return Connection(catalog_config, spark, MaterializedTables(engine, manager, background=True), manager)
