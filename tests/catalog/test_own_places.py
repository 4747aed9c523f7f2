"""A table's folders are its own (issue 48): the pure rule the server applies at create, commit and before it vends
credentials (:mod:`mt_magic.catalog.server.own_places`); the requests themselves are in ``test_vended_credentials``."""

from __future__ import annotations

import pytest

from mt_magic.catalog.server.errors_http import RestError
from mt_magic.catalog.server.own_places import check_own_places, view_folder

OTHERS = [("table b.other", ["s3://w/wh/b/other", "s3://w/data/other"]), ("a view", ["s3://w/wh/a/v"])]
FOLDERS = [("the warehouse", "s3://w/wh"), ("namespace a", "s3://w/wh/a"), ("namespace b", "s3://w/wh/b")]


@pytest.mark.parametrize(
    ("place", "reached"),
    [
        ("s3://w/wh", "the warehouse"),
        ("s3://w/wh/", "the warehouse"),
        ("s3://w", "no place that can be compared"),
        ("s3://w/wh/b", "namespace b"),
        ("s3://w/wh/b/other", "table b.other"),
        ("s3://w/wh/b/other/data", "table b.other"),
        ("s3://w/data", "table b.other"),
        ("s3://w/wh/a/v/x", "a view"),
    ],
)
def test_a_place_over_anothers_folder_is_refused_naming_it(place: str, reached: str) -> None:
    with pytest.raises(RestError, match=f"reaches .*{reached}.*Fix: ") as refused:
        check_own_places("table a.t", ["s3://w/wh/a/t", place], OTHERS, FOLDERS)
    assert refused.value.status == 403


def test_a_tables_own_folders_inside_its_namespace_pass() -> None:
    check_own_places("table a.t", ["s3://w/wh/a/t", "s3://w/wh/a/t/data", "s3://w/elsewhere/t"], OTHERS, FOLDERS)
    assert view_folder("s3://w/wh/a/v/metadata/00001-x.metadata.json") == "s3://w/wh/a/v"
