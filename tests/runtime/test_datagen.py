"""The seeded data generator on a real Spark session writing real Iceberg tables (a Hadoop catalog)."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import pytest

from mt_magic.datagen import COMPANIES, DataGenerator, Dataset, RateWriter

pytestmark = pytest.mark.spark


def rows(spark, generator: DataGenerator, n: int, start: int = 0) -> list[tuple]:
    return [tuple(r) for r in generator.frame(spark, n, start).collect()]


def test_same_seed_same_rows_other_seed_other_rows_and_ranges_continue(spark) -> None:
    logs = DataGenerator(Dataset.USER_LOG, seed=7)
    first = rows(spark, logs, 200)
    assert first == rows(spark, DataGenerator(Dataset.USER_LOG, seed=7), 200)
    assert first != rows(spark, DataGenerator(Dataset.USER_LOG, seed=8), 200)
    assert rows(spark, logs, 120) + rows(spark, logs, 80, start=120) == first


def test_user_logs_stay_within_their_day_items_and_users(spark) -> None:
    generated = rows(spark, DataGenerator(Dataset.USER_LOG, seed=1, day="20241217", items=50, users=10), 2000)
    assert {r[3] for r in generated} == {"20241217"}
    assert {r[0] for r in generated} == set(range(50))  # 2,000 draws cover all 50 items
    assert {r[1] for r in generated} == set(range(10))
    assert all(datetime(2024, 12, 17) <= r[2] < datetime(2024, 12, 18) for r in generated)
    assert len({r[2].hour for r in generated}) == 24


def test_products_and_orders(spark) -> None:
    products = rows(spark, DataGenerator(Dataset.PRODUCTS), 5)
    assert [p[0] for p in products] == [0, 1, 2, 3, 4]
    assert products[3][1] == "product 3" and all(1000 <= p[3] < 10000 for p in products)
    orders = rows(spark, DataGenerator(Dataset.ORDERS, seed=3), 300)
    assert [o[0] for o in orders[:3]] == ["001", "002", "003"]
    later = rows(spark, DataGenerator(Dataset.ORDERS, seed=3), 3, start=299_999)
    assert [o[0] for o in later] == ["300000", "300001", "300002"]  # ids stay unique past 999
    assert {o[1] for o in orders} == set(COMPANIES)
    assert all(1 <= float(o[2]) <= 1001 for o in orders)


def test_write_appends_one_commit_per_call_into_a_partitioned_iceberg_table(spark, hadoop_catalog) -> None:
    table = f"{hadoop_catalog}.gen.user_log"
    generator = DataGenerator(Dataset.USER_LOG, seed=5)
    assert generator.write(spark, table, 300) == 300
    DataGenerator(Dataset.USER_LOG, seed=5, day="20241217").write(spark, table, 100, start=300)
    counts = {r.ds: r.n for r in spark.sql(f"SELECT ds, count(*) AS n FROM {table} GROUP BY ds").collect()}
    assert counts == {"20241216": 300, "20241217": 100}
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] == 2
    assert [f.name for f in spark.table(table).schema] == ["item_id", "user_id", "vtime", "ds"]
    partitions = spark.sql(f"SELECT count(*) FROM {table}.partitions").first()[0]
    assert partitions == 2


def test_rate_writer_appends_the_next_rows_every_second_until_stopped(spark, hadoop_catalog) -> None:
    table = f"{hadoop_catalog}.gen.orders"
    generator = DataGenerator(Dataset.ORDERS, seed=9)
    writer = RateWriter(spark, table, generator, rows_per_second=5).start()
    writer.start()  # idempotent
    deadline, tick = time.monotonic() + 60, threading.Event()
    while writer.written < 15 and time.monotonic() < deadline:
        tick.wait(0.2)
    written = writer.stop()
    assert writer.error is None
    assert written >= 15 and written % 5 == 0
    stored = sorted(tuple(r) for r in spark.table(table).collect())
    assert stored == sorted(rows(spark, generator, written))
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] == written // 5
    assert writer.stop() == written  # idempotent


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DataGenerator(Dataset.USER_LOG, day="2024-12-16"), r"day must be yyyyMMdd.*'2024-12-16'"),
        (lambda: DataGenerator(Dataset.USER_LOG, items=0), r"items=0"),
        (lambda: RateWriter(None, "t", DataGenerator(Dataset.ORDERS), 0), r"rows_per_second.*got 0"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_name_the_value(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()
