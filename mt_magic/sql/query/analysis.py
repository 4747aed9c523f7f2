"""Facts about a definition query, read from sqlglot's tree (spark dialect): data only, no decisions.

The incremental planner decides from these facts which refresh strategy is correct; the runtime uses
``sources`` for lineage and snapshot pinning. Facts describe the whole query (every nesting level, CTE
bodies included) unless a field says otherwise. sqlglot is trusted to read a query, never to validate one:
Spark has the final word on the body.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from sqlglot import exp

from mt_magic.sql.names import Position, TableName
from mt_magic.sql.query.facts import (
    GroupingKind,
    JoinFact,
    JoinKind,
    QueryFacts,
    SetOperation,
    SetOpKind,
    Union,
    WindowCall,
)
from mt_magic.sql.query.keys import join_keys, window_keys
from mt_magic.sql.query.parsed import ParsedQuery, parse_query, query_of
from mt_magic.sql.query.result_shape import result_facts
from mt_magic.sql.query.text_constants import text_not_utf8
from mt_magic.sql.query.tree import aggregate_calls, function_name, spark_sql

E = TypeVar("E", bound=exp.Expr)

NONDETERMINISTIC = frozenset(
    """rand randn random uuid shuffle uniform randstr current_timestamp current_date current_time now
    localtimestamp curdate monotonically_increasing_id spark_partition_id input_file_name
    input_file_block_start input_file_block_length""".split()
)
"""Spark functions whose result changes between runs (or rows) for the same input."""


def analyze_query(
    sql: str | ParsedQuery, *, statement: str | None = None, origin: Position | None = None
) -> QueryFacts:
    """Read the facts of one Spark SQL query.

    Args:
        sql: the query (an ``AS`` body), as text or already parsed (:class:`~.parsed.ParsedQuery`).
        statement: the statement it belongs to, named in errors.
        origin: where ``sql`` starts in the cell, so error positions are cell positions.

    Raises:
        QueryAnalysisError: the text is not exactly one query sqlglot can read, with the position.

    The facts of a query are read once and kept with it; a text is parsed once per process while it is among the
    recent ones (:func:`~.parsed.query_of`): facts are immutable and depend on the text alone.
    """
    if isinstance(sql, ParsedQuery):
        return _facts_of(sql)
    query = query_of(sql) if statement is None and origin is None else None
    return _facts_of(query or parse_query(sql, statement=statement, origin=origin))


def _facts_of(query: ParsedQuery) -> QueryFacts:
    if query.facts is None:
        query.facts = _facts(query.tree)
    return query.facts


def _facts(tree: exp.Query) -> QueryFacts:
    ctes = tuple(cte.alias_or_name for cte in tree.find_all(exp.CTE))
    groups = [g for g in tree.find_all(exp.Group)]
    return QueryFacts(
        sources=_sources(tree, {c.lower() for c in ctes}),
        ctes=ctes,
        output_columns=_output_columns(tree),
        aggregates=tuple(aggregate_calls(tree)),
        group_by=_unique(spark_sql(e) for g in groups for e in _grouping_exprs(g)),
        grouping=frozenset(k for g in groups for k in _grouping_kinds(g)),
        grouping_sets=tuple(s for g in groups for gs in g.find_all(exp.GroupingSets) for s in _sets(gs)),
        joins=tuple(_join(j) for j in _in_order(tree.find_all(exp.Join))),
        distinct=any(s.args.get("distinct") for s in tree.find_all(exp.Select)),
        window_functions=tuple(_windows(tree)),
        limit=tree.find(exp.Limit) is not None,
        order_by=any(not isinstance(o.parent, exp.Window) for o in tree.find_all(exp.Order)),
        set_operations=tuple(_set_op(s) for s in _set_ops_in_order(tree)),
        derived_tables=sum(isinstance(s.parent, (exp.From, exp.Join)) for s in tree.find_all(exp.Subquery)),
        expression_subqueries=_expression_subqueries(tree),
        nondeterministic=_unique(
            n for f in tree.find_all(exp.Func, bfs=False) if (n := function_name(f)) in NONDETERMINISTIC
        ),
        table_functions=_unique(
            function_name(t.this) for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Func)
        ),
        lateral_views=tree.find(exp.Lateral) is not None,
        result=result_facts(tree),
        repeated_sources=_repeated_sources(tree, {c.lower() for c in ctes}),
        join_keys=join_keys(tree),
        window_keys=window_keys(tree),
        union=_union(tree),
        text_not_utf8=text_not_utf8(tree),
    )


def _union(tree: exp.Expr) -> Union | None:
    """The branches of a top-level UNION chain (``None`` for anything else, e.g. INTERSECT or WITH around it)."""
    if not isinstance(tree, exp.Union) or tree.args.get("with") or tree.args.get("with_"):
        return None
    leaves: list[exp.Expr] = []
    inner_distinct = False

    def walk(node: exp.Expr, top: bool) -> bool:
        nonlocal inner_distinct
        if isinstance(node, exp.Union):
            inner_distinct = inner_distinct or (not top and bool(node.args.get("distinct")))
            return walk(node.this, False) and walk(node.expression, False)
        leaves.append(node)
        return isinstance(node, exp.Select)

    if not walk(tree, True) or any(tree.args.get(k) for k in ("order", "limit")):
        return None
    distinct = bool(tree.args.get("distinct"))
    branches = tuple(_facts_of(ParsedQuery.of_tree(leaf.copy())) for leaf in leaves if isinstance(leaf, exp.Select))
    return Union(branches, distinct, inner_distinct and not distinct)


def _start(node: exp.Expr) -> int:
    """A node's offset in the query, from its first identifier's token metadata (for textual order)."""
    ident = node if isinstance(node, exp.Identifier) else node.find(exp.Identifier, bfs=False)
    return int(ident.meta.get("start", 0)) if ident is not None else 0


def _set_ops_in_order(node: exp.Expr) -> list[exp.SetOperation]:
    """Set operations in the order their operators are written: an in-order walk (left, self, right)."""
    out: list[exp.SetOperation] = []
    if isinstance(node, exp.SetOperation):
        out.extend(_set_ops_in_order(node.this))
        out.append(node)
        out.extend(_set_ops_in_order(node.expression))
        children = [v for k, v in node.args.items() if k not in ("this", "expression")]
    else:
        children = list(node.args.values())
    for child in children:
        for item in child if isinstance(child, list) else [child]:
            if isinstance(item, exp.Expr):
                out.extend(_set_ops_in_order(item))
    return out


def _in_order(nodes: Iterable[E]) -> list[E]:
    return sorted(nodes, key=_start)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    """Deduplicated, first occurrence kept."""
    return tuple(dict.fromkeys(items))


def _sources(tree: exp.Expr, ctes: set[str]) -> tuple[TableName, ...]:
    found: dict[tuple[str, ...], TableName] = {}
    for table in _in_order(tree.find_all(exp.Table)):
        if isinstance(table.this, exp.Func) or not table.name:
            continue
        parts = [p.name for p in table.parts]
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        found.setdefault(tuple(p.lower() for p in parts), TableName.from_parts(parts))
    return tuple(found.values())


def _output_columns(tree: exp.Query) -> tuple[str | None, ...] | None:
    names: list[str | None] = []
    for projection in tree.selects:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column) and projection.is_star):
            return None
        names.append(projection.output_name or None)
    return tuple(names)


def _grouping_exprs(group: exp.Group) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    for e in group.expressions:
        if isinstance(e, (exp.GroupingSets, exp.Cube, exp.Rollup)):
            for item in (i.unnest() for i in e.expressions):
                out.extend(item.expressions if isinstance(item, exp.Tuple) else [item])
        else:
            out.append(e)
    return out


def _grouping_kinds(group: exp.Group) -> list[GroupingKind]:
    kinds = []
    for e in group.expressions:
        kind = {
            exp.GroupingSets: GroupingKind.GROUPING_SETS,
            exp.Cube: GroupingKind.CUBE,
            exp.Rollup: GroupingKind.ROLLUP,
        }.get(type(e), GroupingKind.GROUP_BY)
        kinds.append(kind)
    if group.args.get("cube"):
        kinds.append(GroupingKind.CUBE)
    if group.args.get("rollup"):
        kinds.append(GroupingKind.ROLLUP)
    return kinds


def _sets(gs: exp.GroupingSets) -> list[tuple[str, ...]]:
    sets = [s.unnest() for s in gs.expressions]
    return [tuple(spark_sql(x) for x in (s.expressions if isinstance(s, exp.Tuple) else [s])) for s in sets]


def _join(join: exp.Join) -> JoinFact:
    kind, side = (join.args.get("kind") or "").upper(), (join.args.get("side") or "").upper()
    if kind in ("SEMI", "ANTI", "CROSS"):
        join_kind = JoinKind[kind]
    elif side in ("LEFT", "RIGHT", "FULL"):
        join_kind = JoinKind[side]
    else:
        join_kind = JoinKind.INNER
    natural = (join.args.get("method") or "").upper() == "NATURAL"
    has_condition = bool(join.args.get("on") or join.args.get("using"))
    return JoinFact(join_kind, natural, has_condition, join.this.alias_or_name)


def _windows(tree: exp.Expr) -> list[WindowCall]:
    calls = []
    for window in tree.find_all(exp.Window, bfs=False):
        fn = window.this
        if isinstance(fn, exp.Filter):
            fn = fn.this
        if isinstance(fn, exp.Func):
            calls.append(WindowCall(function_name(fn), spark_sql(window)))
    return calls


def _set_op(node: exp.SetOperation) -> SetOperation:
    kind = {exp.Union: SetOpKind.UNION, exp.Intersect: SetOpKind.INTERSECT}.get(type(node), SetOpKind.EXCEPT)
    return SetOperation(kind, bool(node.args.get("distinct")))


def _expression_subqueries(tree: exp.Expr) -> int:
    count = sum(1 for _ in tree.find_all(exp.Exists))
    for sub in tree.find_all(exp.Subquery):
        if not isinstance(sub.parent, (exp.From, exp.Join, exp.SetOperation, exp.Subquery)):
            count += 1
    return count


def _repeated_sources(tree: exp.Expr, ctes: set[str]) -> tuple[TableName, ...]:
    """Sources whose rows are read more than once, counting a CTE's sources once per reference to it."""
    references: dict[str, list[str | None]] = {c: [] for c in ctes}
    base: list[tuple[exp.Table, str | None]] = []
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func) or not table.name:
            continue
        enclosing = table.find_ancestor(exp.CTE)
        context = enclosing.alias_or_name.lower() if enclosing else None
        if not table.db and table.name.lower() in ctes:
            references[table.name.lower()].append(context)
        else:
            base.append((table, context))

    def multiplicity(cte: str | None, seen: frozenset[str] = frozenset()) -> int:
        if cte is None:
            return 1
        if cte in seen:
            return 2
        return sum(multiplicity(ctx, seen | {cte}) for ctx in references.get(cte, []))

    counts: dict[tuple[str, ...], int] = {}
    names: dict[tuple[str, ...], TableName] = {}
    for table, context in base:
        parts = [p.name for p in table.parts]
        key = tuple(p.lower() for p in parts)
        counts[key] = counts.get(key, 0) + multiplicity(context)
        names.setdefault(key, TableName.from_parts(parts))
    return tuple(names[k] for k, n in counts.items() if n > 1)
