"""Seeded, deterministic test data written into Iceberg tables with Spark: user logs, products, orders.

The notebooks and benchmarks need sources that look like the tutorials' (a Faker connector writing user logs
and a product dimension at N rows per second) but give the same rows on every run, so that the notebooks can
check their results. Row ``i`` of a dataset is a pure function of ``(seed, i)``: every column is computed by
Spark from ``xxhash64(seed, column, i)`` over ``range(start, start + rows)``, so a million rows cost one Spark
job and no Python loop, and appending rows ``[n, n + k)`` later continues the same sequence.

:class:`RateWriter` appends the next rows every second (``rows_per_second``) on a thread it owns, for a
source that keeps growing while a materialized table follows it.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.runtime.spark.quoting import qualified, string_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

COMPANIES = ("ZhongTong", "YuanTong", "ShenTong", "YunDa", "SF Express", "JD Logistics")
"""The logistics companies of the order-count example (the article's two first)."""


class Dataset(enum.Enum):
    """What a generator writes; each member's value is the table's column list."""

    USER_LOG = "item_id INT, user_id INT, vtime TIMESTAMP, ds STRING"
    """Page views: which user saw which item when, partitioned by the day ``ds`` (``yyyyMMdd``)."""
    PRODUCTS = "item_id INT, title STRING, pict_url STRING, brand_id INT, seller_id INT"
    """The product dimension: one row per ``item_id`` (row ``i`` is item ``i``)."""
    ORDERS = "order_id STRING, tms_company STRING, amount DECIMAL(10,2), order_time TIMESTAMP"
    """Orders and the logistics company carrying each; ``order_id`` is row ``i + 1``, at least 3 digits."""


@dataclass(frozen=True)
class DataGenerator:
    """Rows ``[start, start + rows)`` of ``dataset`` for ``seed``; the same arguments give the same rows.

    Args:
        day: the day (``yyyyMMdd``) user-log rows fall on (``vtime`` spread over its 24 hours, ``ds`` = day).
        items: user logs pick ``item_id`` in ``[0, items)``; products are items ``0 …``.
        users: user logs pick ``user_id`` in ``[0, users)``.
    """

    dataset: Dataset
    seed: int = 42
    day: str = "20241216"
    items: int = 1000
    users: int = 100

    def __post_init__(self) -> None:
        if not (len(self.day) == 8 and self.day.isdigit()):
            raise ValueError(f"day must be yyyyMMdd, e.g. '20241216', got {self.day!r}")
        if self.items < 1 or self.users < 1:
            raise ValueError(f"items and users must be at least 1, got items={self.items}, users={self.users}")

    def columns(self) -> list[str]:
        """Spark SQL expressions over ``id`` (the row number), one per column of the dataset."""
        if self.dataset is Dataset.USER_LOG:
            midnight = f"to_timestamp({string_literal(self.day)}, 'yyyyMMdd')"
            return [
                f"CAST({self._pick('item', self.items)} AS INT) AS item_id",
                f"CAST({self._pick('user', self.users)} AS INT) AS user_id",
                f"{midnight} + make_interval(0, 0, 0, 0, 0, 0, {self._pick('time', 86400)}) AS vtime",
                f"{string_literal(self.day)} AS ds",
            ]
        if self.dataset is Dataset.PRODUCTS:
            return [
                "CAST(id AS INT) AS item_id",
                "concat('product ', id) AS title",
                "concat('img', id, '.example') AS pict_url",
                f"CAST(1000 + {self._pick('brand', 9000)} AS INT) AS brand_id",
                f"CAST(1000 + {self._pick('seller', 9000)} AS INT) AS seller_id",
            ]
        companies = ", ".join(string_literal(c) for c in COMPANIES)
        return [
            "format_string('%03d', id + 1) AS order_id",
            f"element_at(array({companies}), CAST({self._pick('company', len(COMPANIES))} AS INT) + 1) AS tms_company",
            f"CAST(({self._pick('amount', 100000)} + 100) / 100 AS DECIMAL(10,2)) AS amount",
            "timestamp'2024-12-16 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 7) AS order_time",
        ]

    def _pick(self, column: str, modulus: int) -> str:
        return f"pmod(xxhash64({int(self.seed)}, {string_literal(column)}, id), {int(modulus)})"

    def frame(self, spark: SparkSession, rows: int, start: int = 0) -> DataFrame:
        """The rows as a DataFrame (nothing written)."""
        if rows < 0 or start < 0:
            raise ValueError(f"rows and start must not be negative, got rows={rows}, start={start}")
        return spark.range(start, start + rows).selectExpr(*self.columns())

    def create_table(self, spark: SparkSession, table: str) -> None:
        """Create the Iceberg table for this dataset if it does not exist (user logs partitioned by ``ds``)."""
        partitioned = " PARTITIONED BY (ds)" if self.dataset is Dataset.USER_LOG else ""
        spark.sql(f"CREATE TABLE IF NOT EXISTS {qualified(table)} ({self.dataset.value}) USING iceberg{partitioned}")

    def write(self, spark: SparkSession, table: str, rows: int, start: int = 0) -> int:
        """Append rows ``[start, start + rows)`` to ``table`` (created if missing) in one commit; returns ``rows``."""
        self.create_table(spark, table)
        if rows:
            self.frame(spark, rows, start).writeTo(table).append()
        return rows


class RateWriter:
    """Appends the next ``rows_per_second`` rows of a generator to a table once a second, on its own thread.

    ``start()`` and ``stop()`` are idempotent; ``stop()`` joins the thread. ``written`` counts the rows
    committed so far; the next batch continues at row ``start + written``.
    """

    def __init__(
        self, spark: SparkSession, table: str, generator: DataGenerator, rows_per_second: int, start: int = 0
    ) -> None:
        if rows_per_second < 1:
            raise ValueError(f"rows_per_second must be at least 1, got {rows_per_second}")
        self.spark, self.table, self.generator = spark, table, generator
        self.rows_per_second, self.first_row = rows_per_second, start
        self.written = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> RateWriter:
        if self._thread is None or not self._thread.is_alive():
            self.generator.create_table(self.spark, self.table)
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name=f"mt-datagen-{self.table}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> int:
        """Stop after the batch in flight; returns the rows written."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        return self.written

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                start = self.first_row + self.written
                self.written += self.generator.write(self.spark, self.table, self.rows_per_second, start)
            except Exception as exc:  # surfaced to the owner through ``error``; the thread ends
                self.error = exc
                return
            self._stop.wait(1.0)
