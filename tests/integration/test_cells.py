"""A cell is all or nothing (issue 37): every statement is checked before the first is applied, and a failure to
apply undoes the statements applied before it, in reverse order (``mt_magic.runtime.cell``)."""

from __future__ import annotations

import pytest

from mt_magic.errors import CellNotAppliedError, MaterializedTableExistsError, MtMagicError
from mt_magic.runtime.cell import execute_cell
from mt_magic.sql import parse_cell

pytestmark = pytest.mark.spark


def _cell(mt, text: str) -> list:  # type: ignore[no-untyped-def]
    results = execute_cell(mt, parse_cell(text))
    for result in results:
        if result.refresh is not None:
            result.refresh.result(timeout=300)
    return results


def _tables(mt) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(name for (_, name) in mt.workspace.catalog.catalog.list_tables(mt.workspace.default_namespace))


@pytest.fixture
def source(spark, mt) -> str:  # type: ignore[no-untyped-def]
    spark.sql("CREATE TABLE tms_source (order_id STRING, tms_company STRING) USING iceberg")
    spark.sql("INSERT INTO tms_source VALUES ('1', 'a'), ('2', 'b')")
    return "tms_source"


def test_a_mistake_in_the_second_statement_applies_nothing_and_the_fixed_cell_runs(mt, source) -> None:
    """The issue's case: ``okfirst`` used to exist and refresh after the cell failed on ``badsecond``."""
    cell = (
        "CREATE MATERIALIZED TABLE okfirst FRESHNESS = INTERVAL '1' MINUTE AS SELECT tms_company FROM tms_source;\n"
        "CREATE MATERIALIZED TABLE badsecond FRESHNESS = INTERVAL '1' MINUTE AS SELECT {column} FROM tms_source"
    )
    with pytest.raises(MtMagicError, match="nope") as refused:
        _cell(mt, cell.format(column="nope"))
    assert "okfirst" not in _tables(mt) and "badsecond" not in _tables(mt), str(refused.value)
    assert not [s for s in mt.statuses() if s.name.endswith("okfirst")]
    _cell(mt, cell.format(column="order_id"))  # the fixed cell: no "okfirst already exists"
    assert {"okfirst", "badsecond"} <= set(_tables(mt))


def test_names_are_checked_as_the_statements_before_leave_the_catalog(mt, source) -> None:
    _cell(mt, "CREATE MATERIALIZED TABLE kept FRESHNESS = INTERVAL '1' MINUTE AS SELECT tms_company FROM tms_source")
    before = _tables(mt)
    with pytest.raises(MtMagicError, match="Statement 2 of the cell.*missing_one does not exist"):
        _cell(mt, "ALTER MATERIALIZED TABLE kept SUSPEND; ALTER MATERIALIZED TABLE missing_one SUSPEND")
    with pytest.raises(MaterializedTableExistsError, match="Statement 3 of the cell"):
        _cell(
            mt,
            "DROP MATERIALIZED TABLE kept;"
            "CREATE MATERIALIZED TABLE kept2 AS SELECT tms_company FROM tms_source;"
            "CREATE MATERIALIZED TABLE kept2 AS SELECT tms_company FROM tms_source",
        )
    assert _tables(mt) == before
    assert not mt.workspace.catalog.load_materialized(
        f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}.kept"
    )[1].suspended
    # a DROP then a CREATE of the same name in one cell is fine: checked in order
    _cell(mt, "DROP MATERIALIZED TABLE kept; CREATE MATERIALIZED TABLE kept AS SELECT order_id FROM tms_source")
    assert "kept" in _tables(mt)


def test_a_statement_failing_to_apply_undoes_the_ones_before_it(mt, source) -> None:
    """``after`` reads a table the cell creates, so its mistake is found only when it is applied: the cell's earlier
    statements (a freshness, a suspension, a new table) are undone in reverse order, and the message says so."""
    _cell(mt, "CREATE MATERIALIZED TABLE base_mt FRESHNESS = INTERVAL '1' MINUTE AS SELECT * FROM tms_source")
    name = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}.base_mt"
    before = mt.workspace.catalog.load_materialized(name)[1]
    with pytest.raises(CellNotAppliedError) as failed:
        _cell(
            mt,
            "ALTER MATERIALIZED TABLE base_mt SET FRESHNESS = INTERVAL '5' MINUTE;\n"
            "ALTER MATERIALIZED TABLE base_mt SUSPEND;\n"
            "CREATE MATERIALIZED TABLE first_mt AS SELECT tms_company FROM base_mt;\n"
            "CREATE MATERIALIZED TABLE after_mt AS SELECT nope FROM first_mt",
        )
    message = str(failed.value)
    assert message.startswith("Statement 4 of the cell failed:") and "nope" in message, message
    assert "Undone, so the cell changed nothing: created" in message and "suspended" in message, message
    assert sorted(_tables(mt)) == ["base_mt", "tms_source"]
    after = mt.workspace.catalog.load_materialized(name)[1]
    assert (after.freshness, after.suspended, after.refresh_mode) == (before.freshness, False, before.refresh_mode)


def test_a_rename_and_a_refresh_mode_are_undone_by_their_handlers(mt, source) -> None:
    """Each statement's undo is its handler's (``runtime.statements``): the RENAME goes back first, then the mode;
    the manager follows the name back."""
    _cell(mt, "CREATE MATERIALIZED TABLE base_rn FRESHNESS = INTERVAL '1' MINUTE AS SELECT * FROM tms_source")
    prefix = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}"
    before = mt.workspace.catalog.load_materialized(f"{prefix}.base_rn")[1]
    with pytest.raises(CellNotAppliedError) as failed:
        _cell(
            mt,
            "ALTER MATERIALIZED TABLE base_rn SET REFRESH_MODE = FULL;\n"
            "ALTER MATERIALIZED TABLE base_rn RENAME TO moved_rn;\n"
            "CREATE MATERIALIZED TABLE after_rn AS SELECT nope FROM moved_rn",
        )
    assert str(failed.value).splitlines()[1:] == [
        f"Undone, so the cell changed nothing: renamed {prefix}.base_rn to {prefix}.moved_rn; "
        f"set the refresh mode of {prefix}.base_rn."
    ], str(failed.value)
    assert "base_rn" in _tables(mt) and not {"moved_rn", "after_rn"} & set(_tables(mt))
    after = mt.workspace.catalog.load_materialized(f"{prefix}.base_rn")[1]
    assert (after.refresh_mode, after.freshness) == (before.refresh_mode, before.freshness)
    assert {s.name for s in mt.statuses()} >= {f"{prefix}.base_rn"}
    assert f"{prefix}.moved_rn" not in {s.name for s in mt.statuses()}
