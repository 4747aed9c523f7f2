"""One error formatter (issue 38): every mt_magic error — the grammar's, the runtime's, the registry's — is built from
the same facts (statement, position, problem, offending text, did-you-mean, Fix) into the same message shape, and a
misspelt option key or value gets the closest declared one(s) from the registry, through the one did-you-mean
helper the table and column names use."""

from __future__ import annotations

import pytest

from mt_magic.api.statements import create_or_alter
from mt_magic.errors import (
    DefinitionError,
    MtMagicError,
    NoSuchMaterializedTableError,
    NoSuchSourceTableError,
    closest_names,
)
from mt_magic.options import INCREMENTAL, SCHEDULER
from mt_magic.sql.ddl.freshness import FreshnessRules
from mt_magic.sql.ddl.parser import parse_cell
from mt_magic.sql.ddl.statements import CreateMaterializedTable
from mt_magic.sql.errors import SqlSyntaxError, UnsupportedOptionError
from mt_magic.sql.names import Position, closest_name


def _refusal(cell: str) -> UnsupportedOptionError:
    with pytest.raises(UnsupportedOptionError) as caught:
        parse_cell(cell)
    return caught.value


def test_any_error_takes_the_structured_facts_and_reads_like_the_grammar_s() -> None:
    facts = dict(
        statement="ALTER MATERIALIZED TABLE mt.default.orders SUSPEND",
        position=Position(1, 26),
        offending="orders",
        fix="SHOW MATERIALIZED TABLES lists them",
        did_you_mean="mt.default.order",
    )
    expected = (
        "ALTER MATERIALIZED TABLE mt.default.orders SUSPEND, line 1, column 26: the table does not exist "
        "(at 'orders'). Fix: did you mean mt.default.order? Otherwise, SHOW MATERIALIZED TABLES lists them."
    )
    runtime = NoSuchMaterializedTableError("the table does not exist", **facts)  # type: ignore[arg-type]
    grammar = SqlSyntaxError("the table does not exist", **facts)  # type: ignore[arg-type]
    assert str(runtime) == str(grammar) == expected
    assert (runtime.problem, runtime.fix, runtime.did_you_mean) == (
        "the table does not exist",
        "SHOW MATERIALIZED TABLES lists them",
        ("mt.default.order",),
    )
    assert str(DefinitionError("t: no such column", did_you_mean=["a", "b"])) == (
        "t: no such column. Fix: did you mean a or b?"
    )


def test_a_plain_message_stays_as_written_and_the_grammar_s_still_ends_its_sentence() -> None:
    assert str(DefinitionError("refresh of t failed: boom")) == "refresh of t failed: boom"
    assert str(MtMagicError("x")) == "x" and MtMagicError("x").fix is None
    assert str(SqlSyntaxError("unexpected end")) == "unexpected end."
    located = SqlSyntaxError("unexpected end", did_you_mean="AS").located(statement="CREATE …", position=Position(2, 1))
    assert str(located) == "CREATE …, line 2, column 1: unexpected end. Fix: did you mean AS?"


def test_a_missing_source_s_error_is_built_from_its_facts() -> None:
    error = NoSuchSourceTableError("mt.default.t", "mt.default.s")
    assert error.problem == (
        "mt.default.t reads the source table mt.default.s, which does not exist in the catalog (dropped or "
        "renamed): mt.default.t keeps its stored rows but cannot be refreshed"
    )
    assert error.fix == (
        "re-create mt.default.s, or ALTER MATERIALIZED TABLE mt.default.t AS a query that does not read it, or "
        "DROP MATERIALIZED TABLE mt.default.t."
    )
    assert str(error) == f"{error.problem}. Fix: {error.fix}"


def test_the_one_did_you_mean_judge_serves_names_and_options() -> None:
    assert closest_names("tms_sauce", ["tms_source", "orders"]) == ["tms_source"]
    assert closest_name("TMS_SAUCE", ["tms_source"]) == "tms_source"
    assert closest_names("incremental.engin", ["incremental.engine", "incremental", "scheduler"], n=2) == [
        "incremental.engine",
        "incremental",
    ]
    assert closest_names("zzz", ["orders"]) == []


def test_a_misspelt_with_key_is_refused_with_the_declared_keys_it_was_near() -> None:
    error = _refusal("CREATE MATERIALIZED TABLE t\nWITH ('incremental.engin' = 'spark')\nAS SELECT * FROM s")
    assert str(error) == (
        "CREATE MATERIALIZED TABLE t, line 2, column 7: WITH ('incremental.engin' = 'spark') is not an option "
        "mt_magic declares. Fix: did you mean 'incremental.engine' or 'incremental'? Otherwise, write one of its "
        "options (Tab completes them), or name a table property of your own further from them."
    )
    assert error.did_you_mean == ("'incremental.engine'", "'incremental'")


def test_keys_far_from_ours_iceberg_s_neighbours_and_spark_settings_stay_table_properties() -> None:
    cell = (
        "CREATE MATERIALIZED TABLE t WITH ('history.expire.max-ref-age-ms' = '5', 'owner' = 'me', "
        "'write.format.default' = 'orc', 'spark.sql.session.timeZone' = 'UTC') AS SELECT * FROM s"
    )
    (stmt,) = parse_cell(cell)
    assert isinstance(stmt, CreateMaterializedTable) and len(stmt.options) == 4


def test_a_misspelt_enum_value_gets_the_closest_value_then_the_list() -> None:
    error = _refusal("CREATE MATERIALIZED TABLE t WITH ('incremental' = 'alwyas') AS SELECT * FROM s")
    assert str(error) == (
        "CREATE MATERIALIZED TABLE t, line 1, column 35: WITH ('incremental' = 'alwyas') is not a known value. "
        "Fix: did you mean 'always'? Otherwise, use 'auto' (the default: incremental where correct and cheaper), "
        "'always' (incremental wherever correct), 'strict' (fail rather than recompute) or 'never' (always "
        "recompute)."
    )
    problem = INCREMENTAL.check("sometimes")
    assert problem is not None and problem.did_you_mean == ()  # nothing near: the list alone, as before
    assert str(problem) == (
        "WITH ('incremental' = 'sometimes') is not a known value. Fix: use 'auto' (the default: incremental where "
        "correct and cheaper), 'always' (incremental wherever correct), 'strict' (fail rather than recompute) or "
        "'never' (always recompute)."
    )


def test_alter_set_suggests_the_scheduler_key_and_its_values() -> None:
    assert str(_refusal("ALTER MATERIALIZED TABLE t SET ('schedular' = 'airflow')")) == (
        "ALTER MATERIALIZED TABLE t, line 1, column 33: ALTER … SET (…) changes only 'scheduler', found "
        "'schedular'. Fix: did you mean 'scheduler'? Otherwise, write SET ('scheduler' = 'airflow') or "
        "SET ('scheduler' = 'kernel'); other options are fixed at CREATE (use CREATE OR ALTER to change the "
        "definition)."
    )
    assert str(_refusal("ALTER MATERIALIZED TABLE t SET ('scheduler' = 'airflw')")) == (
        "ALTER MATERIALIZED TABLE t, line 1, column 33: SET ('scheduler' = 'airflw') is not a known value. "
        "Fix: did you mean 'airflow'? Otherwise, use 'kernel' (the kernel's RefreshManager) or 'airflow' "
        "(an Airflow DAG built from the catalog)."
    )
    assert SCHEDULER.check("airflow") is None


def test_resume_with_suggests_the_spark_setting_a_misspelt_prefix_meant() -> None:
    assert str(_refusal("ALTER MATERIALIZED TABLE t RESUME WITH ('sprak.sql.shuffle.partitions' = '8')")) == (
        "ALTER MATERIALIZED TABLE t, line 1, column 41: RESUME WITH options are Spark settings of the resumed "
        "refreshes; 'sprak.sql.shuffle.partitions' is not one. Fix: did you mean 'spark.sql.shuffle.partitions'? "
        "Otherwise, use Spark settings, e.g. RESUME WITH ('spark.sql.shuffle.partitions' = '8'), or remove it."
    )
    unrelated = _refusal("ALTER MATERIALIZED TABLE t RESUME WITH ('parallelism' = '8')")
    assert unrelated.did_you_mean == () and "did you mean" not in str(unrelated)


def test_the_python_api_gets_the_same_did_you_mean() -> None:
    with pytest.raises(UnsupportedOptionError) as caught:
        create_or_alter("t", "SELECT * FROM s", FreshnessRules(), options={"incremental.engin": "spark"})
    assert caught.value.problem == "WITH ('incremental.engin' = 'spark') is not an option mt_magic declares"
    assert caught.value.did_you_mean == ("'incremental.engine'", "'incremental'")
    assert str(caught.value).endswith(
        "Fix: did you mean 'incremental.engine' or 'incremental'? Otherwise, write one of its options (Tab "
        "completes them), or name a table property of your own further from them."
    )


def test_the_runtime_s_checks_of_a_definition_take_the_same_shape_and_suggestions() -> None:
    from mt_magic.runtime.statements.definition import check_incremental_option
    from mt_magic.vocabulary import RefreshMode

    label = "CREATE MATERIALIZED TABLE t"
    with pytest.raises(DefinitionError) as caught:
        check_incremental_option(label, {"incremental": "alwyas"}, RefreshMode.CONTINUOUS, "SELECT k FROM mt.ns.s")
    assert str(caught.value) == (
        "CREATE MATERIALIZED TABLE t: WITH ('incremental' = 'alwyas') is not a known value. Fix: did you mean "
        "'always'? Otherwise, use 'auto' (the default: incremental where correct and cheaper), 'always' "
        "(incremental wherever correct), 'strict' (fail rather than recompute) or 'never' (always recompute)."
    )
    with pytest.raises(DefinitionError) as caught:
        check_incremental_option(label, {"incremental": "strict"}, RefreshMode.FULL, "SELECT k FROM mt.ns.s")
    assert str(caught.value) == (
        "CREATE MATERIALIZED TABLE t: WITH ('incremental' = 'strict') can never be honoured: the table refreshes in "
        "FULL mode, which always recomputes. Nothing was created. Fix: remove the option, or change the query "
        "(`%mt explain` shows what blocks incremental refresh)."
    )
    assert (caught.value.statement, caught.value.fix) == (
        label,
        "remove the option, or change the query (`%mt explain` shows what blocks incremental refresh)",
    )


def test_a_source_name_mt_magic_cannot_carry_keeps_its_own_fix_and_no_generic_one() -> None:
    from types import SimpleNamespace

    from mt_magic.runtime.statements.definition import qualified_sources

    ws = SimpleNamespace(catalog=SimpleNamespace(spark_name="mt"), default_namespace="default")
    with pytest.raises(DefinitionError) as caught:
        qualified_sources(ws, "CREATE MATERIALIZED TABLE t", "SELECT * FROM `a.b`")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "CREATE MATERIALIZED TABLE t: source table a.b: the name part 'a.b' contains '.', which mt_magic does not "
        "support: names travel as catalog.namespace.table text and nested namespaces are joined with '.', so a dot "
        "inside one part would name a different table. Fix: rename it without that character (e.g. use '_')."
    )
