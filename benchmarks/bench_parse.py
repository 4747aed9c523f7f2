"""How long the SQL front end takes on a typical cell, against the 50 ms budget of issue 4.

Times ``parse_cell`` (our DDL grammar over sqlparse tokens, FRESHNESS and formatter checks) and
``analyze_statement`` (sqlglot on the query body) on the tutorial's dws_overall cell, and on a two-statement
cell, each averaged over many runs after a warm-up. Run: ``.venv/bin/python benchmarks/bench_parse.py [runs]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from mt_magic.sql import CreateMaterializedTable, analyze_statement, parse_cell

BUDGET_MS = 50.0

DWS_OVERALL = """
-- Calculate daily PVs and UVs.
CREATE MATERIALIZED TABLE dws_overall (
    PRIMARY KEY (ds, hh) NOT ENFORCED
)
PARTITIONED BY (ds)
WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd')
FRESHNESS = INTERVAL '1' HOUR -- Refresh every 1 hour.
AS SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(DISTINCT user_id) AS uv
   FROM (SELECT ds, date_format(vtime, 'HH') AS hh, user_id FROM `paimon`.`default`.`dwd_user_log_product`) tmp
   GROUP BY GROUPING SETS ((ds), (ds, hh));
"""

DWD_AND_DWS = (
    """
CREATE MATERIALIZED TABLE dwd_user_log_product (PRIMARY KEY (item_id) NOT ENFORCED)
PARTITIONED BY (ds)
WITH ('partition.fields.ds.date-formatter' = 'yyyyMMdd')
FRESHNESS = INTERVAL '1' HOUR
AS SELECT l.ds, l.item_id, l.user_id, l.vtime, r.brand_id, r.seller_id
   FROM `paimon`.`default`.`ods_user_log` l
   INNER JOIN `paimon`.`default`.`ods_dim_product` r ON l.item_id = r.item_id;
"""
    + DWS_OVERALL
)


def parse_and_analyze(cell: str) -> None:
    for statement in parse_cell(cell):
        if isinstance(statement, CreateMaterializedTable):
            analyze_statement(statement)


def measure(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Mean and p95 in milliseconds, after a warm-up of a tenth of the runs."""
    for _ in range(max(1, runs // 10)):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.fmean(samples), samples[int(0.95 * (len(samples) - 1))]


def main(runs: int = 500) -> None:
    (dws,) = parse_cell(DWS_OVERALL)
    assert isinstance(dws, CreateMaterializedTable)
    cases: list[tuple[str, Callable[[], object]]] = [
        ("parse_cell (dws_overall)", lambda: parse_cell(DWS_OVERALL)),
        ("analyze_statement (dws_overall)", lambda: analyze_statement(dws)),
        ("parse + analyze (dws_overall)", lambda: parse_and_analyze(DWS_OVERALL)),
        ("parse + analyze (dwd + dws cell)", lambda: parse_and_analyze(DWD_AND_DWS)),
    ]
    print(f"{runs} runs each; budget {BUDGET_MS:.0f} ms per cell")
    print(f"{'case':36} {'mean ms':>9} {'p95 ms':>9} {'p95 / budget':>13}")
    for name, fn in cases:
        mean, p95 = measure(fn, runs)
        print(f"{name:36} {mean:9.3f} {p95:9.3f} {p95 / BUDGET_MS:12.1%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
