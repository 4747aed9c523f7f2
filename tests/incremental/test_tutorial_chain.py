"""The seed tutorial's chain, CONTINUOUS: DWD (an inner join of the user log with the product dimension)
feeding DWS (COUNT and COUNT DISTINCT over GROUPING SETS). Random appends, deletes and dimension updates;
after every refresh of each table, the table equals its query at the snapshots its refresh state records.
"""

from __future__ import annotations

import random

import pytest
from incremental_testing import COW, assert_matches_oracle, refresh, run

from mt_magic.runtime.refresh.incremental import Strategy
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark

DWD = """
CREATE MATERIALIZED TABLE dwd_user_log_product (PRIMARY KEY (ds, item_id, user_id) NOT ENFORCED)
PARTITIONED BY (ds)
FRESHNESS = INTERVAL '1' MINUTE
AS SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, r.seller_id
   FROM ods_user_log l INNER JOIN ods_dim_product r ON l.item_id = r.item_id
"""
DWS = """
CREATE MATERIALIZED TABLE dws_overall (PRIMARY KEY (ds, hh) NOT ENFORCED)
PARTITIONED BY (ds)
FRESHNESS = INTERVAL '1' MINUTE
AS SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(DISTINCT user_id) AS uv
   FROM (SELECT ds, date_format(vtime, 'HH') AS hh, user_id FROM dwd_user_log_product) tmp
   GROUP BY GROUPING SETS ((ds), (ds, hh))
"""
ROUNDS = 5


class Tutorial:
    """The ODS sources and random changes to them."""

    def __init__(self, spark, rng: random.Random) -> None:
        self.spark, self.rng = spark, rng
        spark.sql(
            "CREATE TABLE ods_user_log (item_id INT, user_id INT, vtime TIMESTAMP, ds STRING) USING iceberg "
            f"PARTITIONED BY (ds) {COW}"
        )
        spark.sql(
            f"CREATE TABLE ods_dim_product (item_id INT, title STRING, brand_id INT, seller_id INT) USING iceberg {COW}"
        )
        spark.sql(
            "INSERT INTO ods_dim_product SELECT CAST(id AS INT), concat('p', id), CAST(id % 3 AS INT), 7 FROM range(8)"
        )  # items 8..11 have no product: the inner join drops them
        self.log(30)

    def log(self, rows: int) -> None:
        day = self.rng.choice(["20241216", "20241217"])
        start = self.rng.randint(0, 10_000)
        self.spark.sql(f"""INSERT INTO ods_user_log SELECT CAST((id * 7 + {start}) % 12 AS INT),
            CAST((id + {start}) % 9 AS INT),
            to_timestamp('{day[:4]}-{day[4:6]}-{day[6:]}') + make_interval(0, 0, 0, 0, (id * 5 + {start}) % 24, 0, 0),
            '{day}' FROM range({rows})""")

    def change(self) -> None:
        rng = self.rng
        kind = rng.choice(["log", "log", "delete log", "update dim", "add product", "drop product"])
        item = rng.randint(0, 11)
        statements = {
            "log": lambda: self.log(rng.randint(3, 15)),
            "delete log": lambda: self.spark.sql(f"DELETE FROM ods_user_log WHERE user_id = {rng.randint(0, 8)}"),
            "update dim": lambda: self.spark.sql(
                f"UPDATE ods_dim_product SET brand_id = brand_id + 1 WHERE item_id = {item}"
            ),
            "add product": lambda: self.spark.sql(f"INSERT INTO ods_dim_product VALUES ({item}, 'new', 5, 8)"),
            "drop product": lambda: self.spark.sql(f"DELETE FROM ods_dim_product WHERE item_id = {item}"),
        }
        statements[kind]()


INCREMENTAL = {
    "dwd_user_log_product": {Strategy.APPEND_DELTA, Strategy.APPLY_CHANGES, Strategy.NO_LOGICAL_CHANGE},
    "dws_overall": {Strategy.AFFECTED_PARTITIONS, Strategy.NO_LOGICAL_CHANGE},
}


def test_tutorial_chain_stays_equal_to_a_full_recompute(mt, spark) -> None:
    rng = random.Random(2024)
    ods = Tutorial(spark, rng)
    run(mt, DWD + ";" + DWS)
    used: set[str] = set()
    for _ in range(ROUNDS):
        ods.change()
        ods.change()
        for table in ("dwd_user_log_product", "dws_overall"):
            outcome = refresh(mt, table)
            if outcome.kind is RefreshKind.NOOP:
                continue
            assert outcome.kind is RefreshKind.INCREMENTAL, (table, outcome)
            strategy = next(s for s in INCREMENTAL[table] if outcome.strategy.startswith(f"incremental: {s.label}"))
            used.add(f"{table}: {strategy.name}")
            assert_matches_oracle(mt, table)
    # the seed exercises the delta join both ways and the grouping-sets recompute
    assert {
        "dwd_user_log_product: APPEND_DELTA",
        "dwd_user_log_product: APPLY_CHANGES",
        "dws_overall: AFFECTED_PARTITIONS",
    } <= used, used
