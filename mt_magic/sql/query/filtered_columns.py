"""The column names a query compares in its conditions, where Spark may push a predicate into a source's scan.

Iceberg skips a data file by its column bounds when a pushed predicate cannot hold inside them; a STRING bound
Iceberg wrote as other text (U+FFFD for bytes that are not UTF-8) then skips a file that holds the value, so the
answer depends on which files hold the rows. Only the columns a condition names can reach a scan that way (WHERE,
JOIN … ON / USING, HAVING and QUALIFY, in any subquery or CTE; Spark also infers a join's other side and pushes a
filter on an output name through the alias that defines it, so aliases used in a condition count their inputs).

>>> sorted(filtered_columns("SELECT a.x, b.y FROM a JOIN b ON a.k = b.k WHERE b.s = 'é'"))
['a', 'b', 'k', 's']
>>> sorted(filtered_columns("SELECT * FROM (SELECT upper(s) AS t, n FROM src) WHERE t > 'a'"))
['s', 't']
>>> sorted(filtered_columns("SELECT g, count(*) AS n FROM src GROUP BY g"))
[]
"""

from __future__ import annotations

from functools import lru_cache

from sqlglot import exp

from mt_magic.sql.query.parsed import read_tree

CONDITIONS = (exp.Where, exp.Having, exp.Qualify)
"""Clauses whose condition Spark may push into a scan (a join's ON and USING are read from :class:`exp.Join`)."""


@lru_cache(maxsize=256)
def filtered_columns(query: str) -> frozenset[str]:
    """Every name (lower case) of a column reference inside a condition of ``query``, each part of a dotted one (a
    struct's field reads as a qualified column), and the inputs of the aliases those names refer to, transitively.
    More names than Spark pushes is safe (they only narrow what the caller trusts), fewer is not."""
    tree = read_tree(query)
    conditions: list[exp.Expr] = [node for node in tree.find_all(*CONDITIONS)]
    for join in tree.find_all(exp.Join):
        using = join.args.get("using") or []
        conditions += [part for part in (join.args.get("on"), *using) if part is not None]
    names = {name for node in conditions for name in _names(node)}
    aliases = _aliases(tree)
    pending = list(names)
    while pending:
        for defined in aliases.pop(pending.pop(), ()):
            new = _names(defined) - names
            names |= new
            pending += new
    return frozenset(names)


def _aliases(tree: exp.Expr) -> dict[str, list[exp.Expr]]:
    """Each alias name (lower case) with the expressions it names: ``expr AS name``, and a derived table's column
    list (``(SELECT …) AS x(name, …)``, position by position)."""
    aliases: dict[str, list[exp.Expr]] = {}
    for alias in tree.find_all(exp.Alias):
        aliases.setdefault(alias.alias.lower(), []).append(alias.this)
    for table in tree.find_all(exp.TableAlias):
        body = table.parent.this if table.parent is not None else None
        selects = body.selects if isinstance(body, exp.Query) else []
        for index, column in enumerate(table.columns):
            named = selects[index : index + 1] if len(selects) == len(table.columns) else selects
            aliases.setdefault(str(column.name).lower(), []).extend(named)
    return aliases


def _names(node: exp.Expr) -> set[str]:
    found = {str(part.name).lower() for column in node.find_all(exp.Column) for part in column.parts}
    if isinstance(node, exp.Identifier):  # a USING column
        found.add(str(node.name).lower())
    return found
