"""DateFormatter: Java DateTimeFormatter patterns → strftime (Spark's pattern kept), and partition checks."""

from __future__ import annotations

from datetime import datetime

import pytest

from mt_magic.sql import DateFormatter, FormatterError, RefreshMode, partition_formatters

MOMENT = datetime(2024, 1, 5, 7, 8, 9)


@pytest.mark.parametrize(
    ("pattern", "strftime", "value"),
    [
        ("yyyyMMdd", "%Y%m%d", "20240105"),
        ("yyyy-MM-dd", "%Y-%m-%d", "2024-01-05"),
        ("yyyy-MM-dd HH", "%Y-%m-%d %H", "2024-01-05 07"),
        ("yyyyMMddHH", "%Y%m%d%H", "2024010507"),
        ("yyyy/MM/dd", "%Y/%m/%d", "2024/01/05"),
        ("yyyy-MM-dd HH:mm:ss", "%Y-%m-%d %H:%M:%S", "2024-01-05 07:08:09"),
        ("yyyy-MM-dd'T'HH", "%Y-%m-%dT%H", "2024-01-05T07"),
        ("'day='yyyyMMdd", "day=%Y%m%d", "day=20240105"),
        ("yyyy''MM", "%Y'%m", "2024'01"),
        ("'it''s' yy", "it's %y", "it's 24"),
        ("yyyy%MM", "%Y%%%m", "2024%01"),
        ("yyyy年MM月dd日", "%Y年%m月%d日", "2024年01月05日"),
        ("yyyy-DDD", "%Y-%j", "2024-005"),
        ("hh a", "%I %p", "07 AM"),
        ("EEE dd MMM yyyy", "%a %d %b %Y", "Fri 05 Jan 2024"),
        ("EEEE, MMMM", "%A, %B", "Friday, January"),
    ],
)
def test_translation_and_formatting(pattern: str, strftime: str, value: str) -> None:
    formatter = DateFormatter(pattern)
    assert formatter.strftime == strftime
    assert formatter.spark_pattern == pattern
    assert formatter.format(MOMENT) == value


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("YYYYMMdd", r"'Y' is the week-based year in Java; use 'yyyy'"),
        ("uuuuMMdd", r"'u' is not supported by Spark's date_format"),
        ("yyyyMMdd HH:mm:ss.SSS", r"fractions of a second cannot name a partition"),
        ("yyyy-M-d", r"'M' is not supported \(use MM or MMM or MMMM\)"),
        ("yyyy-MM-ddd", r"'ddd' is not supported \(use dd\)"),
        ("yyyyy", r"'yyyyy' is not supported"),
        ("yyyy-MM-dd H", r"'H' is not supported \(use HH\)"),
        ("yyyyMMdd z", r"the letter 'z' is not supported"),
        ("yyyy-QQ", r"the letter 'Q' is not supported"),
        ("yyyy-ww", r"the letter 'w' is not supported"),
        ("yyyy[-MM]", r"'\[' \(optional sections, reserved characters\) is not supported"),
        ("yyyy#", r"'#' .* is not supported"),
        ("yyyy'-MM", r"the quote at index 4 is never closed"),
        ("", r"date-formatter is empty"),
        ("  ", r"date-formatter is empty"),
    ],
)
def test_unsupported_patterns_are_rejected_with_the_letter(pattern: str, message: str) -> None:
    with pytest.raises(FormatterError, match=message):
        DateFormatter(pattern)


def test_formatter_is_frozen_and_comparable() -> None:
    assert DateFormatter("yyyyMMdd") == DateFormatter("yyyyMMdd")
    with pytest.raises(AttributeError):
        DateFormatter("yyyyMMdd").pattern = "yyyy"  # type: ignore[misc]


OPTIONS = [
    ("format", "json"),
    ("partition.fields.ds.date-formatter", "yyyyMMdd"),
    ("partition.fields.hh.date-formatter", "HH"),
]


def test_partition_formatters_in_full_mode() -> None:
    result = partition_formatters(OPTIONS, ["ds", "hh"], RefreshMode.FULL)
    assert result.formatters == (("ds", DateFormatter("yyyyMMdd")), ("hh", DateFormatter("HH")))
    assert result.notes == ()
    assert result.get("ds") == DateFormatter("yyyyMMdd") and result.get("other") is None


def test_partition_formatters_note_in_continuous_mode() -> None:
    result = partition_formatters(OPTIONS[:2], ["ds"], RefreshMode.CONTINUOUS)
    assert result.formatters == (("ds", DateFormatter("yyyyMMdd")),)
    assert result.notes == (
        "'partition.fields.ds.date-formatter' has no effect in CONTINUOUS mode, as in Flink: every refresh covers "
        "all partitions; it applies if the table switches to FULL mode",
    )


def test_partition_column_match_is_case_insensitive_and_keeps_the_declared_spelling() -> None:
    result = partition_formatters([("partition.fields.DS.date-formatter", "yyyyMMdd")], ["ds"])
    assert result.formatters[0][0] == "ds"


def test_formatter_on_a_non_partition_column_is_an_error() -> None:
    message = r"names 'dt', which is not a partition column \(partition columns: ds, hh\)"
    with pytest.raises(FormatterError, match=message):
        partition_formatters([("partition.fields.dt.date-formatter", "yyyyMMdd")], ["ds", "hh"], RefreshMode.FULL)


def test_formatter_needs_a_string_column_when_types_are_declared() -> None:
    with pytest.raises(FormatterError, match=r"needs a string partition column, but ds is declared DATE"):
        partition_formatters([("partition.fields.ds.date-formatter", "yyyyMMdd")], ["ds"], column_types={"ds": "DATE"})
    ok = partition_formatters(
        [("partition.fields.ds.date-formatter", "yyyyMMdd")], ["ds"], column_types={"DS": "VARCHAR(8)"}
    )
    assert ok.get("ds") is not None


def test_other_options_are_ignored() -> None:
    assert partition_formatters([("partition.fields.ds.other", "x"), ("format", "json")], []).formatters == ()
