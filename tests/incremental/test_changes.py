"""Change classification from snapshot metadata alone (no Spark): what each source history allows."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mt_magic.catalog.definitions import SourceState
from mt_magic.catalog.tables import SnapshotInfo, TableInfo
from mt_magic.runtime.refresh.incremental.changes import ChangeKind, classify
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason

UUID = "5f0c9d3e-0000-4000-8000-000000000001"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def snap(snapshot_id: int, operation: str = "append", schema_id: int = 0, **summary: int) -> SnapshotInfo:
    items = {k.replace("_", "-"): str(v) for k, v in summary.items()}
    return SnapshotInfo(snapshot_id, snapshot_id - 1 if snapshot_id > 1 else None, T0, operation, items, schema_id)


def table(*snapshots: SnapshotInfo, known: tuple[int, ...] = (), uuid: str = UUID) -> TableInfo:
    return TableInfo(
        name="c.db.src",
        uuid=uuid,
        current_snapshot_id=snapshots[-1].snapshot_id if snapshots else None,
        snapshots=snapshots,
        properties={},
        columns=(),
        partition_columns=(),
        identifier_columns=(),
        schema_id=0,
        known_snapshot_ids=frozenset(known or tuple(s.snapshot_id for s in snapshots)),
    )


def recorded(snapshot_id: int | None, uuid: str = UUID) -> SourceState:
    return SourceState(("db",), "src", uuid, snapshot_id, "c")


def test_same_snapshot_and_compactions_are_no_change() -> None:
    assert classify(table(snap(1), snap(2)), recorded(2)).kind is ChangeKind.NONE
    assert classify(table(snap(1), snap(2, "replace")), recorded(1)).kind is ChangeKind.NONE


def test_appends_only_and_appends_after_a_compaction() -> None:
    change = classify(table(snap(1), snap(2), snap(3, "replace"), snap(4)), recorded(1))
    assert (change.kind, change.consumed, change.pinned, change.changes) == (ChangeKind.APPENDS, 1, 4, 2)


def test_an_empty_source_at_the_last_refresh_makes_everything_new() -> None:
    change = classify(table(snap(1), snap(2, "overwrite")), recorded(None))
    assert (change.kind, change.consumed) == (ChangeKind.APPENDS, None)


def test_copy_on_write_overwrites_and_deletes_are_row_level() -> None:
    history = table(snap(1), snap(2), snap(3, "overwrite", added_data_files=1, deleted_data_files=1), snap(4, "delete"))
    assert classify(history, recorded(1)).kind is ChangeKind.ROW_LEVEL


@pytest.mark.parametrize(
    "key", ["added_delete_files", "added_position_delete_files", "added_equality_delete_files", "added_dvs"]
)
def test_merge_on_read_delete_files_are_row_level_read_from_the_files_they_touch(key: str) -> None:
    change = classify(
        table(snap(1), snap(2, "overwrite", added_records=1, added_position_deletes=2, **{key: 1})), recorded(1)
    )
    assert (change.kind, change.merge_on_read, change.reason, change.rows) == (ChangeKind.ROW_LEVEL, True, None, 3)


def test_existing_delete_files_send_row_level_changes_but_not_appends_to_the_merge_on_read_reader() -> None:
    with_deletes = snap(1, "overwrite", total_delete_files=2)
    appended = classify(table(with_deletes, snap(2, "append", total_delete_files=2)), recorded(1))
    assert (appended.kind, appended.merge_on_read) == (ChangeKind.APPENDS, False)
    change = classify(table(with_deletes, snap(2, "overwrite", total_delete_files=2)), recorded(1))
    assert (change.kind, change.merge_on_read) == (ChangeKind.ROW_LEVEL, True)
    copy_on_write = classify(table(snap(1), snap(2, "delete", deleted_data_files=1)), recorded(1))
    assert (copy_on_write.kind, copy_on_write.merge_on_read) == (ChangeKind.ROW_LEVEL, False)


def test_schema_change_rules_out() -> None:
    change = classify(table(snap(1), snap(2, schema_id=1)), recorded(1))
    assert change.reason is FallbackReason.SCHEMA_CHANGED


def test_expired_rolled_back_recreated_and_unrecorded_sources_rule_out() -> None:
    assert classify(table(snap(5), snap(6)), recorded(2)).reason is FallbackReason.SNAPSHOT_EXPIRED
    rolled_back = table(snap(1), snap(2), known=(1, 2, 3))
    assert classify(rolled_back, recorded(3)).reason is FallbackReason.HISTORY_REWRITTEN
    assert classify(table(snap(1), snap(2)), recorded(1, uuid="other")).reason is FallbackReason.SOURCE_RECREATED
    assert classify(table(snap(1)), None).reason is FallbackReason.SOURCE_NOT_RECORDED


def test_the_delta_size_is_read_from_the_summaries() -> None:
    appends = classify(
        table(
            snap(1, added_records=5),
            snap(2, added_records=7),
            snap(3, "replace", added_records=99),
            snap(4, added_records=3),
        ),
        recorded(1),
    )
    assert appends.rows == 10  # the compaction's rewritten rows are no change
    updates = classify(table(snap(1), snap(2, "overwrite", added_records=4, deleted_records=4)), recorded(1))
    assert (updates.kind, updates.rows) == (ChangeKind.ROW_LEVEL, 8)


def test_a_refresh_shuffles_into_partitions_sized_to_the_rows_it_reads() -> None:
    from dataclasses import replace

    from mt_magic.runtime.refresh.incremental.attempt import sized_options
    from mt_magic.runtime.refresh.incremental.planner import RefreshPlan
    from mt_magic.runtime.refresh.incremental.reasons import Strategy
    from mt_magic.runtime.refresh.incremental.shape import QueryPlan

    target = table(snap(1, total_records=2_500_000))
    change = classify(table(snap(1), snap(2, added_records=600_000)), recorded(1))
    plan = RefreshPlan(Strategy.AGGREGATE_MERGE, QueryPlan(shape=None), (change,), 1)
    assert sized_options(plan, target, {"k": "v"}, 8) == {"k": "v", "spark.sql.shuffle.partitions": "4"}
    small = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false"}
    assert sized_options(plan, table(snap(1, total_records=10)), {}, 8) == small
    adaptive_set = {"spark.sql.adaptive.enabled": "true"}
    assert (
        sized_options(plan, table(snap(1, total_records=10)), adaptive_set, 8)["spark.sql.adaptive.enabled"] == "true"
    )
    assert sized_options(plan, table(snap(1, total_records=10**12)), {}, 8) == {"spark.sql.shuffle.partitions": "8"}
    # an explicit setting wins; joins and affected-group recomputes read more than the delta and the table
    assert sized_options(plan, target, {"spark.sql.shuffle.partitions": "3"}, 8) == {
        "spark.sql.shuffle.partitions": "3"
    }
    one_source = sized_options(replace(plan, query=QueryPlan(shape=None, joins=1)), target, {}, 8)
    assert one_source == {"spark.sql.shuffle.partitions": "4"}  # `joins` counts sources: one is no join
    assert sized_options(replace(plan, query=QueryPlan(shape=None, joins=2)), target, {}, 8) == {}
    assert sized_options(replace(plan, strategy=Strategy.AFFECTED_GROUPS), target, {}, 8) == {}


def test_adaptive_never_recomputes_an_append_of_the_delta_from_one_source_unless_the_table_says_so() -> None:
    """An append of the delta reads a subset of a recompute's input; merges and multi-source terms can cost more."""
    from dataclasses import replace

    from mt_magic.runtime.refresh.incremental.planner import RefreshPlan, cheaper_to_recompute
    from mt_magic.runtime.refresh.incremental.reasons import Strategy
    from mt_magic.runtime.refresh.incremental.shape import QueryPlan

    source = table(snap(1, total_records=200_000), snap(2, added_records=200_000, total_records=400_000))
    change = classify(source, recorded(1))  # half of the pinned rows are new
    append = RefreshPlan(Strategy.APPEND_DELTA, QueryPlan(shape=None), (change,), 1)
    assert cheaper_to_recompute(append, [source], None) is None
    explicit = cheaper_to_recompute(append, [source], 0.3)
    assert explicit is not None and "changed 50% of c.db.src, past 30%" in explicit.detail
    merge = cheaper_to_recompute(replace(append, strategy=Strategy.AGGREGATE_MERGE), [source], None)
    assert merge is not None and "past 30%" in merge.detail
    both = replace(append, changes=(change, replace(change, name="c.db.other")))
    assert cheaper_to_recompute(both, [source, source], None) is not None  # two terms, each reading a source whole
    assert cheaper_to_recompute(replace(append, strategy=Strategy.AGGREGATE_MERGE), [source], 0.6) is None


def test_a_union_delta_term_reads_the_other_branches_sources_as_empty() -> None:
    from mt_magic.runtime.refresh.incremental.changes import SourceChange
    from mt_magic.runtime.refresh.incremental.delta import delta_terms

    changes = (
        SourceChange("c.n.a", ChangeKind.APPENDS, 1, 2),
        SourceChange("c.n.b", ChangeKind.ROW_LEVEL, 3, 4),
        SourceChange("c.n.d", ChangeKind.NONE, 5, 5),
    )
    query = "SELECT k FROM c.n.a UNION ALL SELECT b.k FROM c.n.b JOIN c.n.d ON b.k = d.k"
    branches = (frozenset({"c.n.a"}), frozenset({"c.n.b", "c.n.d"}))
    empty = {"c.n.a": "ea", "c.n.b": "eb", "c.n.d": "ed"}

    terms = delta_terms(query, changes, {"c.n.a": "da", "c.n.b": "db"}, branches, empty)

    assert terms == [
        "SELECT k FROM `da` AS a UNION ALL SELECT b.k FROM `eb` AS b JOIN `ed` AS d ON b.k = d.k",
        "SELECT k FROM `ea` AS a UNION ALL SELECT b.k FROM `db` AS b JOIN `c`.`n`.`d` VERSION AS OF 5 AS d "
        "ON b.k = d.k",
    ]
