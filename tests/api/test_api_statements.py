"""The API's arguments become the statement a cell would hold and are checked by the same grammar (no JVM):
each bad value fails with the error type and Fix line the ``%%materialized`` cell gets, and no value can carry a
second clause or statement into the text."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

import pytest

from mt_magic.api import statements as build
from mt_magic.errors import MtMagicError
from mt_magic.sql import parse_cell
from mt_magic.sql.ddl.freshness import FreshnessRules
from mt_magic.sql.ddl.statements import Freshness, FreshnessUnit
from mt_magic.sql.errors import FreshnessError, SqlError, SqlSyntaxError, UnsupportedOptionError
from mt_magic.sql.names import TableName
from mt_magic.vocabulary import RefreshMode

RULES = FreshnessRules()
QUERY = "SELECT page, count(*) AS views FROM clicks GROUP BY page"


def cell_error(text: str) -> SqlError:
    with pytest.raises(SqlError) as caught:
        parse_cell(text, RULES)
    return caught.value


def test_the_statement_is_the_cells_create_or_alter() -> None:
    stmt = build.create_or_alter(
        "sales.`daily views`",
        QUERY + ";",
        RULES,
        fresh=build.freshness(timedelta(hours=2)),
        mode=build.refresh_mode("full"),
        options={"incremental": "never", "note": "it's \\ quoted", "flag": True},
        partitioned_by=("page",),
    )
    assert stmt.or_alter
    assert stmt.name == TableName("daily views", "sales")
    assert stmt.query == QUERY
    assert stmt.freshness == Freshness(2, FreshnessUnit.HOUR) and stmt.refresh_mode is RefreshMode.FULL
    assert stmt.options == (("incremental", "never"), ("note", "it's \\ quoted"), ("flag", "true"))
    assert stmt.partitioned_by == ("page",)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (timedelta(seconds=90), Freshness(90, FreshnessUnit.SECOND)),
        (timedelta(minutes=30), Freshness(30, FreshnessUnit.MINUTE)),
        (timedelta(days=1), Freshness(1, FreshnessUnit.DAY)),
        ("INTERVAL '5' MINUTE", Freshness(5, FreshnessUnit.MINUTE)),
        ("5 minutes", Freshness(5, FreshnessUnit.MINUTE)),
        ("1 HOUR", Freshness(1, FreshnessUnit.HOUR)),
        (" 30  seconds ", Freshness(30, FreshnessUnit.SECOND)),
    ],
)
def test_freshness_from_a_duration_or_the_clauses_text(value: object, expected: Freshness) -> None:
    assert build.freshness(value) == expected  # type: ignore[arg-type]


def test_bad_freshness_is_the_cells_error() -> None:
    with pytest.raises(FreshnessError) as caught:
        build.freshness("INTERVAL '1' MONTH")
    in_cell = cell_error(f"CREATE MATERIALIZED TABLE x FRESHNESS = INTERVAL '1' MONTH AS {QUERY}")
    assert type(caught.value) is type(in_cell)
    assert (caught.value.problem, caught.value.fix) == (in_cell.problem, in_cell.fix)
    with pytest.raises(FreshnessError, match=r"not a positive whole number of seconds.*Fix: pass e.g. timedelta"):
        build.freshness(timedelta(seconds=1.5))
    with pytest.raises(FreshnessError, match="not allowed in FULL mode"):
        build.create_or_alter("x", QUERY, RULES, fresh=build.freshness("INTERVAL '7' MINUTE"), mode=RefreshMode.FULL)


@pytest.mark.parametrize("value", ["5 mins", "five minutes", "0 minutes", "5", "5 minutes ago"])
def test_freshness_text_that_is_no_interval_names_the_argument_not_a_position(value: str) -> None:
    """Issue 38: ``freshness='5 minutes'`` was answered with a line and column inside a statement the API built."""
    with pytest.raises(FreshnessError) as caught:
        build.freshness(value)
    assert str(caught.value) == (
        f"mt_magic.materialize: freshness={value!r} is not an interval. Fix: pass \"INTERVAL '5' MINUTE\", "
        '"5 minutes" or timedelta(minutes=5) (SECOND, MINUTE, HOUR or DAY).'
    )


def test_bad_refresh_mode_names_the_modes() -> None:
    with pytest.raises(SqlSyntaxError, match=r"REFRESH_MODE must be CONTINUOUS or FULL, got 'FULL AS SELECT 1'"):
        build.refresh_mode("FULL AS SELECT 1")


def test_a_foreign_option_is_refused_as_in_a_cell() -> None:
    with pytest.raises(UnsupportedOptionError) as caught:
        build.create_or_alter("x", QUERY, RULES, options={"merge-engine": "aggregation"})
    in_cell = cell_error(f"CREATE OR ALTER MATERIALIZED TABLE x WITH ('merge-engine' = 'aggregation') AS {QUERY}")
    assert (caught.value.problem, caught.value.fix) == (in_cell.problem, in_cell.fix)


def test_values_cannot_smuggle_clauses_or_statements() -> None:
    with pytest.raises(SqlSyntaxError, match="holds 2 statements"):
        build.create_or_alter("x", QUERY + "; DROP MATERIALIZED TABLE y", RULES)
    with pytest.raises(SqlError, match="not one table name|unexpected"):
        build.create_or_alter("x AS SELECT 1 --", QUERY, RULES)
    with pytest.raises(SqlError):
        build.freshness("INTERVAL '5' MINUTE AS SELECT 1")
    odd = build.create_or_alter("x", QUERY, RULES, options={"k') AS SELECT 1 --": "v"})
    assert odd.options == (("k') AS SELECT 1 --", "v"),) and odd.query == QUERY


def test_partition_from_text_or_a_mapping() -> None:
    assert build.partition("ds = '20250101'") == (("ds", "20250101"),)
    assert build.partition({"ds": "it's", "hour": 7}) == (("ds", "it's"), ("hour", "7"))
    with pytest.raises(SqlError, match=r"PARTITION \(ds\)"):
        build.partition("ds")


def test_import_mt_magic_and_the_api_attributes_load_no_spark() -> None:
    code = (
        "import sys, mt_magic\n"
        "assert callable(mt_magic.materialize) and callable(mt_magic.table)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import mt_magic

        mt_magic.nope  # noqa: B018


def test_a_previewed_change_is_the_cells_alter_one_at_a_time() -> None:
    """``table(…).explain_change``'s arguments become the ALTER a cell would hold, one change per call (previews do
    not add up), each value checked as a cell checks it and unable to carry a second clause or statement."""
    where = "mt_magic.table('mt.sales.daily views').explain_change"
    cell = "ALTER MATERIALIZED TABLE mt.sales.`daily views` "

    def change(**values: object) -> object:
        return build.change(TableName("daily views", "sales", "mt"), RULES, where, **values)  # type: ignore[arg-type]

    def parsed(clause: str) -> object:
        return parse_cell(cell + clause, RULES)[0]

    assert change(query=f"\n  {QUERY};") == parsed(f"AS {QUERY}")
    assert change(fresh=timedelta(hours=1)) == parsed("SET FRESHNESS = INTERVAL '1' HOUR")
    assert change(fresh="5 minutes") == parsed("SET FRESHNESS = INTERVAL '5' MINUTE")
    assert change(mode="full") == parsed("SET REFRESH_MODE = FULL")
    assert change(resume=True) == parsed("RESUME")
    with_options = parsed("RESUME WITH ('spark.sql.shuffle.partitions' = '4')")
    assert change(resume={"spark.sql.shuffle.partitions": 4}) == with_options

    with pytest.raises(MtMagicError) as none:
        change()
    assert str(none.value) == (
        f"{where}: needs one change to preview, got none. "
        "Fix: pass one of query='SELECT …', freshness='5 minutes', refresh_mode='FULL' or resume=True."
    )
    with pytest.raises(MtMagicError, match=r"got query= and resume=\. Fix: .*, one call per change\.$"):
        change(query=QUERY, resume=True)
    with pytest.raises(FreshnessError, match=rf"^{re.escape(where)}: freshness='5 mins' is not an interval"):
        change(fresh="5 mins")
    with pytest.raises(SqlSyntaxError, match=rf"^{re.escape(where)}: REFRESH_MODE must be CONTINUOUS or FULL"):
        change(mode="FULL AS SELECT 1")
    with pytest.raises(SqlSyntaxError, match=rf"^{re.escape(where)}: the query holds 2 statements"):
        change(query=QUERY + "; DROP MATERIALIZED TABLE y")
    with pytest.raises(UnsupportedOptionError, match="RESUME WITH options are Spark settings"):
        change(resume={"sink.parallelism": 2})
