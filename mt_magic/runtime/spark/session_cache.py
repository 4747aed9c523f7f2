"""The user's own Spark session reads every commit mt_magic makes, whatever its catalog caches.

Iceberg's ``SparkCatalog`` wraps its catalog in a ``CachingCatalog`` unless ``cache-enabled=false``: a session
keeps each table as it first loaded it until the entry expires (30 s after its last read), so a notebook that
reads a table more often than that never sees a refresh commit. mt_magic sets ``cache-enabled=false`` on the
catalogs it configures; a catalog defined before it (a team's Spark Connect server with ``spark.sql.catalog.<name>.*``
in its own settings, a SparkSession the user built before ``%load_ext``) keeps Iceberg's default. For those, every
commit mt_magic makes (a refresh, a statement) is followed by ``REFRESH TABLE`` in the kernel's session, which
drops the cached entry (``SparkCatalog.invalidateTable``); refreshes run in child sessions, whose catalog is
configured by mt_magic and does not cache. Other sessions on the same catalog (another notebook) cannot be
reached from here: :attr:`SessionCache.notice` says so, with the setting to change, once, when the kernel connects.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.errors import MtMagicError
from mt_magic.runtime.spark.quoting import qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionCache:
    """Which session caches the catalog's tables, and how to make it forget one. ``spark=None``: no session
    mt_magic knows caches them (the catalog is mt_magic's own, configured with ``cache-enabled=false``)."""

    spark: SparkSession | None = None
    catalog: str = ""

    @property
    def notice(self) -> str | None:
        """What the user should know when the kernel connects; ``None`` when nothing caches."""
        if self.spark is None:
            return None
        return MtMagicError(
            f"Note: catalog {self.catalog!r} caches tables (Iceberg's default): mt_magic makes this session forget "
            "each table it commits, but other sessions on this catalog read a table up to 30 s behind",
            fix=f"set spark.sql.catalog.{self.catalog}.cache-enabled=false where the catalog is defined",
        ).message()

    def forget(self, *tables: str) -> None:
        """Drop ``tables`` (``catalog.namespace.table``) from the session's cache, so its next read loads the
        catalog's current metadata. A failure is only logged: the commit itself has landed."""
        if self.spark is None:
            return
        for table in tables:
            try:
                self.spark.sql(f"REFRESH TABLE {qualified(table)}")
            except Exception as exc:  # dropped and never cached, or the session is gone: nothing to forget
                log.debug("REFRESH TABLE %s: %s", table, str(exc).splitlines()[0] if str(exc) else exc)


def settings_before(catalog_conf: Mapping[str, str]) -> dict[str, str | None]:
    """What a running classic session already sets for the keys in ``catalog_conf`` — read *before* mt_magic sets
    them, since a catalog the session loaded keeps the settings it was loaded with. Empty without one."""
    from pyspark.sql import SparkSession

    from mt_magic.runtime.spark import connect

    if connect.active_connect_session() is not None:
        return {}
    spark = SparkSession.getActiveSession()
    if spark is None:
        return {}
    return {key: spark.conf.get(key, None) for key in catalog_conf}


def session_cache(
    spark: SparkSession, catalog: str, catalog_conf: Mapping[str, str], before: Mapping[str, str | None]
) -> SessionCache:
    """The :class:`SessionCache` of the kernel's session ``spark`` for catalog ``catalog``.

    Args:
        catalog_conf: the settings mt_magic gives the catalog (``cache-enabled=false`` among them).
        before: :func:`settings_before`, read before the session was given ``catalog_conf``.
    """
    from mt_magic.runtime.spark import connect

    prefix = f"spark.sql.catalog.{catalog}"
    if connect.is_connect(spark):
        if prefix in connect.client_catalog_conf(spark, catalog_conf):
            return SessionCache(None, catalog)  # the kernel defines it on the server: with our settings
        value = spark.conf.get(f"{prefix}.cache-enabled", None)  # the server's definition
    else:
        if before.get(prefix) is None:
            return SessionCache(None, catalog)  # defined now, by mt_magic
        value = before.get(f"{prefix}.cache-enabled")
    caches = (value or "true").strip().lower() != "false"
    return SessionCache(spark if caches else None, catalog)
