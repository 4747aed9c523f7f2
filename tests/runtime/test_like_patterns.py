"""``SHOW MATERIALIZED TABLES LIKE``: SQL patterns on table names."""

from __future__ import annotations

import pytest

from mt_magic.runtime.inspect.describe import like_matches


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("daily%", "daily_orders", True),
        ("DAILY%", "daily_orders", True),
        ("daily_orders", "dailyXorders", True),
        ("daily\\_orders", "dailyXorders", False),
        ("daily\\_orders", "daily_orders", True),
        ("%orders", "orders", True),
        ("%.%", "a.b", True),
        ("a.b", "aXb", False),
        ("100\\%", "100%", True),
        ("", "x", False),
    ],
)
def test_like_patterns(pattern: str, name: str, matches: bool) -> None:
    assert like_matches(pattern, name) is matches
