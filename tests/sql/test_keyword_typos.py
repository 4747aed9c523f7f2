"""A misspelt MATERIALIZED is answered with "did you mean", not told to run itself with spark.sql (issue 38)."""

from __future__ import annotations

import pytest

from mt_magic.sql import parse_cell
from mt_magic.sql.errors import SqlSyntaxError


@pytest.mark.parametrize(
    ("cell", "where", "written"),
    [
        ("CREATE MATERIALISED TABLE t AS SELECT 1 AS a", "CREATE, line 1, column 8", "MATERIALISED"),
        ("ALTER MATERIALISED TABLE t SUSPEND", "ALTER, line 1, column 7", "MATERIALISED"),
        ("DROP MATERALIZED TABLE t", "DROP, line 1, column 6", "MATERALIZED"),
        ("create or alter materialised table t AS SELECT 1 AS a", "CREATE OR ALTER, line 1, column 17", "materialised"),
    ],
)
def test_a_misspelt_materialized_is_named_with_the_keyword_meant(cell: str, where: str, written: str) -> None:
    with pytest.raises(SqlSyntaxError) as refused:
        parse_cell(cell)
    assert str(refused.value) == f"{where}: {written} is not a keyword. Fix: did you mean MATERIALIZED?"
