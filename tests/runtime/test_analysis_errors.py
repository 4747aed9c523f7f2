"""Spark's analysis messages as PySpark 3.5 and 4.1 print them, read without a JVM: the problem without position,
SQLSTATE or plan, the token Spark points at and its occurrence, and the Fix."""

from __future__ import annotations

import pytest

from mt_magic.runtime.spark.analysis_errors import offset_in, read_problem

QUERY = "SELECT tms_company, count(*) FROM t GROUP BY tms_compnay"
SPARK_35 = (
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name `tms_compnay` cannot be "
    "resolved. Did you mean one of the following? [`tms_company`, `v`].; line 1 pos 45;\n'Aggregate ['tms_compnay]"
)
SPARK_41 = (
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `tms_compnay` cannot "
    "be resolved. Did you mean one of the following? [`tms_company`, `v`]. SQLSTATE: 42703; line 1 pos 45;\n"
    "'Aggregate ['tms_compnay]"
)


@pytest.mark.parametrize("message", [SPARK_35, SPARK_41], ids=["3.5", "4.1"])
def test_an_unresolved_column_is_its_problem_its_token_and_the_column_meant(message: str) -> None:
    problem = read_problem(Exception(message), QUERY)
    assert problem.error_class == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert problem.problem.endswith("with name `tms_compnay` cannot be resolved")
    assert (problem.token, problem.occurrence) == ("tms_compnay", 0)
    assert problem.fix == "did you mean `tms_company`? (Spark sees `tms_company`, `v`)"


def test_a_position_on_a_later_line_and_the_occurrence_found_again_in_the_text_as_written() -> None:
    analysed = "SELECT\n  a.x,\n  a.nope\nFROM cat.ns.a AS a"
    message = (
        "[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] A column with name `a`.`nope` cannot be resolved.; line 3 pos 2;\n"
    )
    problem = read_problem(Exception(message), analysed)
    assert (problem.token, problem.occurrence) == ("a", 1)
    written = "SELECT a.x, A.nope FROM a"
    assert offset_in(written, problem.token, problem.occurrence) == written.index("A.nope")
    assert problem.fix == "check the column's name and table (DESCRIBE the source lists its columns)"


def test_an_unknown_function_is_matched_against_the_names_given() -> None:
    message = (
        "[UNRESOLVED_ROUTINE] Cannot resolve routine `lenght` on search path [`system`.`builtin`, "
        "`system`.`session`]. SQLSTATE: 42883; line 1 pos 7"
    )
    problem = read_problem(Exception(message), "SELECT lenght(s) FROM t", lambda kind: ["length", "left", "lower"])
    assert problem.problem == "Cannot resolve routine `lenght`"
    assert problem.fix == "did you mean length?"


def test_a_message_without_a_position_or_class_keeps_its_first_line() -> None:
    problem = read_problem(Exception("something broke\nat the JVM"), "SELECT 1")
    assert (problem.token, problem.problem, problem.error_class) == (None, "something broke", None)


def test_a_refresh_spark_refuses_reads_without_the_generated_query_s_position() -> None:
    from mt_magic.runtime.spark.analysis_errors import refresh_failure

    assert str(refresh_failure("mt.ns.t", Exception(SPARK_41))) == (
        "refresh of mt.ns.t failed: its query no longer fits its sources: A column, variable, or function parameter "
        "with name `tms_compnay` cannot be resolved. Fix: did you mean `tms_company`? (Spark sees `tms_company`, "
        "`v`); then ALTER MATERIALIZED TABLE mt.ns.t AS the corrected query."
    )
    other = Exception("[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012")  # the data, not the query: as Spark says
    assert (
        str(refresh_failure("mt.ns.t", other))
        == "refresh of mt.ns.t failed: [DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012"
    )
    quoting = Exception("""[CAST_INVALID_INPUT] The value 'secret-7' of the type "STRING" cannot be cast to "INT".""")
    shared = refresh_failure("mt.ns.t", quoting).without_rows()  # what lineage and Airflow get: no value of a row
    assert "secret-7" in str(refresh_failure("mt.ns.t", quoting)) and "secret-7" not in shared
    assert shared.startswith("refresh of mt.ns.t failed: [CAST_INVALID_INPUT]"), shared
