"""DESCRIBE as text (``%%materialized DESCRIBE …``, ``%mt``, a saved notebook): the column table is aligned to the
columns' names, types and notes, not padded to the longest fact (a refresh mode's reason, the settings note)."""

from __future__ import annotations

from datetime import timedelta

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.inspect.describe import table_description
from mt_magic.vocabulary import RefreshMode
from mt_magic.widgets.render import listing_text


def test_describe_text_aligns_the_columns_to_their_content() -> None:
    definition = MaterializedTableDefinition(
        query="SELECT day, sum(amount) AS total FROM mt.s.orders GROUP BY day",
        expanded_query="SELECT day, sum(amount) AS total FROM mt.s.orders GROUP BY day",
        freshness="INTERVAL '1' MINUTE",
        refresh_mode=RefreshMode.CONTINUOUS,
        interval=timedelta(minutes=1),
        mode_reason="the freshness is below the 30-minute threshold",
        upstream=("mt.s.orders",),
        primary_key=("day",),
    )
    info = TableInfo(
        "mt.s.daily",
        "u",
        None,
        (),
        definition.to_properties(),
        (("day", "string", True), ("total", "long", False)),
        (),
        ("day",),
        0,
    )
    lines = listing_text(table_description(info, definition, None)).splitlines()
    assert lines[:4] == [
        "column  type    note",
        "day     string  primary key",
        "total   long    nullable",
        "",
    ]
    assert lines[4].startswith("# refresh mode        CONTINUOUS (the freshness is below the 30-minute threshold)")
    assert all(line == line.rstrip() for line in lines)
