"""Names that Spark accepts in backquotes work end to end, or are refused at CREATE before anything is written.

Each example costs seconds of Spark, so the generated examples are few; the nasty cases are explicit.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mt_testing import run

from mt_magic.errors import MtMagicError
from mt_magic.runtime.spark.quoting import identifier
from mt_magic.sql.names import name_part_refusal

pytestmark = pytest.mark.spark

NASTY = st.text(alphabet=st.sampled_from("ab_ ;'\"`.é数-+%?#/\\()*"), min_size=1, max_size=8)


def _tables(mt) -> set[str]:
    return {ident[-1] for ident in mt.workspace.catalog.catalog.list_tables(mt.workspace.default_namespace)}


def _lifecycle(mt, spark, name: str) -> None:
    """CREATE, incremental and full refresh, ALTER AS / SET FRESHNESS / SUSPEND / RESUME, backfill, history,
    explain, lineage, preview, DROP — all by one strange table name (and a strange column name)."""
    ns = mt.workspace.default_namespace
    q = identifier(name)
    full = f"mtit.{ns}.{q}"
    spark.sql(f"CREATE TABLE mtit.{ns}.src (ds STRING, v INT) USING iceberg")
    spark.sql(f"INSERT INTO mtit.{ns}.src VALUES ('d1', 1)")
    run(
        mt,
        f"CREATE MATERIALIZED TABLE {q} PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' MINUTE "
        f"AS SELECT ds, v AS {q} FROM src",
    )
    spark.sql(f"INSERT INTO mtit.{ns}.src VALUES ('d2', 2)")
    run(mt, f"ALTER MATERIALIZED TABLE {q} REFRESH")  # incremental (append)
    assert sorted(r[1] for r in spark.table(full).collect()) == [1, 2]
    run(mt, f"ALTER MATERIALIZED TABLE {q} REFRESH PARTITION (ds = 'd1')")
    run(mt, f"ALTER MATERIALIZED TABLE {q} AS SELECT ds, v AS {q}, v * 10 AS w FROM src")
    run(mt, f"ALTER MATERIALIZED TABLE {q} SET FRESHNESS = INTERVAL '2' MINUTE")
    run(mt, f"ALTER MATERIALIZED TABLE {q} SUSPEND; ALTER MATERIALIZED TABLE {q} RESUME")
    run(mt, f"ALTER MATERIALIZED TABLE {q} REFRESH")
    assert sorted(r[2] for r in spark.table(full).collect()) == [10, 20]
    qualified_name = f"mtit.{ns}.{name}"
    assert mt.history(qualified_name).records
    assert qualified_name in mt.lineage(qualified_name).nodes
    assert mt.explain(qualified_name) is not None
    assert len(mt.preview(qualified_name, 5).rows) == 2
    assert mt.status(qualified_name).last_error is None
    run(mt, f"DROP MATERIALIZED TABLE {q}")
    assert name not in _tables(mt)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(name=NASTY)
@example(name="m1; DROP TABLE x")  # the first wave's regression: created, then every refresh failed
@example(name="a b")
@example(name="select")
@example(name="it's `quoted`")
@example(name="naïve_数据")
@example(name="a.b")  # refused: a dot inside a part
@example(name="50%")  # refused: pyiceberg sends names unencoded
def test_a_name_works_end_to_end_or_is_refused_before_anything_is_written(mt, spark, name: str) -> None:
    spark.sql(f"DROP TABLE IF EXISTS mtit.{mt.workspace.default_namespace}.src PURGE")
    if name_part_refusal(name) is None:
        _lifecycle(mt, spark, name)
        return
    before = _tables(mt)
    with pytest.raises(MtMagicError, match="does not support"):
        run(mt, f"CREATE MATERIALIZED TABLE {identifier(name)} AS SELECT 1 AS x")
    assert _tables(mt) == before and mt.statuses() == []
