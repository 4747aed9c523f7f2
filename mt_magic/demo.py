"""The main job on the embedded defaults: the seed tutorial's ODS → DWD → DWS chain, end to end.

Starts (or reuses) the embedded REST catalog and a local Spark session, writes two ODS tables, declares
two materialized tables with the same statements a notebook cell would hold, lets the refresh manager
populate them, appends new source data, refreshes with cascade, and prints what an Iceberg reader sees.
"""

from __future__ import annotations

import concurrent.futures
import sys
import time

from mt_magic.errors import MtMagicError
from mt_magic.runtime.connection import Connection, ConnectionSettings, connect
from mt_magic.sql import parse_cell
from mt_magic.sql.names import TableName

ODS = """
CREATE TABLE IF NOT EXISTS ods_user_log (item_id INT, user_id INT, vtime TIMESTAMP, ds STRING)
USING iceberg PARTITIONED BY (ds);
CREATE TABLE IF NOT EXISTS ods_dim_product (item_id INT, title STRING, brand_id INT, seller_id INT)
USING iceberg
"""

MATERIALIZED = """
CREATE MATERIALIZED TABLE dwd_user_log_product (PRIMARY KEY (ds, item_id, user_id, vtime) NOT ENFORCED)
PARTITIONED BY (ds)
WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd')
FRESHNESS = INTERVAL '1' HOUR
AS SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, r.seller_id
   FROM ods_user_log l INNER JOIN ods_dim_product r ON l.item_id = r.item_id;

CREATE MATERIALIZED TABLE dws_overall (PRIMARY KEY (ds, hh) NOT ENFORCED)
PARTITIONED BY (ds)
WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd')
FRESHNESS = INTERVAL '1' HOUR
AS SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(DISTINCT user_id) AS uv
   FROM (SELECT ds, date_format(vtime, 'HH') AS hh, user_id FROM dwd_user_log_product) tmp
   GROUP BY GROUPING SETS ((ds), (ds, hh))
"""


def _load_sources(conn: Connection, day: str, users: int) -> None:
    """One day of user logs; the product dimension is written once."""
    spark = conn.spark
    for ddl in ODS.split(";"):
        spark.sql(ddl)
    spark.sql(f"""
        INSERT INTO ods_user_log
        SELECT CAST(id % 50 AS INT), CAST(id % {users} AS INT),
               to_timestamp('{day[:4]}-{day[4:6]}-{day[6:]} 00:00:00') + make_interval(0,0,0,0,0,0, id * 17 % 86400),
               '{day}'
        FROM range(5000)""")
    if spark.table("ods_dim_product").isEmpty():
        spark.sql("""INSERT INTO ods_dim_product
            SELECT CAST(id AS INT), concat('product ', id), CAST(1000 + id % 7 AS INT), CAST(2000 + id % 3 AS INT)
            FROM range(50)""")


def _wait(futures: list[concurrent.futures.Future]) -> None:
    for future in futures:
        future.result(timeout=600)


def run_demo() -> None:
    started = time.monotonic()
    conn = connect(ConnectionSettings(namespace="demo"))
    try:
        service = conn.service
        print(f"catalog: {conn.catalog_config.properties.get('uri')}  spark: {conn.spark.version}")
        for stmt in parse_cell("DROP MATERIALIZED TABLE IF EXISTS dws_overall; "
                               "DROP MATERIALIZED TABLE IF EXISTS dwd_user_log_product"):
            service.execute(stmt)
        conn.spark.sql("DROP TABLE IF EXISTS ods_user_log PURGE")
        conn.spark.sql("DROP TABLE IF EXISTS ods_dim_product PURGE")
        _load_sources(conn, "20241216", users=100)
        results = [service.execute(s) for s in parse_cell(MATERIALIZED)]
        for r in results:
            print(r.message)
        _wait([r.refresh for r in results if r.refresh])
        _load_sources(conn, "20241217", users=40)  # a new day arrives upstream
        backfill = parse_cell("ALTER MATERIALIZED TABLE dwd_user_log_product REFRESH PARTITION (ds = '20241217')")
        result = service.execute(backfill[0], cascade=True)
        print(result.message)
        _wait([result.refresh] if result.refresh else [])
        if conn.manager is not None:
            conn.manager.wait_idle(timeout=600)
        print("\ndws_overall (daily rows; hourly rows too), read back from Iceberg through the REST catalog:")
        conn.spark.sql("SELECT ds, hh, pv, uv, (SELECT count(*) FROM dws_overall i WHERE i.ds = o.ds) AS rows_of_day "
                       "FROM dws_overall o WHERE hh = 'day' ORDER BY ds").show(truncate=False)
        history = service.engine.history(service.workspace.qualify(TableName("dws_overall")))
        print("refreshes of dws_overall (newest first):")
        for record in history:
            print(f"  {record.kind.value:<9} {record.trigger.value:<8} rows={record.rows_written:<5} "
                  f"snapshot={record.snapshot_id}")
        print(f"demo finished in {time.monotonic() - started:.1f}s")
        if conn.catalog_config.embedded:
            print(f"The embedded catalog keeps running at {conn.catalog_config.uri} for the next kernel "
                  "(stop it with: python -m mt_magic.catalog stop).")
    finally:
        conn.close()


def main() -> int:
    try:
        run_demo()
    except MtMagicError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
