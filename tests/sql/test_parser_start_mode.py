"""START_MODE (Flink 2.3, FLINK-39303) and 'convert-existing-table' in CREATE [OR ALTER]: parsed into typed
statements, malformed ones refused with position and fix."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mt_magic.sql import ClauseOrderError, DuplicateClauseError, SqlError, SqlSyntaxError, parse_cell
from mt_magic.sql.ddl.parser import parse_start_mode
from mt_magic.sql.ddl.statements import CreateMaterializedTable, Freshness, FreshnessUnit, StartFrom, StartMode
from mt_magic.sql.errors import FreshnessError, UnsupportedOptionError


def start_of(clause: str) -> StartMode | None:
    [statement] = parse_cell(
        f"CREATE OR ALTER MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' MINUTE {clause} AS SELECT 1 AS a"
    )
    assert isinstance(statement, CreateMaterializedTable)
    return statement.start_mode


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("", None),
        ("START_MODE = FROM_BEGINNING", StartMode()),
        ("start_mode = from_now", StartMode(StartFrom.NOW)),
        (
            "START_MODE = FROM_NOW(INTERVAL '2' HOURS)",
            StartMode(StartFrom.NOW, lookback=Freshness(2, FreshnessUnit.HOUR)),
        ),
        (
            "START_MODE = FROM_TIMESTAMP('2026-06-25 08:30:00')",
            StartMode(StartFrom.TIMESTAMP, timestamp=datetime(2026, 6, 25, 8, 30, tzinfo=timezone.utc)),
        ),
        (
            "START_MODE = FROM_TIMESTAMP(TIMESTAMP '2026-06-25 10:30:00.250+02:00')",
            StartMode(StartFrom.TIMESTAMP, timestamp=datetime(2026, 6, 25, 8, 30, 0, 250000, tzinfo=timezone.utc)),
        ),
        ("START_MODE = RESUME_OR_FROM_BEGINNING", StartMode(resume=True)),
        (
            "START_MODE = RESUME_OR_FROM_NOW(INTERVAL '30' MINUTE)",
            StartMode(StartFrom.NOW, True, lookback=Freshness(30, FreshnessUnit.MINUTE)),
        ),
        (
            "REFRESH_MODE = FULL START_MODE = RESUME_OR_FROM_TIMESTAMP('2026-01-01')",
            StartMode(StartFrom.TIMESTAMP, True, timestamp=datetime(2026, 1, 1, tzinfo=timezone.utc)),
        ),
    ],
)
def test_start_modes_parse_and_round_trip(clause: str, expected: StartMode | None) -> None:
    mode = start_of(clause)
    assert mode == expected
    if mode is not None:
        assert parse_start_mode(mode.sql()) == mode


def test_the_instant_of_each_start() -> None:
    now = datetime(2026, 11, 23, 12, tzinfo=timezone.utc)
    assert StartMode().instant(now) is None
    assert StartMode(StartFrom.NOW).instant(now) == now
    assert StartMode(StartFrom.NOW, lookback=Freshness(1, FreshnessUnit.DAY)).instant(now) == now - timedelta(days=1)
    assert StartMode(StartFrom.TIMESTAMP, True, timestamp=now).instant(now) == now
    assert StartMode(StartFrom.TIMESTAMP, timestamp=now).sql() == "FROM_TIMESTAMP(TIMESTAMP '2026-11-23 12:00:00Z')"


@pytest.mark.parametrize(
    ("clause", "error", "message"),
    [
        (
            "START_MODE = FROM_LATEST",
            SqlSyntaxError,
            r"line 1, column 83: START_MODE must be one of FROM_BEGINNING, FROM_NOW.*found 'FROM_LATEST'"
            r".*Fix: write START_MODE = .*each may start with RESUME_OR_",
        ),
        ("START_MODE FROM_NOW", SqlSyntaxError, r"column 81: expected '=' after START_MODE, found 'FROM_NOW'"),
        ("START_MODE = RESUME_OR_LATEST", SqlSyntaxError, r"found 'RESUME_OR_LATEST'"),
        ("START_MODE = FROM_BEGINNING(1)", SqlSyntaxError, r"FROM_BEGINNING takes no argument"),
        (
            "START_MODE = FROM_NOW(INTERVAL '1' MONTH)",
            SqlSyntaxError,
            r"column 105: 'MONTH' is not an interval unit of FROM_NOW.*Fix: write FROM_NOW\(INTERVAL '1' HOUR\)",
        ),
        ("START_MODE = FROM_NOW(INTERVAL '0' HOUR)", SqlSyntaxError, r"must be a positive whole number, got '0'"),
        ("START_MODE = FROM_NOW(INTERVAL 1 HOUR)", SqlSyntaxError, r"expected a single-quoted string"),
        ("START_MODE = FROM_NOW('1' HOUR)", SqlSyntaxError, r"expected INTERVAL inside FROM_NOW"),
        ("START_MODE = FROM_NOW(INTERVAL '999999' DAY)", SqlSyntaxError, r"reaches back more than a century"),
        (
            "START_MODE = FROM_TIMESTAMP('yesterday')",
            SqlSyntaxError,
            r"'yesterday' is not a timestamp.*Fix: write FROM_TIMESTAMP\('2026-06-25 00:00:00'\)",
        ),
        ("START_MODE = FROM_TIMESTAMP('2026-02-30 00:00:00')", SqlSyntaxError, r"is not a timestamp"),
        ("START_MODE = FROM_TIMESTAMP", SqlSyntaxError, r"expected '\(' after FROM_TIMESTAMP, found 'AS'"),
        ("START_MODE = FROM_TIMESTAMP(2026)", SqlSyntaxError, r"expected a single-quoted string as the instant"),
        (
            "START_MODE = FROM_NOW REFRESH_MODE = FULL",
            ClauseOrderError,
            r"REFRESH_MODE must come before START_MODE.*REFRESH_MODE, START_MODE, AS <select>",
        ),
        ("START_MODE = FROM_NOW START_MODE = FROM_NOW", DuplicateClauseError, r"START_MODE is given twice"),
    ],
)
def test_malformed_start_modes_are_refused_with_position_and_fix(
    clause: str, error: type[SqlError], message: str
) -> None:
    with pytest.raises(error, match=message):
        start_of(clause)


def test_freshness_without_a_unit_before_start_mode_says_so() -> None:
    with pytest.raises(FreshnessError, match=r"INTERVAL '1' needs a unit, found 'START_MODE'"):
        parse_cell("CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' START_MODE = FROM_NOW AS SELECT 1 AS a")


def test_the_convert_option_takes_true_or_false() -> None:
    [ok] = parse_cell("CREATE OR ALTER MATERIALIZED TABLE t WITH ('convert-existing-table' = 'TRUE') AS SELECT 1 AS a")
    assert isinstance(ok, CreateMaterializedTable) and ok.options == (("convert-existing-table", "TRUE"),)
    with pytest.raises(
        UnsupportedOptionError,
        match=r"column 44: WITH \('convert-existing-table' = 'yes'\) is not a known value. Fix: use 'true' "
        r"\(convert the plain table in place\) or 'false'",
    ):
        parse_cell("CREATE OR ALTER MATERIALIZED TABLE t WITH ('convert-existing-table' = 'yes') AS SELECT 1 AS a")
