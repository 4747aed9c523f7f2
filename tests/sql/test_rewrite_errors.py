"""The query rewrites' refusals (``sql.query.rewrite``) reach the user in the formatter's shape: what is wrong, where
(the statement, the text at fault) and a ``Fix:`` line (issue 38's shape, issue 37's rewrites)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mt_magic.errors import DefinitionError
from mt_magic.sql.query.rewrite import QueryRewriteError, pin_sources, qualify_sources


def test_a_query_sqlglot_cannot_read_says_where_and_how_to_fix_it() -> None:
    with pytest.raises(QueryRewriteError) as caught:
        qualify_sources("SELECT a FROM t WHERE (b = 1", "mt", "ns")
    assert caught.value.problem.startswith("the query cannot be read as Spark SQL: ")
    assert caught.value.fix_line() == "Fix: correct the query near this position (check its brackets and quotes)."


def test_a_source_name_part_mt_magic_cannot_carry_names_the_source_and_the_fix() -> None:
    with pytest.raises(QueryRewriteError) as caught:
        qualify_sources("SELECT * FROM `a.b`", "mt", "ns")
    assert str(caught.value) == (
        "source table a.b: the name part 'a.b' contains '.', which mt_magic does not support: names travel as "
        "catalog.namespace.table text and nested namespaces are joined with '.', so a dot inside one part would name "
        "a different table. Fix: rename it without that character (e.g. use '_')."
    )


def test_a_source_without_a_pinned_snapshot_says_how_to_record_the_sources_again() -> None:
    with pytest.raises(QueryRewriteError) as caught:
        pin_sources("SELECT k FROM mt.ns.t", {"mt.ns.other": 1})
    assert str(caught.value) == (
        "source mt.ns.t has no pinned snapshot: the refresh read other sources than the query names. Fix: run "
        "ALTER MATERIALIZED TABLE … AS with the table's query (SHOW CREATE MATERIALIZED TABLE shows it) so its "
        "sources are recorded again."
    )


def test_a_create_s_refusal_names_the_statement_and_keeps_the_fix() -> None:
    from mt_magic.runtime.statements.definition import qualified_sources

    ws = SimpleNamespace(catalog=SimpleNamespace(spark_name="mt"), default_namespace="default")
    with pytest.raises(DefinitionError) as caught:
        qualified_sources(ws, "CREATE MATERIALIZED TABLE t", "SELECT * FROM `a.b`")  # type: ignore[arg-type]
    assert caught.value.statement == "CREATE MATERIALIZED TABLE t"
    assert caught.value.fix_line() == "Fix: rename it without that character (e.g. use '_')."
