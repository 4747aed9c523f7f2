"""Which view version a refresh records as ``view-version-id``: the one holding the definition it ran (pure)."""

from __future__ import annotations

from mt_magic.catalog.views import DROPPED_PROPERTY, ViewInfo, ViewVersionInfo, view_name


def _view(current: int, *held: int | None) -> ViewInfo:
    versions = tuple(ViewVersionInfo(i, f"SELECT {i}", ("db", "t"), d, 0) for i, d in enumerate(held, start=1))
    return ViewInfo("mt.db.t__mv", "u", current, versions, {})


def test_the_current_version_when_it_holds_the_definition_that_ran() -> None:
    assert _view(3, 1, 2, 2).version_for(2) == 3
    assert _view(2, 1, 2, 2).version_for(2) == 2  # RENAME moved back to an equal version: still current


def test_an_older_definition_records_its_own_newest_version_so_the_table_reads_stale() -> None:
    """A refresh that ran definition 1 and committed after ALTER … AS made version 3 (definition 2) current."""
    assert _view(3, 1, 1, 2).version_for(1) == 2


def test_no_version_holds_it_then_none_is_recorded() -> None:
    assert _view(1, None).version_for(1) is None  # a version written by another tool, without the summary entry
    assert _view(2, 1, 2).version_for(5) is None


def test_the_view_is_named_after_the_table_in_its_namespace() -> None:
    assert view_name("mt.db.orders daily") == "mt.db.orders daily__mv"


def test_what_the_catalog_dropped_from_the_current_version_is_named() -> None:
    kept = ViewInfo("v", "u", 1, (ViewVersionInfo(1, "SELECT 1", ("db", "t"), 1, 0),), {})
    rebuilt = ViewInfo("v", "u", 1, (ViewVersionInfo(1, "SELECT 1", None, None, 0),), {})
    assert kept.dropped == () and rebuilt.dropped == ("storage-table", "summary")


def test_a_version_the_catalog_would_reuse_is_found_as_java_finds_it() -> None:
    """Re-pointing a version at a renamed table is a new version where the catalog keeps ``storage-table``; where
    it drops the pointer (DROPPED_PROPERTY), the catalog reuses the old version, so mt_magic makes that current
    instead of adding one (Iceberg's reference server refuses "set the last added version" when none was)."""
    old = ViewVersionInfo(1, "SELECT 1", ("db", "t"), 1, 0, ("db",))
    moved = ViewVersionInfo(2, "SELECT 1", ("db", "renamed"), 1, 0, ("db",))
    assert ViewInfo("v", "u", 1, (old,), {}).same_version(moved) is None
    assert ViewInfo("v", "u", 1, (old,), {DROPPED_PROPERTY: "storage-table"}).same_version(moved) == 1
    other = ViewVersionInfo(2, "SELECT 2", ("db", "t"), 2, 0, ("db",))
    assert ViewInfo("v", "u", 1, (old,), {DROPPED_PROPERTY: "storage-table"}).same_version(other) is None


def test_an_equal_schema_is_reused_whatever_its_id_and_empty_identifier_fields() -> None:
    fields = [{"id": 1, "name": "a", "type": "int", "required": False}]
    view = ViewInfo("v", "u", 1, (), {}, ({"type": "struct", "schema-id": 3, "fields": fields},))
    assert view.schema_id_of({"type": "struct", "schema-id": 0, "fields": fields, "identifier-field-ids": []}) == 3
    assert view.schema_id_of({"type": "struct", "fields": [{**fields[0], "name": "b"}]}) is None
