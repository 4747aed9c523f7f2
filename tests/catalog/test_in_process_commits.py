"""The commits an in-process refresh makes through pyiceberg (``catalog/rows.py``), on the real catalog server, with
whichever pyiceberg is installed (0.10 in ``.venv``; 0.12 is supported too): a DELETED manifest entry names the
snapshot that deleted its file, and a commit that lost a race fails instead of landing on a state it never read."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import ManifestEntryStatus

from mt_magic.catalog import rows


@pytest.fixture
def table(rest, ns: str):  # type: ignore[no-untyped-def]
    created = rest.create_table((ns, "t"), schema=pa.schema([("k", pa.int64())]))
    rows.commit_files(created, rows.write_files(created, pa.table({"k": [1, 2]})), None, {"writer": "first"})
    return created


def test_a_deleted_entry_carries_the_deleting_snapshot(rest, ns: str, table) -> None:  # type: ignore[no-untyped-def]
    """The spec: a status-2 entry's ``snapshot_id`` is "the snapshot id where the file was deleted" (pyiceberg
    0.10 and 0.11 wrote the adding snapshot's; Iceberg's changelog scan then misses the deletion)."""
    added_by = table.current_snapshot().snapshot_id
    _, files = rows.rows_at(table, added_by)
    rows.commit_files(table, rows.write_files(table, pa.table({"k": [3]})), files, {"writer": "second"})
    reloaded = rest.load_table((ns, "t"))
    snapshot = reloaded.current_snapshot()
    assert snapshot.snapshot_id != added_by and table.current_snapshot().snapshot_id == snapshot.snapshot_id
    entries = [e for m in snapshot.manifests(reloaded.io) for e in m.fetch_manifest_entry(reloaded.io, False)]
    deleted = [e for e in entries if e.status == ManifestEntryStatus.DELETED]
    assert [e.data_file.file_path for e in deleted] == [f.file_path for f in files]
    assert {e.snapshot_id for e in deleted} == {snapshot.snapshot_id}
    assert reloaded.scan().to_arrow().column("k").to_pylist() == [3]


@pytest.mark.parametrize("replace", [False, True], ids=["append", "overwrite"])
def test_a_commit_that_lost_a_race_fails_and_writes_nothing(rest, ns: str, table, replace: bool) -> None:  # type: ignore[no-untyped-def]
    """pyiceberg 0.12 retries such a commit on the refreshed table; a refresh's must fail (its rows were computed
    from the state it read)."""
    stale = rest.load_table((ns, "t"))
    _, files = rows.rows_at(stale, stale.current_snapshot().snapshot_id)
    rows.commit_files(table, rows.write_files(table, pa.table({"k": [9]})), None, {"writer": "another"})
    intruder = rest.load_table((ns, "t")).current_snapshot().snapshot_id
    with pytest.raises(CommitFailedException):
        rows.commit_files(stale, rows.write_files(stale, pa.table({"k": [4]})), files if replace else None, {})
    after = rest.load_table((ns, "t"))
    assert after.current_snapshot().snapshot_id == intruder
    assert sorted(after.scan().to_arrow().column("k").to_pylist()) == [1, 2, 9]
