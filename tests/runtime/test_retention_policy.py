"""Snapshot retention decisions from metadata alone (no Spark)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mt_magic.catalog.tables import SnapshotInfo, TableInfo
from mt_magic.runtime.refresh.retention import (
    MAX_AGE_MS,
    METADATA_FILES,
    MIN_TO_KEEP,
    expirable,
    retention_properties,
)

NOW = datetime(2026, 11, 22, 12, tzinfo=timezone.utc)


def table(ages_minutes: list[int], **properties: str) -> TableInfo:
    snapshots = tuple(
        SnapshotInfo(i + 1, i or None, NOW - timedelta(minutes=m), "overwrite", {}) for i, m in enumerate(ages_minutes)
    )
    return TableInfo(
        name="c.db.t",
        uuid="u",
        current_snapshot_id=len(snapshots),
        snapshots=snapshots,
        properties=properties,
        columns=(),
        partition_columns=(),
        identifier_columns=(),
        schema_id=0,
    )


def test_the_default_policy_follows_the_freshness_with_a_floor_and_with_wins() -> None:
    five, hour = timedelta(seconds=5), timedelta(hours=1)
    assert retention_properties(five, {}) == {MAX_AGE_MS: "3600000", MIN_TO_KEEP: "100", **METADATA_FILES}
    assert retention_properties(hour, {}) == {MAX_AGE_MS: str(100 * 3600 * 1000), MIN_TO_KEEP: "100", **METADATA_FILES}
    with_options = retention_properties(five, {MIN_TO_KEEP: "3", "other": "x"})
    assert with_options == {MAX_AGE_MS: "3600000", MIN_TO_KEEP: "3", **METADATA_FILES}


def test_old_metadata_files_are_deleted_unless_with_keeps_them() -> None:
    keep_all = {"write.metadata.delete-after-commit.enabled": "false"}
    assert retention_properties(timedelta(seconds=5), {})["write.metadata.delete-after-commit.enabled"] == "true"
    assert retention_properties(timedelta(seconds=5), keep_all)["write.metadata.delete-after-commit.enabled"] == "false"


def test_expirable_counts_old_snapshots_beyond_the_ones_kept() -> None:
    policy = {MAX_AGE_MS: str(60 * 60 * 1000), MIN_TO_KEEP: "2"}
    assert expirable(table([300, 200, 90, 30, 1], **policy), NOW) == 3
    assert expirable(table([300, 200], **policy), NOW) == 0  # never below the minimum kept
    assert expirable(table([50, 40, 30, 20], **policy), NOW) == 0  # all younger than the age
    # without a policy, Iceberg's own defaults: five days, keep one
    assert expirable(table([8 * 24 * 60, 6 * 24 * 60, 4 * 24 * 60, 10]), NOW) == 2
