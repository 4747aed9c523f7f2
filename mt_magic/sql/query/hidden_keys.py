"""Hidden key columns: the storage query (the definition query plus the row identity it does not show) and back.

A LEFT join showing only ``f.id, f.v, d.name`` has no output column locating its join key, so an affected-key
refresh could not find the rows a change replaces. The *storage query* appends the key to the result SELECT
as ``__mt_key_0`` (:data:`~mt_magic.vocabulary.HIDDEN_COLUMN_PREFIX`); every refresh runs it, and the table
stores the column. Appending a column to a projection or an aggregation keeps its rows one for one (a join's
key has one value per result row, a group key one per group), so the visible columns are the user query's.
:func:`visible_query` removes them again, for what users see (the Iceberg view's SQL, SHOW CREATE).

Pure sqlglot (spark dialect); which queries get which keys is the planner's decision
(:mod:`mt_magic.runtime.refresh.incremental.row_identity`).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp

from mt_magic.sql.query.keys import window_select
from mt_magic.sql.query.parsed import ParsedQuery, Q, read_tree, rewritten, tree_to_change
from mt_magic.sql.query.result_shape import result_select
from mt_magic.sql.query.tree import DIALECT
from mt_magic.vocabulary import HIDDEN_COLUMN_PREFIX, is_hidden_column


def hidden_name(index: int) -> str:
    """The name of the ``index``-th hidden key column (``__mt_key_0``, …)."""
    return f"{HIDDEN_COLUMN_PREFIX}{index}"


def with_hidden_keys(query: Q, keys: Sequence[str]) -> Q:
    """``query`` with each of ``keys`` (Spark SQL over the result SELECT's relations) appended to the result
    SELECT as a hidden column, in order.

    >>> with_hidden_keys("SELECT f.id FROM a.f AS f LEFT JOIN a.d AS d ON f.k = d.k", ["f.k"])
    'SELECT f.id, f.k AS __mt_key_0 FROM a.f AS f LEFT JOIN a.d AS d ON f.k = d.k'
    """
    tree = tree_to_change(query)
    found = result_select(tree)
    if found is None or found[1] is not None:
        raise ValueError("hidden keys are appended to a result SELECT that is not a set operation or wrapped")
    select = found[0]
    for index, key in enumerate(keys):
        select.select(exp.alias_(sqlglot.parse_one(key, read=DIALECT), hidden_name(index)), copy=False)
    return rewritten(query, tree)


def with_hidden_window_keys(query: Q, keys: Sequence[str]) -> Q:
    """``query`` with each of ``keys`` (Spark SQL of partition expressions over the windows' SELECT) appended as
    a hidden column to the SELECT holding every window, and passed through the result SELECT that filters it
    (a top-N); unchanged when that one selects ``*`` (the hidden column would pass through it unnamed, so
    nothing could leave it out again). Appending a column keeps every row and its window values.

    >>> with_hidden_window_keys("SELECT v, rank() OVER (PARTITION BY g ORDER BY v) AS r FROM a.t", ["g"])
    'SELECT v, RANK() OVER (PARTITION BY g ORDER BY v) AS r, g AS __mt_key_0 FROM a.t'
    """
    tree = tree_to_change(query)
    owner, found = window_select(tree), result_select(tree)
    if owner is None or found is None:
        raise ValueError("hidden window keys need one SELECT holding every window")
    outer = found[0]
    starred = any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star) for p in outer.selects)
    if outer is not owner and starred:
        return query
    for index, key in enumerate(keys):
        owner.select(exp.alias_(sqlglot.parse_one(key, read=DIALECT), hidden_name(index)), copy=False)
    if outer is not owner:
        source = outer.args.get("from_") or outer.args.get("from")
        alias = source.this.alias_or_name if source is not None else ""
        for index in range(len(keys)):
            column = exp.column(hidden_name(index), table=alias or None)
            outer.select(exp.alias_(column, hidden_name(index)), copy=False)
    return rewritten(query, tree)


def hidden_columns(query: str | ParsedQuery) -> tuple[str, ...]:
    """The hidden key columns the storage query ``query`` produces (empty for a query without any)."""
    found = result_select(read_tree(query))
    if found is None:
        return ()
    return tuple(p.output_name for p in found[0].selects if is_hidden_column(p.output_name))


def visible_query(query: Q) -> Q:
    """``query`` without its hidden key columns: the definition query users wrote (unchanged text when it has
    none).

    >>> visible_query("SELECT f.id, f.k AS __mt_key_0 FROM a.f AS f LEFT JOIN a.d AS d ON f.k = d.k")
    'SELECT f.id FROM a.f AS f LEFT JOIN a.d AS d ON f.k = d.k'
    """
    if not _hiding_selects(read_tree(query)):
        return query
    tree = tree_to_change(query)
    selects = _hiding_selects(tree)
    for select in selects:  # the result SELECT, and the one holding the windows of a top-N
        select.set("expressions", [p for p in select.selects if not is_hidden_column(p.output_name)])
    return rewritten(query, tree)


def _hiding_selects(tree: exp.Expr) -> list[exp.Select]:
    return [s for s in tree.find_all(exp.Select) if any(is_hidden_column(p.output_name) for p in s.selects)]
