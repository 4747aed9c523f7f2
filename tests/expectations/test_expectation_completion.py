"""Completion knows the expectation clause (issue 49): its keywords in order, and the query's columns inside its
condition."""

from __future__ import annotations

from mt_magic.completion import NameSnapshot, complete

NAMES = NameSnapshot(plain=("orders",), columns={"orders": ("id", "amount")})
QUERY = " AS SELECT id, amount FROM orders"


def _at_bar(text: str) -> list[str]:
    cursor = text.index("|")
    return complete(text.replace("|", "", 1) + QUERY, cursor, NAMES)


def test_the_expectation_clause_word_by_word() -> None:
    assert _at_bar("CREATE MATERIALIZED TABLE t (CONSTRAINT positive |)") == ["EXPECT (", "PRIMARY KEY"]
    assert _at_bar("CREATE MATERIALIZED TABLE t (CONSTRAINT positive EXPECT |)") == ["("]
    assert _at_bar("CREATE MATERIALIZED TABLE t (CONSTRAINT positive EXPECT (|))") == ["id", "amount"]
    assert _at_bar("CREATE MATERIALIZED TABLE t (CONSTRAINT p EXPECT (id > 0 AND |))") == ["id", "amount"]
    assert _at_bar("CREATE MATERIALIZED TABLE t (CONSTRAINT p EXPECT (amount >= 0) |)") == ["ON VIOLATION", ",", ")"]
    assert _at_bar("CREATE MATERIALIZED TABLE t (CONSTRAINT p EXPECT (amount >= 0) ON |)") == ["VIOLATION"]
    violation = "CREATE MATERIALIZED TABLE t (CONSTRAINT p EXPECT (amount >= 0) ON VIOLATION |)"
    assert _at_bar(violation) == ["DROP ROW", "FAIL UPDATE"]
