"""Get or create the SparkSession that mt_magic runs on, with Iceberg wired in as configuration.

* An active session in the kernel is reused; the Iceberg catalog is added to it at runtime (catalogs are
  plain ``spark.sql.catalog.<name>.*`` settings that Spark reads lazily).
* Two lines: *classic* (a JVM in the kernel, driven through Py4J) and *Spark Connect* (``sc://…``, no JVM here:
  :mod:`mt_magic.runtime.spark.connect`). An active Connect session is reused; otherwise a configured remote
  (``MT_MAGIC_SPARK_REMOTE``, ``%config MaterializedMagics.spark_remote``) starts one. Over Connect the server's
  own catalog settings win over the kernel's, and the server must carry the Iceberg runtime.
* Otherwise a classic session is built: ``local[*]`` unless another master URL is configured, quiet logs, the
  Spark UI off unless asked for, and then its owner's only (:mod:`mt_magic.runtime.spark.ui_auth`).
* How Iceberg gets onto the classpath is configuration (``MT_MAGIC_ICEBERG``): ``maven`` (the default) puts the
  official runtime for the installed Spark, fetched from Maven Central by the Maven client into a pinned cache
  (:mod:`mt_magic.runtime.spark.iceberg_maven`), on ``spark.jars``; ``packages`` hands the same coordinates to
  Spark's ``spark.jars.packages``; ``offline`` is the fallback for machines without Maven Central (Spark 3.5
  only, assembled by :mod:`mt_magic.runtime.spark.iceberg_jars`).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mt_magic.catalog.embedded import mt_home
from mt_magic.errors import RuntimeSetupError
from mt_magic.loopback import owner_only
from mt_magic.runtime.spark import connect, iceberg_jars, iceberg_maven, ui_auth
from mt_magic.runtime.spark.iceberg_maven import ICEBERG_EXTENSIONS
from mt_magic.runtime.spark.jobs import SparkJobs
from mt_magic.runtime.spark.properties import driver_launch_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ICEBERG_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
ICEBERG_SOURCES = ("maven", "packages", "offline")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
REDACTION_REGEX = "(?i)secret|password|token|access[.]key|authorization"
"""Spark's default ``spark.redaction.regex`` and ``authorization`` (``spark.sql.catalog.<name>.header.Authorization``
holds a catalog's bearer token: :func:`mt_magic.catalog.client.spark_catalog_conf`)."""
HADOOP_UMASK = "077"
"""``fs.permissions.umask-mode`` of the sessions mt_magic starts (:func:`base_conf`)."""


@dataclass(frozen=True)
class SparkSettings:
    """How to build a new session. Ignored (except ``extra``) when an active session is reused.

    Attributes:
        master: Spark master URL; ``local[*]`` runs in the kernel's machine.
        remote: a Spark Connect URL (``sc://host:15002``); when set, mt_magic's session is a Connect session on
            that server (no JVM in this process) and ``master``, ``driver_memory``, ``iceberg`` do not apply.
        app_name: shown in the Spark UI and cluster managers.
        ui: start the Spark UI (off by default: notebooks rarely need it and it takes a port); it admits its owner
            only (:func:`mt_magic.runtime.spark.ui_auth.ui_link` gives the way in).
        log_level: Spark's log level after start (``ERROR``: ipykernel forwards the JVM's stderr to whatever cell
            runs, so warnings such as BlockManager's would land in users' cells; the log4j2 file says the same).
        driver_memory: heap of the driver JVM (only for new local sessions).
        iceberg: where the Iceberg runtime comes from: ``"maven"`` (fetched by the Maven client into the cache,
            on ``spark.jars``), ``"packages"`` (``spark.jars.packages``) or ``"offline"`` (the assembled jars).
        extra: any further ``spark.*`` settings, applied last.
    """

    master: str = field(default_factory=lambda: os.environ.get("MT_MAGIC_SPARK_MASTER", "local[*]"))
    remote: str = field(default_factory=lambda: os.environ.get("MT_MAGIC_SPARK_REMOTE", ""))
    app_name: str = "mt_magic"
    ui: bool = False
    log_level: str = "ERROR"
    driver_memory: str = field(default_factory=lambda: os.environ.get("MT_MAGIC_DRIVER_MEMORY", "4g"))
    iceberg: str = field(default_factory=lambda: os.environ.get("MT_MAGIC_ICEBERG", "maven"))
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.iceberg not in ICEBERG_SOURCES:
            raise RuntimeSetupError(
                f"MT_MAGIC_ICEBERG={self.iceberg!r} is not a known Iceberg source; use 'maven', 'packages' or "
                "'offline'."
            )
        if self.remote and not self.remote.startswith("sc://"):
            raise RuntimeSetupError(
                f"spark_remote={self.remote!r} is not a Spark Connect URL; use sc://host:port "
                "(MT_MAGIC_SPARK_REMOTE or %config MaterializedMagics.spark_remote)."
            )


def check_java() -> None:
    """Raise a clear error, not a Py4J stack trace, when no Java runtime is available."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java") is None:
        raise RuntimeSetupError(
            "Java is not installed, and Spark needs Java 17. Run `make setup` (it installs "
            "openjdk-17-jdk-headless), or install Java 17 and set JAVA_HOME."
        )


def iceberg_classpath_conf(settings: SparkSettings) -> dict[str, str]:
    """The settings that put the Iceberg runtime for the installed Spark on a new session's classpath.

    With ``maven`` a jar missing from the cache is fetched now (the Maven client, as ``make setup`` does).
    """
    runtime = iceberg_maven.installed_runtime()
    if settings.iceberg == "packages":
        return {"spark.jars.packages": runtime.coordinates}
    if settings.iceberg == "maven":
        return {"spark.jars": str(iceberg_maven.fetch(runtime))}
    if runtime.spark_line != iceberg_jars.SPARK_LINE:
        raise RuntimeSetupError(
            f"MT_MAGIC_ICEBERG=offline assembles the runtime for Spark {iceberg_jars.SPARK_LINE} only, and Spark "
            f"{runtime.spark_line} is installed. Use MT_MAGIC_ICEBERG=maven (run `make setup`) or =packages."
        )
    return {"spark.jars": iceberg_jars.require_jars().spark_jars()}


def iceberg_hint() -> str:
    """How to start a session of one's own with the Iceberg runtime of the installed Spark."""
    runtime = iceberg_maven.installed_runtime()
    cached = iceberg_maven.cached_jar(runtime)
    jars = f"spark.jars={cached} or " if cached else ""
    return f"{jars}spark.jars.packages={runtime.coordinates}"


def base_conf(settings: SparkSettings) -> dict[str, str]:
    """Every setting of a session built by mt_magic, before the catalog's own."""
    conf = {
        **iceberg_classpath_conf(settings),
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        "spark.ui.enabled": str(settings.ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": settings.driver_memory,
        "spark.sql.shuffle.partitions": "8" if settings.master.startswith("local") else "200",
        "spark.sql.adaptive.enabled": "true",
        "spark.scheduler.mode": "FAIR",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}",
        # Spark's built-in catalog is not ours; keep its warehouse out of the user's notebook folder.
        "spark.sql.warehouse.dir": str(mt_home() / "spark-warehouse"),
        # Hadoop's local file system (Iceberg's data files, manifests and their .crc files, on the driver and the
        # executors) sets each new file's mode to 0666 less this umask, whatever the process's: owner only.
        "spark.hadoop.fs.permissions.umask-mode": HADOOP_UMASK,
        # Spark's own redaction (its UI, event logs, a query's changed settings) plus the catalogs' bearer header.
        "spark.redaction.regex": REDACTION_REGEX,
    }
    conf.update(settings.extra)
    return conf


def local_driver_auth(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    """A local driver's own ports (its RPC and block manager servers, which listen whatever the master) ask for a
    fresh secret (``spark.authenticate``), for the launch's 0600 properties file: without it any local user talks to
    them. Empty for other masters (a cluster's secret: :func:`mt_magic.runtime.spark.cluster.driver_conf`) or when
    the settings say already."""
    if not master.startswith("local") or "spark.authenticate" in conf:
        return {}
    return {"spark.authenticate": "true", "spark.authenticate.secret": secrets.token_hex(32)}


def _active_session() -> SparkSession | None:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _check_iceberg_loaded(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined,unused-ignore]
    assert jvm is not None, "a classic (non-Connect) SparkSession has a JVM gateway"
    try:
        # Spark's own class loader sees spark.jars; plain Class.forName on a Py4J thread does not.
        jvm.org.apache.spark.util.Utils.classForName(ICEBERG_CATALOG_CLASS, True, False)
    except Exception as exc:  # Py4J wraps ClassNotFoundException
        raise RuntimeSetupError(
            "The active SparkSession was started without the Iceberg runtime, and jars cannot be added to a "
            "running driver. Stop it (spark.stop()) and let mt_magic start one, or start yours with "
            f"{iceberg_hint()}."
        ) from exc
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if ICEBERG_EXTENSIONS not in extensions:
        raise RuntimeSetupError(
            "The active SparkSession lacks the Iceberg SQL extensions (needed for MERGE INTO and CALL). "
            f"Start it with spark.sql.extensions={ICEBERG_EXTENSIONS}."
        )


CATALOG_CONF_PREFIX = "spark.sql.catalog."


def get_or_create_session(
    settings: SparkSettings | None = None, catalog_conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Reuse the active session (adding the catalog) or build one with Iceberg.

    Args:
        settings: how to build a new session; defaults from the environment.
        catalog_conf: ``spark.sql.catalog.<name>.*`` settings for the Iceberg catalog to register.

    Returns:
        The session, with the catalog usable by name.

    Raises:
        RuntimeSetupError: Java or the Iceberg jars are missing, or an active session cannot host Iceberg.
    """
    settings = settings or SparkSettings()
    catalog_conf = dict(catalog_conf or {})
    spark = connect.active_connect_session()
    if spark is None and settings.remote:
        spark = connect.remote_session(settings.remote)
    if spark is not None:
        connect.check_client(spark)
        connect.quiet_recorded_deprecations()
        conf = {**settings.extra, **connect.client_catalog_conf(spark, catalog_conf)}
        for key, value in conf.items():
            spark.conf.set(key, value)
        connect.check_iceberg(spark, catalog_conf)
        return spark
    spark = _active_session()
    if spark is not None:
        _check_iceberg_loaded(spark)
        for key, value in {**settings.extra, **catalog_conf}.items():
            spark.conf.set(key, value)
        return spark
    check_java()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
    # The catalogs' settings (their tokens, credentials) are set once the session runs: PySpark hands a new
    # session's settings to spark-submit as --conf arguments, on the JVM's command line, where `ps` shows them.
    at_start = {k: v for k, v in catalog_conf.items() if not k.startswith(CATALOG_CONF_PREFIX)}
    conf = {**base_conf(settings), **at_start}
    # The web UI, when asked for, admits its owner only: a token in the properties file below (ui_auth); turned off
    # when the filter cannot be built.
    guard, filter_classes = ui_auth.guarded_driver_conf(conf)
    if ui_auth.UI_CONF in guard:
        conf[ui_auth.UI_CONF] = guard.pop(ui_auth.UI_CONF)
    for key, value in conf.items():
        builder = builder.config(key, value)
    # A standalone cluster this user started asks for its secret when the driver starts: from a 0600 properties
    # file, never on the command line (mt_magic.runtime.spark.cluster).
    from mt_magic.runtime.spark.cluster import driver_conf as cluster_driver_conf

    try:
        # The driver JVM (and, in local mode, its executors and Python workers) inherits the umask it starts under:
        # what it creates is owner only from creation, before Hadoop sets the mode above.
        launch = {**local_driver_auth(settings.master, conf), **cluster_driver_conf(settings.master), **guard}
        with driver_launch_properties(launch, mt_home()), ui_auth.on_launch_classpath(filter_classes), owner_only():
            spark = builder.getOrCreate()
        for key, value in catalog_conf.items():
            if key not in at_start:
                spark.conf.set(key, value)
    except Exception as exc:
        if "JAVA_GATEWAY_EXITED" in str(exc) or "Java gateway process exited" in str(exc):
            raise RuntimeSetupError(
                "Spark's JVM did not start (Java gateway exited). Check that Java 17 works (`java -version`) "
                "and run `make setup`."
            ) from exc
        raise
    spark.sparkContext.setLogLevel(settings.log_level)
    return spark


def spark_jobs(spark: SparkSession, catalog_conf: Mapping[str, str]) -> SparkJobs:
    """The refreshes' child sessions, cancellation and progress on ``spark``, for the line it belongs to.

    ``catalog_conf`` is what each child session sets; over Connect, catalogs the server defines are left to it,
    but for ``cache-enabled=false``: a child session is mt_magic's own, and a refresh must read each source's
    current metadata (a server catalog with Iceberg's caching kept a reused child session's tables as first loaded:
    its pinned reads failed with "Cannot find snapshot"; :mod:`.session_cache`).
    """
    if connect.is_connect(spark):
        uncached = {key: value for key, value in catalog_conf.items() if key.endswith(".cache-enabled")}
        return connect.ConnectJobs(spark, {**connect.client_catalog_conf(spark, catalog_conf), **uncached})
    return SparkJobs(spark, catalog_conf)


def spark_target(spark: SparkSession) -> dict[str, str]:
    """Where the session's work runs, for ``%mt config``: the master URL, or the Connect server's URL."""
    if connect.is_connect(spark):
        return {"spark.remote": connect.remote_url(spark)}
    return {"spark.master": str(spark.sparkContext.master)}


def job_ids_of_groups(spark: SparkSession, groups: Iterable[str]) -> list[int]:
    """The Spark job ids of job groups this process ran (to report which jobs a refresh was), sorted.

    Classic: from the status tracker. Over Connect, none: the server does not tell clients its job ids (a
    refresh's operations carry tags instead, :mod:`.connect`).
    """
    if connect.is_connect(spark):
        return []
    tracker = spark.sparkContext.statusTracker()
    return sorted({job for group in groups for job in tracker.getJobIdsForGroup(group)})
