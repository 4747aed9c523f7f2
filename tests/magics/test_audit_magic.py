"""``%mt audit`` on a real IPython shell (issue 48): after a CREATE MATERIALIZED TABLE and its first refresh, the
magic prints who changed the table, what they did and on which table, newest first; ``%mt audit`` alone lists the
catalog's changes.

The extension is loaded as a user loads it; its catalog's token is the owner's, the admin principal of the embedded
single-user catalog.
"""

from __future__ import annotations

import uuid

import pytest
from IPython.core.interactiveshell import InteractiveShell

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def shell(spark):  # type: ignore[no-untyped-def]
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


def test_mt_audit_names_the_principal_the_action_and_the_table(shell, spark, capsys) -> None:  # type: ignore[no-untyped-def]
    suffix = uuid.uuid4().hex[:6]
    source, table = f"audit_src_{suffix}", f"audit_mt_{suffix}"
    spark.sql(f"CREATE TABLE mt.default.{source} (page STRING) USING iceberg")
    spark.sql(f"INSERT INTO mt.default.{source} VALUES ('home'), ('cart'), ('home')")
    shell.run_cell_magic(
        "materialized",
        "--wait",
        f"CREATE MATERIALIZED TABLE {table} AS SELECT page, count(*) AS views FROM {source} GROUP BY page",
    )
    capsys.readouterr()

    shell.run_line_magic("mt", f"audit {table}")
    rows = capsys.readouterr().out.splitlines()
    on_table = [row.split() for row in rows if f"table default.{table}" in row]
    # each row: date, time, principal, address, action, object kind and name, details
    assert on_table, rows
    assert {row[2] for row in on_table} == {"admin"}, rows
    actions = {row[4] for row in on_table}
    assert {"create", "commit"} <= actions, rows
    assert all(f"default.{table}" in row for row in rows), rows  # only that table's changes

    shell.run_line_magic("mt", "audit")
    everything = capsys.readouterr().out
    assert f"table default.{source}" in everything and f"table default.{table}" in everything
