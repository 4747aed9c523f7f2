"""What lineage costs a refresh when the OpenLineage consumer is down, against issue 50's 50 ms budget.

A refresh's hook is :meth:`RefreshLineage.started` before it and :meth:`~RefreshLineage.completed` after it (see
``Engine.refresh``); both only queue the event. This times that pair per refresh with ``OPENLINEAGE_URL`` pointing
at a loopback port nothing listens on (connections refused), over a real pyiceberg catalog (SQLite, in a temporary
directory) holding a materialized table and its source; then what the background thread did with the events in the
next seconds (a try against a consumer that is down lasts seconds: the HTTP transport retries; after it, sending
pauses and events are dropped, counted).
Run: ``.venv/bin/python benchmarks/bench_lineage.py [refreshes]``.
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone

BUDGET_MS = 50.0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def catalog(directory: str):  # noqa: ANN201 - a MaterializedCatalog
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.catalog.tables import MaterializedCatalog
    from mt_magic.vocabulary import RefreshMode

    iceberg = SqlCatalog("mt", uri=f"sqlite:///{directory}/catalog.db", warehouse=f"file://{directory}")
    iceberg.create_namespace("s")
    source = iceberg.create_table(("s", "orders"), pa.schema([("region", pa.string()), ("amount", pa.int64())]))
    source.append(pa.table({"region": ["eu"], "amount": [5]}))
    query = "SELECT region, SUM(amount) AS total FROM mt.s.orders GROUP BY region"
    definition = MaterializedTableDefinition(
        query, query, "INTERVAL '1' HOUR", RefreshMode.FULL, upstream=("mt.s.orders",)
    )
    iceberg.create_table(
        ("s", "totals"),
        pa.schema([("region", pa.string()), ("total", pa.int64())]),
        properties=definition.to_properties(),
    )
    return MaterializedCatalog(iceberg, "mt")


def main(refreshes: int) -> None:
    from mt_magic.lineage import RefreshSummary, lineage_from_environment

    os.environ["OPENLINEAGE_URL"] = f"http://127.0.0.1:{closed_port()}"
    with tempfile.TemporaryDirectory() as directory:
        lineage = lineage_from_environment(catalog(directory))
        assert lineage is not None
        summary = RefreshSummary("full", "full", "first refresh", 1, None, "spark", wall_s=1.0)
        costs = []
        for _ in range(refreshes):
            began = time.perf_counter()
            run = lineage.started("mt.s.totals", "scheduled", datetime.now(timezone.utc))
            lineage.completed(run, summary)
            costs.append((time.perf_counter() - began) * 1000)
        drained = lineage.flush(15)
        emitter = lineage.emitter
        costs.sort()
        print(f"lineage hook per refresh, consumer down ({refreshes} refreshes, 2 events each):")
        print(
            f"  median {statistics.median(costs):.3f} ms, p99 {costs[int(len(costs) * 0.99) - 1]:.3f} ms, "
            f"max {costs[-1]:.3f} ms (budget {BUDGET_MS:.0f} ms)"
        )
        print(
            f"  background after <= 15 s: {'all handled' if drained else 'still trying'}; "
            f"{emitter.failed} event(s) tried and failed (logged), {emitter.dropped} dropped (paused or queue full)"
        )
        lineage.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
