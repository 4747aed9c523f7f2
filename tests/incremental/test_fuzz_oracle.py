"""The fuzzer's order-free sums (``in_process_fuzz._exact_total``, ``_sums_as_lists``): Spark's ``sum`` semantics
per type and ANSI mode, without a JVM. Spark adds in an order of its own, and a partial sum that overflows makes
its answer depend on that order; the fuzzer judges such cases against these totals."""

from __future__ import annotations

from decimal import Decimal

import pytest
from in_process_fuzz import _exact_total, _spark_sums, _sums_as_lists, _TotalOverflows

MAX_D38 = Decimal("9999999999999999999999999999.9999999999")
MIN_D38 = Decimal("-9999999999999999999999999999.9999999999")  # not -MAX_D38: unary minus rounds to 28 digits
LONG_MAX = 2**63 - 1


def test_a_total_that_fits_is_exact_whatever_its_partial_sums() -> None:
    assert _exact_total([MAX_D38, MAX_D38, MIN_D38], "DECIMAL(38,10)", ansi=True) == MAX_D38
    assert _exact_total([LONG_MAX, 5, -LONG_MAX], "BIGINT", ansi=True) == 5


def test_a_total_past_its_type_is_null_wraps_or_fails_as_spark_says() -> None:
    past = [MAX_D38, Decimal("0.0000000001")]
    assert _exact_total(past, "DECIMAL(38,10)", ansi=False) is None
    assert _exact_total([LONG_MAX, 5], "BIGINT", ansi=False) == -(2**63) + 4
    with pytest.raises(_TotalOverflows):
        _exact_total(past, "DECIMAL(38,10)", ansi=True)
    with pytest.raises(_TotalOverflows):
        _exact_total([LONG_MAX, 5], "BIGINT", ansi=True)


def test_a_narrow_decimal_sum_has_ten_more_digits_and_no_values_is_null() -> None:
    assert _exact_total([Decimal("99999"), Decimal("1")], "DECIMAL(5,0)", ansi=True) == 100000
    assert _exact_total([], "DECIMAL(5,0)", ansi=True) is None


def test_sums_collect_their_values_and_keep_their_aliases() -> None:
    text, sums = _sums_as_lists(
        "SELECT tn, max(dt) AS a0, sum(d38) AS a1, sum(DISTINCT l) AS a2 FROM t VERSION AS OF 3 WHERE b GROUP BY tn"
    )
    assert sums == {"a1": "DECIMAL(38,10)", "a2": "BIGINT"}
    assert "COLLECT_LIST(d38) AS a1" in text and "COLLECT_SET(l) AS a2" in text and "VERSION AS OF 3" in text


def test_a_decimal_sum_some_order_overflows_may_also_be_null_with_ansi_off() -> None:
    """The soak's seed 1, batch 5: -9.99·10^27 fits DECIMAL(38, 10), but its negative values alone pass 10^28, so
    Spark answers NULL in the order that adds them first (and the total in others)."""
    values = [MIN_D38, Decimal("-5000000000000000000000000000"), Decimal("5000000000000000000000000000")]
    assert _spark_sums(values, "DECIMAL(38,10)", ansi=False) == {MIN_D38, None}
    assert _spark_sums(values, "DECIMAL(38,10)", ansi=True) == {MIN_D38}  # that order fails the query instead
    assert _spark_sums([MAX_D38, MIN_D38], "DECIMAL(38,10)", ansi=False) == {Decimal(0)}  # no order overflows
    assert _spark_sums([LONG_MAX, 5, -LONG_MAX], "BIGINT", ansi=False) == {5}  # BIGINT wraps: any order
