"""Property tests of names: what our grammar and the query rewrite read back from quoted names (no Spark)."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import example, given
from hypothesis import strategies as st

from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.sql import UnsupportedNameError
from mt_magic.sql.ddl.parser import parse_cell, parse_table_name
from mt_magic.sql.names import NAME_PART_REFUSED, name_part_refusal
from mt_magic.sql.query.rewrite import QueryRewriteError, pin_sources, qualify_sources

CARRIED = st.text(
    st.characters(exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), exclude_characters="./%?#+"),
    min_size=1,
    max_size=12,
).filter(lambda p: name_part_refusal(p) is None)
REFUSED = st.builds(
    lambda a, c, b: a + c + b,
    st.text("ab", max_size=2),
    st.sampled_from(sorted(NAME_PART_REFUSED)),
    st.text("ab", max_size=2),
)


@given(namespace=CARRIED, name=CARRIED)
@example(namespace="ns", name="m1; DROP TABLE x")
@example(namespace="select", name="`")
@example(namespace="a b", name='it\'s "x"')
def test_a_quoted_name_reads_back_through_the_grammar(namespace: str, name: str) -> None:
    table = parse_table_name(qualified(f"{namespace}.{name}"))
    assert (table.namespace, table.name) == (namespace, name)
    [stmt] = parse_cell(f"ALTER MATERIALIZED TABLE {identifier(namespace)}.{identifier(name)} SUSPEND")
    assert (stmt.name.namespace, stmt.name.name) == (namespace, name)


@given(name=REFUSED)
@example(name="a.b")
@example(name="50%")
@example(name="a\tb")
def test_a_name_part_mt_magic_cannot_carry_is_refused_with_the_reason(name: str) -> None:
    with pytest.raises(UnsupportedNameError, match=r"CREATE MATERIALIZED TABLE.*does not support.*Fix: rename it"):
        parse_cell(f"CREATE MATERIALIZED TABLE ns.{identifier(name)} AS SELECT 1 AS x")


@given(name=CARRIED, column=CARRIED)
@example(name="m1; DROP TABLE x", column="`")
def test_a_quoted_source_is_qualified_and_pinned_by_the_same_parts(name: str, column: str) -> None:
    query = f"SELECT {identifier(column)} FROM {identifier(name)}"
    expanded, sources = qualify_sources(query, "mt", "ns")
    assert sources == (f"mt.ns.{name}",)
    [table] = sqlglot.parse_one(expanded, read="spark").find_all(sqlglot.exp.Table)
    assert (table.catalog, table.db, table.name) == ("mt", "ns", name)
    pinned = pin_sources(expanded, {f"mt.ns.{name}": 7})
    [table] = sqlglot.parse_one(pinned, read="spark").find_all(sqlglot.exp.Table)
    assert table.name == name and "VERSION AS OF 7" in pinned


@given(name=REFUSED)
def test_a_source_mt_magic_cannot_carry_is_refused(name: str) -> None:
    with pytest.raises(QueryRewriteError, match="does not support"):
        qualify_sources(f"SELECT * FROM ns.{identifier(name)}", "mt", "ns")
