"""The expectation clause of CREATE's column list (issue 49), without Spark: parsed as written, refused with a Fix
where it is malformed, and written back by SHOW CREATE's form into the same clause."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.sql import parse_cell
from mt_magic.sql.errors import ConstraintError, SqlSyntaxError
from mt_magic.vocabulary import Expectation, OnViolation, RefreshMode

CREATE = "CREATE MATERIALIZED TABLE t ({}) AS SELECT id, amount FROM src"


def _expectations(columns: str) -> tuple[Expectation, ...]:
    return parse_cell(CREATE.format(columns))[0].expectations  # type: ignore[union-attr]


def test_each_action_and_a_nested_condition_are_read_as_written() -> None:
    assert _expectations(
        "id INT, CONSTRAINT positive EXPECT (amount >= 0 AND abs(amount) < (10)) ON VIOLATION FAIL UPDATE, "
        "CONSTRAINT keyed EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW, PRIMARY KEY (id) NOT ENFORCED, "
        "CONSTRAINT `small one` EXPECT (amount < 100)"
    ) == (
        Expectation("positive", "amount >= 0 AND abs(amount) < (10)", OnViolation.FAIL_UPDATE),
        Expectation("keyed", "id IS NOT NULL", OnViolation.DROP_ROW),
        Expectation("small one", "amount < 100", OnViolation.KEEP),
    )


@pytest.mark.parametrize(
    ("columns", "error", "message"),
    [
        ("CONSTRAINT a EXPECT (id > 0), CONSTRAINT A EXPECT (amount > 0)", ConstraintError, "'A' is declared twice"),
        ("CONSTRAINT a EXPECT ()", ConstraintError, "a has an empty condition.*Fix: write a condition"),
        ("CONSTRAINT a EXPECT (id > 0) ON VIOLATION IGNORE", SqlSyntaxError, "'IGNORE': expected DROP ROW or FAIL"),
        ("CONSTRAINT a EXPECT (id > 0) ON VIOLATION DROP", SqlSyntaxError, "expected ROW after ON VIOLATION DROP"),
        (
            "CONSTRAINT a EXPECT id > 0",
            SqlSyntaxError,
            "expected '\\(' after EXPECT.*Fix: write EXPECT \\(condition\\)",
        ),
        ("CHECK (id > 0)", Exception, "CHECK constraints are not supported.*CONSTRAINT name EXPECT \\(condition\\)"),
    ],
)
def test_a_malformed_expectation_is_refused_where_it_is(columns: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_cell(CREATE.format(columns))


@pytest.mark.parametrize("action", list(OnViolation))
def test_show_creates_clause_reads_back_the_same_and_the_catalog_keeps_it(action: OnViolation) -> None:
    expectation = Expectation("weird `name`", "amount BETWEEN 0 AND 10 OR id IN (1, 2)", action)
    assert _expectations(expectation.sql()) == (expectation,)
    definition = MaterializedTableDefinition(
        "q", "q", "INTERVAL '1' MINUTE", RefreshMode.CONTINUOUS, timedelta(minutes=1), expectations=(expectation,)
    )
    assert MaterializedTableDefinition.from_properties(definition.to_properties()) == definition


def test_alter_adds_and_drops_one_expectation() -> None:
    from mt_magic.sql.ddl.statements import AlterConstraint

    added, dropped = parse_cell(
        "ALTER MATERIALIZED TABLE t ADD CONSTRAINT c EXPECT (x > 0) ON VIOLATION DROP ROW; "
        "ALTER MATERIALIZED TABLE t DROP CONSTRAINT c"
    )
    assert isinstance(added, AlterConstraint) and added.add == Expectation("c", "x > 0", OnViolation.DROP_ROW)
    assert isinstance(dropped, AlterConstraint) and (dropped.add, dropped.drop) == (None, "c")
    with pytest.raises(SqlSyntaxError, match="expected CONSTRAINT after ADD"):
        parse_cell("ALTER MATERIALIZED TABLE t ADD c EXPECT (x > 0)")
    with pytest.raises(SqlSyntaxError, match="unexpected 'x' after DROP CONSTRAINT name"):
        parse_cell("ALTER MATERIALIZED TABLE t DROP CONSTRAINT c x")


def test_the_python_api_writes_the_same_clause() -> None:
    from mt_magic.api.statements import create_or_alter
    from mt_magic.sql.ddl.freshness import FreshnessRules

    wanted = (Expectation("positive", "amount >= 0", OnViolation.FAIL_UPDATE), Expectation("keyed", "id IS NOT NULL"))
    stmt = create_or_alter("t", "SELECT id, amount FROM src", FreshnessRules(), expectations=wanted)
    assert stmt.expectations == wanted


def test_a_window_function_makes_an_expectation_over_groups_keyed_by_its_partition() -> None:
    from mt_magic.runtime.refresh.audit import failing_rows_sql, over_groups

    (unique,) = _expectations(
        "CONSTRAINT u EXPECT (count(*) OVER (PARTITION BY order_id) = 1) ON VIOLATION FAIL UPDATE"
    )
    assert unique.condition == "count(*) OVER (PARTITION BY order_id) = 1"  # as written, for SHOW CREATE
    assert over_groups(unique) == ("`order_id`",)
    assert over_groups(Expectation("r", "amount >= 0")) is None
    same = "lag(amount) OVER (PARTITION BY `Day`, k ORDER BY ts) IS NULL OR count(*) OVER (PARTITION BY K, day) < 2"
    assert over_groups(Expectation("s", same)) == ("`Day`", "`k`")  # one set of keys, however quoted or ordered
    assert over_groups(Expectation("d", "count(*) OVER (PARTITION BY a) = count(*) OVER (PARTITION BY b)")) == ()
    assert failing_rows_sql("mt.default.o", ["order_id"], unique, 12) == (
        "SELECT `order_id` FROM (SELECT *, NOT coalesce((count(*) OVER (PARTITION BY order_id) = 1), false) AS "
        "`__mt_failing` FROM `mt`.`default`.`o` VERSION AS OF 12) WHERE `__mt_failing` LIMIT 3"
    )
