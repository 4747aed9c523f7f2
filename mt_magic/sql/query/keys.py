"""Keys that locate the result rows a change can affect when the result is not a sum of delta terms.

* Outer, semi and anti joins: the equi-join key. Its value is shared by every joined row of a result row, so
  the rows with key K depend only on the sources' rows with key K. The key is *located* by output columns
  whose COALESCE is the key on every result row: a column of a table present in every row (the FROM table of
  LEFT joins, the right table of a RIGHT join), the merged column of ``USING``, or columns of every table
  that can appear (both sides of a FULL join, or their COALESCE).
* Window functions: the ``PARTITION BY`` expressions shared by every window, shown unchanged in the output.

Pure sqlglot (spark dialect); the incremental planner decides from these facts.
"""

from __future__ import annotations

from sqlglot import exp

from mt_magic.sql.query.facts import JoinKeys, KeyColumn, WindowKeys
from mt_magic.sql.query.result_shape import result_select
from mt_magic.sql.query.tree import spark_sql
from mt_magic.vocabulary import is_hidden_column

OUTER_SIDES = ("LEFT", "RIGHT", "FULL")
Member = tuple[str, str]
"""(relation alias, column), lower case."""


def _from(select: exp.Select) -> exp.Expr | None:
    source = select.args.get("from_") or select.args.get("from")
    return source.this if source is not None else None


def _is_base_table(node: exp.Expr | None, ctes: set[str]) -> bool:
    return (
        isinstance(node, exp.Table)
        and not isinstance(node.this, exp.Func)
        and bool(node.name)
        and not (not node.db and node.name.lower() in ctes)
    )


def has_outer_join(select: exp.Select) -> bool:
    """LEFT/RIGHT/FULL, SEMI or ANTI joins directly in ``select``'s FROM clause."""
    return any(_kind(j) not in ("INNER", "CROSS") for j in select.args.get("joins") or [])


def _kind(join: exp.Join) -> str:
    kind, side = (join.args.get("kind") or "").upper(), (join.args.get("side") or "").upper()
    if kind in ("SEMI", "ANTI", "CROSS"):
        return kind
    return side if side in OUTER_SIDES else "INNER"


class _Classes:
    """Union-find over (alias, column)."""

    def __init__(self) -> None:
        self.parent: dict[Member, Member] = {}

    def find(self, m: Member) -> Member:
        self.parent.setdefault(m, m)
        while self.parent[m] != m:
            m = self.parent[m]
        return m

    def union(self, a: Member, b: Member) -> None:
        self.parent[self.find(a)] = self.find(b)

    def groups(self) -> list[list[Member]]:
        out: dict[Member, list[Member]] = {}
        for m in list(self.parent):
            out.setdefault(self.find(m), []).append(m)
        return list(out.values())


def _conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    if node is None:
        return []
    node = node.this if isinstance(node, exp.Where) else node.unnest()
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def join_keys(tree: exp.Expr) -> JoinKeys | None:
    """The join key of the result SELECT when it has outer/semi/anti joins (``None`` when it has none)."""
    found = result_select(tree)
    if found is None:
        return None
    select = found[0]
    subqueries, not_in = _subquery_joins(select)
    if not has_outer_join(select) and not subqueries and not not_in:
        return None
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    joins = select.args.get("joins") or []
    relations = [_from(select), *(j.this for j in joins), *(t for t, _, _ in subqueries)]
    aliases = [r.alias_or_name.lower() for r in relations if isinstance(r, exp.Table)]
    if not all(_is_base_table(r, ctes) for r in relations) or len(set(aliases)) < len(relations):
        return JoinKeys(None, (), len(subqueries), not_in)
    names = {a: ".".join(p.name for p in r.parts) for a, r in zip(aliases, relations, strict=True)}
    classes, using = _Classes(), set()
    for index, join in enumerate(joins, start=1):
        for name in (i.name.lower() for i in join.args.get("using") or []):
            using.add(name)
            classes.union((aliases[0], name), (aliases[index], name))
        for eq in (c for c in _conjuncts(join.args.get("on")) if isinstance(c, exp.EQ)):
            _equate(classes, names, eq.left.unnest(), eq.right.unnest())
    for table, outer, inner in subqueries:
        owner = outer.table.lower() if outer.table else (aliases[0] if not joins else "")
        if owner in names:
            classes.union((owner, outer.name.lower()), (table.alias_or_name.lower(), inner.name.lower()))
    key = next((g for g in classes.groups() if {a for a, _ in g} == set(aliases)), None)
    if key is None:
        return JoinKeys(None, (), len(subqueries), not_in)
    columns = tuple(KeyColumn(names[a], next(c for m, c in sorted(key) if m == a)) for a in aliases)
    kinds = [_kind(j) for j in joins] + ["SEMI"] * len(subqueries)
    visible, preserved = _visibility(aliases, kinds)
    locating = _locating(select, key, using, visible, preserved)
    linear = tuple(names[a] for a in aliases if a in preserved)
    spelled = {r.alias_or_name.lower(): r.alias_or_name for r in relations if isinstance(r, exp.Table)}
    locator = _locator(key, [spelled[a] for a in aliases], visible, preserved)
    return JoinKeys(columns, locating, len(subqueries), not_in, linear, locator)


def _locator(key: list[Member], aliases: list[str], visible: set[str], preserved: set[str]) -> str:
    """The key as an expression over the relations: a preserved table's column (never NULL-extended), else the
    COALESCE of every visible table's (each result row has at least one of them, and they agree when joined)."""
    column = dict(sorted(key, reverse=True))
    chosen = [a for a in aliases if a.lower() in preserved][:1] or [a for a in aliases if a.lower() in visible]
    parts = [exp.column(column[a.lower()], table=a, quoted=True) for a in chosen]
    return spark_sql(parts[0] if len(parts) == 1 else exp.Coalesce(this=parts[0], expressions=parts[1:]))


def _equate(classes: _Classes, names: dict[str, str], left: exp.Expr, right: exp.Expr) -> None:
    if isinstance(left, exp.Column) and isinstance(right, exp.Column) and left.table and right.table:
        a, b = (left.table.lower(), left.name.lower()), (right.table.lower(), right.name.lower())
        if a[0] in names and b[0] in names and a[0] != b[0]:
            classes.union(a, b)


def _one_table(select: exp.Expr) -> exp.Table | None:
    """The table a subquery reads, when it reads exactly one and neither groups nor limits."""
    if not isinstance(select, exp.Select):
        return None
    table = _from(select)
    clauses = ("joins", "group", "having", "limit", "laterals", "with")
    if not isinstance(table, exp.Table) or any(select.args.get(c) for c in clauses):
        return None
    if select.find(exp.AggFunc) is not None or select.find(exp.Window) is not None:
        return None
    return table


def _subquery_joins(select: exp.Select) -> tuple[list[tuple[exp.Table, exp.Column, exp.Column]], bool]:
    """WHERE's ``k IN (SELECT b.k FROM b …)`` and ``[NOT] EXISTS (SELECT … FROM b WHERE b.k = a.k …)``
    conjuncts as (table, outer key column, inner key column), and whether a ``NOT IN (SELECT …)`` is there."""
    found, not_in = [], False
    for conjunct in _conjuncts(select.args.get("where")):
        negated = isinstance(conjunct, exp.Not)
        node = conjunct.this.unnest() if negated else conjunct
        if isinstance(node, exp.In) and isinstance(node.args.get("query"), exp.Subquery):
            not_in = not_in or negated
            inner = node.args["query"].this
            table = _one_table(inner)
            projected = inner.selects[0].unalias() if table is not None and len(inner.selects) == 1 else None
            if not negated and table is not None and isinstance(projected, exp.Column):
                if isinstance(node.this, exp.Column):
                    found.append((table, node.this, projected))
        elif isinstance(node, exp.Exists):
            table = _one_table(node.this)
            inner_alias = table.alias_or_name.lower() if table is not None else ""
            for eq in (c for c in _conjuncts(node.this.args.get("where")) if isinstance(c, exp.EQ)):
                sides = [x for x in (eq.left.unnest(), eq.right.unnest()) if isinstance(x, exp.Column) and x.table]
                if len(sides) != 2:
                    continue
                inside = [x for x in sides if x.table.lower() == inner_alias]
                outside = [x for x in sides if x.table.lower() != inner_alias]
                if table is not None and len(inside) == 1 and len(outside) == 1:
                    found.append((table, outside[0], inside[0]))
                    break
    return found, not_in


def _visibility(aliases: list[str], kinds: list[str]) -> tuple[set[str], set[str]]:
    """(tables whose columns reach the result, tables present — not NULL-extended — in every result row)."""
    visible, preserved = {aliases[0]}, {aliases[0]}
    for alias, kind in zip(aliases[1:], kinds, strict=True):
        if kind in ("SEMI", "ANTI"):
            continue
        visible.add(alias)
        if kind in ("INNER", "CROSS"):
            preserved.add(alias)
        elif kind == "RIGHT":
            preserved = {alias}
        elif kind == "FULL":
            preserved = set()
    return visible, preserved


def _covers(expr: exp.Expr, key: list[Member], using: set[str], visible: set[str]) -> set[str] | None:
    """The tables whose key column ``expr`` shows (``{"*"}``: the merged USING column), else ``None``."""
    if isinstance(expr, exp.Coalesce):
        parts = [_covers(e, key, using, visible) for e in [expr.this, *expr.expressions]]
        shown: set[str] = set()
        for part in parts:
            if part is None:
                return None
            shown |= part
        return shown
    if not isinstance(expr, exp.Column) or expr.is_star:
        return None
    column = expr.name.lower()
    if expr.table:
        return {expr.table.lower()} if (expr.table.lower(), column) in key else None
    if column in using and any(c == column for _, c in key):
        return {"*"}
    owners = {a for a, c in key if c == column and a in visible}
    return owners if len(owners) == 1 else None


def _locating(
    select: exp.Select, key: list[Member], using: set[str], visible: set[str], preserved: set[str]
) -> tuple[str, ...]:
    chosen: list[str] = []
    covered: set[str] = set()
    for projection in select.selects:
        shown = _covers(projection.unalias(), key, using, visible)
        if shown is None or not projection.output_name:
            continue
        if "*" in shown or shown & preserved or (is_hidden_column(projection.output_name) and visible <= shown):
            return (projection.output_name,)
        chosen.append(projection.output_name)
        covered |= shown
    return tuple(chosen) if chosen and visible <= covered else ()


def window_select(tree: exp.Expr) -> exp.Select | None:
    """The one SELECT holding every window: the result SELECT, or the subquery it reads and filters."""
    owners = {id(w.find_ancestor(exp.Select)): w.find_ancestor(exp.Select) for w in tree.find_all(exp.Window)}
    found = result_select(tree)
    if len(owners) != 1 or found is None or found[1] is not None:
        return None
    owner = next(iter(owners.values()))
    outer = found[0]
    if owner is outer:
        return owner
    inner = _from(outer)
    simple_outer = not any(outer.args.get(k) for k in ("joins", "group", "having", "distinct", "laterals"))
    if simple_outer and isinstance(inner, exp.Subquery) and inner.this is owner:
        return owner
    return None


def window_keys(tree: exp.Expr) -> WindowKeys | None:
    """The windows' shared partitioning (``None`` when the query has no window function)."""
    windows = list(tree.find_all(exp.Window))
    if not windows:
        return None
    owner = window_select(tree)
    partitions = [w.args.get("partition_by") or [] for w in windows]
    if owner is None or any(not p for p in partitions) or owner.args.get("group") or has_outer_join(owner):
        return WindowKeys(False, ())
    common = [e for e in partitions[0] if all(_in(e, p) for p in partitions[1:])]
    shown = _shown(owner, common)
    found = result_select(tree)
    assert found is not None
    outer = found[0]
    if outer is not owner:
        columns: list[exp.Expr] = [exp.column(name) for name in shown]
        shown = _shown(outer, columns)
    return WindowKeys(True, tuple(shown), tuple(spark_sql(e) for e in common))


def _star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and projection.is_star and not projection.table
    )


def _shown(select: exp.Select, keys: list[exp.Expr]) -> list[str]:
    """Output names of ``select``'s columns that are one of ``keys`` unchanged (a bare ``*`` shows bare columns)."""
    shown = [p.output_name for p in select.selects if p.output_name and _in(p.unalias(), keys)]
    if any(_star(p) for p in select.selects):
        shown += [k.name for k in keys if isinstance(k, exp.Column) and k.name not in shown]
    return shown


def _same(a: exp.Expr, b: exp.Expr) -> bool:
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        return a.name.lower() == b.name.lower() and (not a.table or not b.table or a.table.lower() == b.table.lower())
    return spark_sql(a) == spark_sql(b)


def _in(node: exp.Expr, nodes: list[exp.Expr]) -> bool:
    return any(_same(node, other) for other in nodes)
