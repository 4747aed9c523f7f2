"""Snapshot retention: a materialized table does not keep every refresh's snapshot forever.

Every refresh commits a snapshot, so a table refreshed every few seconds would collect tens of thousands a
day: every metadata load (each refresh makes several) slows down, and every data file a refresh replaced
stays on storage. After a refresh, once enough snapshots have become expirable, Iceberg's own
``expire_snapshots`` runs, with the table's own policy — the standard Iceberg properties
``history.expire.max-snapshot-age-ms`` and ``history.expire.min-snapshots-to-keep``. CREATE sets them from the
freshness (``WITH`` may set either); any other Iceberg engine's maintenance reads the same policy.

The default age is a hundred freshness periods and at least an hour, so the snapshots a downstream
materialized table consumed stay readable for incremental refresh unless it falls far behind (then it
recomputes, and says so: "source snapshot expired").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mt_magic.catalog.tables import TableInfo
from mt_magic.errors import first_line
from mt_magic.options import MAX_AGE_MS as MAX_AGE_OPTION
from mt_magic.options import MIN_TO_KEEP as MIN_TO_KEEP_OPTION
from mt_magic.runtime.spark.quoting import procedure

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mt_magic.runtime.refresh.commit import Committed
    from mt_magic.runtime.refresh.context import RefreshContext
    from mt_magic.runtime.status import RefreshRequest

log = logging.getLogger(__name__)

MAX_AGE_MS = MAX_AGE_OPTION.key
MIN_TO_KEEP = MIN_TO_KEEP_OPTION.key
"""Iceberg's retention properties, declared (values, default, help, check) in :mod:`mt_magic.options`."""
ICEBERG_DEFAULT_AGE = timedelta(days=5)
"""What Iceberg uses when the table does not say (tables created before retention existed)."""
DEFAULT_MIN_TO_KEEP = MIN_TO_KEEP_OPTION.default
METADATA_FILES = {"write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "100"}
"""Every commit writes a new metadata file; without these Iceberg keeps all of them on storage (17,000 a day for a
table refreshed every 5 s). With them it deletes the oldest beyond the last 100 after each commit."""
FRESHNESS_PERIODS = 100
MIN_AGE = timedelta(hours=1)
EXPIRE_BATCH = 20
"""Expire only once this many snapshots are expirable: the procedure is a Spark job, not free per refresh."""


def retention_properties(interval: timedelta, options: Mapping[str, str]) -> dict[str, str]:
    """The table properties CREATE sets: the defaults, or what ``WITH`` says for any of the keys."""
    age = max(MIN_AGE, interval * FRESHNESS_PERIODS)
    defaults = {MAX_AGE_MS: str(int(age.total_seconds() * 1000)), MIN_TO_KEEP: str(DEFAULT_MIN_TO_KEEP)}
    defaults |= METADATA_FILES
    return {key: options.get(key, value) for key, value in defaults.items()}


def _number(properties: Mapping[str, str], key: str, default: int) -> int:
    try:
        return int(properties.get(key, default))
    except ValueError:
        return default


def expirable(info: TableInfo, now: datetime) -> int:
    """How many snapshots Iceberg's expire_snapshots would remove now under the table's policy."""
    age = timedelta(milliseconds=_number(info.properties, MAX_AGE_MS, int(ICEBERG_DEFAULT_AGE.total_seconds() * 1000)))
    keep = max(1, _number(info.properties, MIN_TO_KEEP, 1))
    older = info.snapshots[:-keep] if len(info.snapshots) > keep else ()
    return sum(1 for s in older if s.committed_at < now - age)


def expire_if_due(session: SparkSession, info: TableInfo, now: datetime) -> int:
    """Run ``expire_snapshots`` on the table when at least :data:`EXPIRE_BATCH` snapshots are expirable.

    Returns how many snapshots were expirable when it ran (0: not due). Never raises: retention is
    housekeeping, and the refresh it follows has already committed.
    """
    due = expirable(info, now)
    if due < EXPIRE_BATCH:
        return 0
    call, table = procedure(info.name, "expire_snapshots")
    try:
        session.sql(f"CALL {call}(table => {table})").collect()
    except Exception as exc:  # e.g. a concurrent commit; the next refresh tries again
        log.warning("expiring old snapshots of %s failed: %s", info.name, first_line(exc))
        return 0
    return due


def expire_after(ctx: RefreshContext, request: RefreshRequest, committed: Committed) -> None:
    """Housekeeping after a refresh committed: :func:`expire_if_due` on the table as the commit left it (no load
    of its own); a failure here is only logged — the refresh has committed."""
    if committed.table is None or committed.snapshot_id is None:
        return
    try:
        with ctx.jobs.job_group(request.job_group, f"expire old snapshots of {request.table}"):
            expire_if_due(ctx.jobs.child_session(), committed.table, ctx.clock())
    except Exception as exc:  # cancelled by a DROP, catalog hiccup: the refresh itself has committed
        log.warning("snapshot retention for %s skipped: %s", request.table, first_line(exc))
