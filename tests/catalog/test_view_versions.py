"""Which view version a refresh records as ``view-version-id``: the one holding the definition it ran (pure)."""

from __future__ import annotations

from mt_magic.catalog.views import ViewInfo, ViewVersionInfo, view_name


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
