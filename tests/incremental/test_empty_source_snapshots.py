"""Issue 46: a source whose new snapshots add and remove no rows (an empty append, such as an upstream table's
refresh recording its state, or a compaction) did not change. A join whose other table appended still runs its one
delta term in process, as ``%mt explain``'s engine line says, and its state records the new snapshots."""

from __future__ import annotations

import pytest
from incremental_testing import assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS
from mt_magic.vocabulary import RefreshEngine

pytestmark = pytest.mark.spark


def test_an_empty_snapshot_of_one_source_leaves_the_other_sources_append_in_process(spark, mt) -> None:
    facts, dims = qualified(mt, "facts"), qualified(mt, "dims")
    spark.sql(f"CREATE TABLE {facts} (id BIGINT, k INT, amount DECIMAL(10, 2)) USING iceberg")
    spark.sql(f"CREATE TABLE {dims} (k INT, name STRING) USING iceberg")
    insert_values(spark, dims, "(1, 'one')", "(2, 'two')")
    insert_values(spark, dims, "(3, 'three')")
    insert_values(spark, facts, "(1, 1, 10.00)", "(2, 2, 20.50)", "(3, NULL, 5.00)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE j FRESHNESS = INTERVAL '1' MINUTE AS "
        f"SELECT f.id, f.amount, d.name FROM {facts} f JOIN {dims} d ON f.k = d.k",
    )
    table = dims.split(".", 1)[1]
    for round_, empty in enumerate(("an empty append", "an empty append and a compaction")):
        spark.table(dims).limit(0).writeTo(dims).append()
        if "compaction" in empty:
            spark.sql(
                f"CALL mtit.system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2'))"
            )
        insert_values(spark, facts, f"({10 + round_}, 3, 7.00)", f"({20 + round_}, 1, 1.25)")
        outcome = refresh(mt, "j")
        assert outcome.engine is RefreshEngine.IN_PROCESS, f"{empty}: {outcome.strategy}"
        assert outcome.strategy.startswith("incremental: append the delta") and outcome.strategy.endswith(IN_PROCESS)
        assert_matches_oracle(mt, "j")
        info = mt.workspace.catalog.load_materialized(qualified(mt, "j"))[0]
        recorded = {s.qualified_name: s.snapshot_id for s in info.last_refresh()[1].source_states}
        assert recorded[dims] == mt.workspace.catalog.load(dims).current_snapshot_id, f"{empty}: dims not recorded"
