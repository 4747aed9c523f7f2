"""Rewrites the strategies run: they touch only the result SELECT, and literals round-trip through Spark."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from mt_magic.sql.query.result_rewrite import in_list, key_probe, literal, with_input_filter, without_having

GROUPED = (
    "WITH c AS (SELECT * FROM a.b.t WHERE v > 0) SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS n "
    "FROM (SELECT ds, hh FROM c) tmp GROUP BY GROUPING SETS ((ds), (ds, hh)) HAVING count(*) > 1"
)


def test_rewrites_touch_only_the_result_select() -> None:
    assert "HAVING" not in without_having(GROUPED) and "v > 0" in without_having(GROUPED)
    filtered = with_input_filter(GROUPED, [in_list("ds", [literal("d1", "string")], has_null=True)])
    assert "FROM (SELECT ds, hh FROM c) AS tmp WHERE ((ds) IN ('d1') OR (ds) IS NULL) GROUP BY" in filtered
    assert key_probe(GROUPED, ["hh"]) == (
        "WITH c AS (SELECT * FROM a.b.t WHERE v > 0) SELECT hh AS __mt_k0 FROM (SELECT ds, hh FROM c) AS tmp"
    )
    wrapped = "SELECT k AS key, n FROM (SELECT k, count(*) AS n FROM t WHERE v > 1 GROUP BY k) w"
    assert with_input_filter(wrapped, [in_list("k", [literal(3, "int")], False)]) == (
        "SELECT k AS key, n FROM (SELECT k, COUNT(*) AS n FROM t WHERE v > 1 AND (k) IN (3) GROUP BY k) AS w"
    )
    assert in_list("k", [], has_null=False).sql() == "FALSE"


@pytest.mark.spark
def test_literals_round_trip_through_spark(spark) -> None:
    values = [
        ("it's \\ odd", "string"),
        (7, "int"),
        (2**40, "bigint"),
        (dt.date(2024, 12, 16), "date"),
        (Decimal("-12.50"), "decimal(10,2)"),
        (True, "boolean"),
        (1_734_307_200_000_001, "timestamp"),
    ]
    expressions = ", ".join(literal(v, t).sql(dialect="spark") for v, t in values)
    row = spark.sql(f"SELECT {expressions}").first()
    got = list(row)
    assert got[:6] == [v for v, _ in values[:6]]
    assert (
        spark.sql(f"SELECT unix_micros({literal(values[6][0], 'timestamp').sql(dialect='spark')})").first()[0]
        == values[6][0]
    )
    assert literal(1.5, "double") is None
