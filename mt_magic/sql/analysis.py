"""Facts about a definition query, read from sqlglot's tree (spark dialect): data only, no decisions.

The incremental planner decides from these facts which refresh strategy is correct; the runtime uses
``sources`` for lineage and snapshot pinning. Facts describe the whole query (every nesting level, CTE
bodies included) unless a field says otherwise. sqlglot is trusted to read a query, never to validate one:
Spark has the final word on the body.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import sqlglot
from sqlglot import exp

from mt_magic.sql.errors import QueryAnalysisError
from mt_magic.sql.facts import (
    AggregateCall,
    GroupingKind,
    JoinFact,
    JoinKind,
    OutputColumn,
    OutputKind,
    QueryFacts,
    ResultSelect,
    SetOperation,
    SetOpKind,
    WindowCall,
)
from mt_magic.sql.statements import AlterQuery, CreateMaterializedTable, Position, TableName

DIALECT = "spark"
E = TypeVar("E", bound=exp.Expression)

NONDETERMINISTIC = frozenset(
    """rand randn random uuid shuffle uniform randstr current_timestamp current_date current_time now
    localtimestamp curdate monotonically_increasing_id spark_partition_id input_file_name
    input_file_block_start input_file_block_length""".split()
)
"""Spark functions whose result changes between runs (or rows) for the same input."""

_UNKNOWN_AGGREGATES = frozenset(
    """every some any try_sum try_avg histogram_numeric count_min_sketch hll_sketch_agg hll_union_agg product
    bitmap_construct_agg bitmap_or_agg approx_top_k""".split()
)
"""Spark aggregate functions that sqlglot reads as anonymous functions."""


def analyze_query(sql: str, *, statement: str | None = None, origin: Position | None = None) -> QueryFacts:
    """Read the facts of one Spark SQL query.

    Args:
        sql: the query (an ``AS`` body).
        statement: the statement it belongs to, named in errors.
        origin: where ``sql`` starts in the cell, so error positions are cell positions.

    Raises:
        QueryAnalysisError: the text is not exactly one query sqlglot can read, with the position.
    """
    tree = _parse(sql, statement, origin)
    ctes = tuple(cte.alias_or_name for cte in tree.find_all(exp.CTE))
    groups = [g for g in tree.find_all(exp.Group)]
    return QueryFacts(
        sources=_sources(tree, {c.lower() for c in ctes}),
        ctes=ctes,
        output_columns=_output_columns(tree),
        aggregates=tuple(_aggregates(tree)),
        group_by=_unique(_spark(e) for g in groups for e in _grouping_exprs(g)),
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
        nondeterministic=_unique(n for f in tree.find_all(exp.Func, bfs=False) if (n := _name(f)) in NONDETERMINISTIC),
        table_functions=_unique(_name(t.this) for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Func)),
        lateral_views=tree.find(exp.Lateral) is not None,
        result=_result_facts(tree),
        repeated_sources=_repeated_sources(tree, {c.lower() for c in ctes}),
    )


def analyze_statement(statement: CreateMaterializedTable | AlterQuery) -> QueryFacts:
    """:func:`analyze_query` on a statement's body, errors pointing into the cell."""
    verb = "ALTER" if isinstance(statement, AlterQuery) else "CREATE OR ALTER" if statement.or_alter else "CREATE"
    return analyze_query(
        statement.query, statement=f"{verb} MATERIALIZED TABLE {statement.name}", origin=statement.query_position
    )


def _parse(sql: str, statement: str | None, origin: Position | None) -> exp.Query:
    label = f"query of {statement}" if statement else "query"
    try:
        trees = [t for t in sqlglot.parse(sql, read=DIALECT) if t is not None]
    except sqlglot.errors.ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        raise QueryAnalysisError(
            f"the query cannot be read as Spark SQL: {detail.get('description', exc)}",
            statement=label,
            offending=detail.get("highlight") or None,
            position=_cell_position(detail, origin),
            fix="correct the query near this position",
        ) from None
    except sqlglot.errors.SqlglotError as exc:
        raise QueryAnalysisError(
            f"the query cannot be read as Spark SQL: {exc}",
            statement=label,
            position=origin,
            fix="check quotes and brackets in the query",
        ) from None
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        what = "several statements" if len(trees) > 1 else "no query" if not trees else type(trees[0]).__name__
        raise QueryAnalysisError(
            f"the AS body must be exactly one query (SELECT …), found {what}",
            statement=label,
            offending=sql[:40],
            position=origin,
            fix="write a single SELECT (or WITH … SELECT) after AS",
        )
    return trees[0]


def _cell_position(detail: dict, origin: Position | None) -> Position | None:
    line, col = detail.get("line"), detail.get("col")
    if not isinstance(line, int) or not isinstance(col, int):
        return origin
    col = max(1, col - len(detail.get("highlight") or "x") + 1)
    if origin is None:
        return Position(line, col)
    return Position(origin.line + line - 1, col + origin.column - 1 if line == 1 else col)


def _start(node: exp.Expression) -> int:
    """A node's offset in the query, from its first identifier's token metadata (for textual order)."""
    ident = node if isinstance(node, exp.Identifier) else node.find(exp.Identifier, bfs=False)
    return int(ident.meta.get("start", 0)) if ident is not None else 0


def _set_ops_in_order(node: exp.Expression) -> list[exp.SetOperation]:
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
            if isinstance(item, exp.Expression):
                out.extend(_set_ops_in_order(item))
    return out


def _in_order(nodes: Iterable[E]) -> list[E]:
    return sorted(nodes, key=_start)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    """Deduplicated, first occurrence kept."""
    return tuple(dict.fromkeys(items))


def _spark(node: exp.Expression) -> str:
    return node.sql(dialect=DIALECT)


def _name(fn: exp.Expression) -> str:
    """A function's Spark name, lower case: as written for unknown functions, else as Spark spells it."""
    if isinstance(fn, exp.Anonymous):
        return str(fn.name).lower()
    return _spark(fn).split("(", 1)[0].strip().lower()


def _sources(tree: exp.Expression, ctes: set[str]) -> tuple[TableName, ...]:
    found: dict[tuple[str, ...], TableName] = {}
    for table in _in_order(tree.find_all(exp.Table)):
        if isinstance(table.this, exp.Func) or not table.name:
            continue
        parts = [p.name for p in table.parts]
        if len(parts) == 1 and parts[0].lower() in ctes:
            continue
        found.setdefault(tuple(p.lower() for p in parts), _table_name(parts))
    return tuple(found.values())


def _table_name(parts: list[str]) -> TableName:
    """1 part: name; 2: namespace.name; 3+: catalog.namespace.name (nested namespaces joined by '.')."""
    if len(parts) == 1:
        return TableName(name=parts[0])
    if len(parts) == 2:
        return TableName(name=parts[1], namespace=parts[0])
    return TableName(name=parts[-1], namespace=".".join(parts[1:-1]), catalog=parts[0])


def _output_columns(tree: exp.Query) -> tuple[str | None, ...] | None:
    names: list[str | None] = []
    for projection in tree.selects:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column) and projection.is_star):
            return None
        names.append(projection.output_name or None)
    return tuple(names)


def _window_of(fn: exp.Expression) -> bool:
    parent = fn.parent
    if isinstance(parent, exp.Filter):
        parent = parent.parent
    return isinstance(parent, exp.Window)


def _aggregates(tree: exp.Expression) -> list[AggregateCall]:
    calls = []
    for fn in tree.find_all(exp.Func, bfs=False):
        is_agg = isinstance(fn, exp.AggFunc) or (isinstance(fn, exp.Anonymous) and _name(fn) in _UNKNOWN_AGGREGATES)
        if not is_agg or _window_of(fn):
            continue
        distinct = any(isinstance(a, exp.Distinct) for a in fn.iter_expressions())
        filtered = isinstance(fn.parent, exp.Filter)
        calls.append(AggregateCall(_name(fn), distinct, filtered, _spark(fn.parent if filtered else fn)))
    return calls


def _grouping_exprs(group: exp.Group) -> list[exp.Expression]:
    out: list[exp.Expression] = []
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
    return [tuple(_spark(x) for x in (s.expressions if isinstance(s, exp.Tuple) else [s])) for s in sets]


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


def _windows(tree: exp.Expression) -> list[WindowCall]:
    calls = []
    for window in tree.find_all(exp.Window, bfs=False):
        fn = window.this
        if isinstance(fn, exp.Filter):
            fn = fn.this
        if isinstance(fn, exp.Func):
            calls.append(WindowCall(_name(fn), _spark(window)))
    return calls


def _set_op(node: exp.SetOperation) -> SetOperation:
    kind = {exp.Union: SetOpKind.UNION, exp.Intersect: SetOpKind.INTERSECT}.get(type(node), SetOpKind.EXCEPT)
    return SetOperation(kind, bool(node.args.get("distinct")))


def _expression_subqueries(tree: exp.Expression) -> int:
    count = sum(1 for _ in tree.find_all(exp.Exists))
    for sub in tree.find_all(exp.Subquery):
        if not isinstance(sub.parent, (exp.From, exp.Join, exp.SetOperation, exp.Subquery)):
            count += 1
    return count


# --- the result SELECT (for the incremental planner) ------------------------------------------------------


def result_select(tree: exp.Expression) -> tuple[exp.Select, exp.Select | None] | None:
    """The SELECT producing the result rows and the renaming wrapper looked through, if any.

    ``None`` when the query is not a SELECT (a set operation). The wrapper is only looked through when
    the inner SELECT aggregates: over a plain projection, the wrapper is just more projection.
    """
    if not isinstance(tree, exp.Select):
        return None
    inner = _wrapped_select(tree)
    return (inner, tree) if inner is not None else (tree, None)


def _from(select: exp.Select) -> exp.Expression | None:
    return select.args.get("from_") or select.args.get("from")


def _wrapped_select(outer: exp.Select) -> exp.Select | None:
    clauses = ("joins", "where", "group", "having", "qualify", "order", "limit", "distinct", "laterals", "windows")
    source = _from(outer)
    if source is None or any(outer.args.get(k) for k in clauses):
        return None
    inner = source.this
    if not isinstance(inner, exp.Subquery) or not isinstance(inner.this, exp.Select):
        return None
    for projection in outer.selects:
        column = _uncast(projection.unalias())
        if not isinstance(column, exp.Column) or column.is_star:
            return None
    return inner.this if _aggregated(inner.this) else None


def _uncast(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Cast) else node


def _is_aggregate(fn: exp.Expression) -> bool:
    return isinstance(fn, exp.AggFunc) or (isinstance(fn, exp.Anonymous) and _name(fn) in _UNKNOWN_AGGREGATES)


def _own_aggregates(select: exp.Select, within: exp.Expression | None = None) -> list[exp.Expression]:
    """Aggregate calls that belong to ``select`` itself (not to its subqueries), outside windows."""
    return [
        fn for fn in (within or select).find_all(exp.Func)
        if _is_aggregate(fn) and not _window_of(fn) and fn.find_ancestor(exp.Select) is select
    ]


def _aggregated(select: exp.Select) -> bool:
    return bool(select.args.get("group") or select.args.get("distinct") or _own_aggregates(select))


def _resolve_ordinal(select: exp.Select, node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit():
        index = int(node.name) - 1
        if 0 <= index < len(select.selects):
            return select.selects[index].unalias()
    return node


def _grouping(select: exp.Select) -> tuple[list[exp.Expression], list[exp.Expression], int]:
    """(every grouping expression, those in every grouping set, number of grouping sets)."""
    group = select.args.get("group")
    if group is None:
        if select.args.get("distinct") and not _own_aggregates(select):
            keys = [p.unalias() for p in select.selects]
            return keys, keys, 1
        return [], [], 1 if _own_aggregates(select) else 0
    plain: list[exp.Expression] = []
    common_sets: list[list[exp.Expression]] = []
    rolled: list[exp.Expression] = []
    count = 1
    for e in group.expressions:
        if isinstance(e, exp.GroupingSets):
            sets = [s.unnest() for s in e.expressions]
            members = [[_resolve_ordinal(select, x) for x in (s.expressions if isinstance(s, exp.Tuple) else [s])]
                       for s in sets]
            count *= max(len(members), 1)
            rolled.extend(x for m in members for x in m)
            common_sets.append([x for x in members[0] if all(_member(x, m) for m in members[1:])] if members else [])
        elif isinstance(e, (exp.Rollup, exp.Cube)):
            items = [_resolve_ordinal(select, i.unnest()) for i in e.expressions]
            count *= len(items) + 1 if isinstance(e, exp.Rollup) else 2 ** len(items)
            rolled.extend(items)
        else:
            plain.append(_resolve_ordinal(select, e))
    if group.args.get("rollup") or group.args.get("cube"):
        count *= len(plain) + 1 if group.args.get("rollup") else 2 ** len(plain)
        rolled, plain = plain + rolled, []
    common = plain + [x for s in common_sets for x in s]
    return _dedupe([*plain, *rolled]), _dedupe(common), count


def _dedupe(nodes: list[exp.Expression]) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    for node in nodes:
        if not _member(node, out):
            out.append(node)
    return out


def _same_key(a: exp.Expression, b: exp.Expression) -> bool:
    """Same expression; columns match by name when one side has no table qualifier."""
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        return a.name.lower() == b.name.lower() and (not a.table or not b.table or a.table == b.table)
    return _spark(a) == _spark(b)


def _member(node: exp.Expression, nodes: list[exp.Expression]) -> bool:
    return any(_same_key(node, other) for other in nodes)


def _output(select: exp.Select, projection: exp.Expression, keys: list[exp.Expression]) -> OutputColumn:
    expr = projection.unalias()
    name = projection.output_name or None
    if not _aggregated(select):
        return OutputColumn(name, OutputKind.ROW, _spark(expr))
    calls = _own_aggregates(select, expr)
    if not calls:
        key = next((k for k in keys if _same_key(expr, k)), None)
        if key is None:
            return OutputColumn(name, OutputKind.KEY_EXPRESSION, _spark(expr))
        return OutputColumn(name, OutputKind.GROUP_KEY, _spark(expr), group_key=_spark(key))
    bare = expr.this if isinstance(expr, exp.Filter) else expr
    if _is_aggregate(bare) and len(calls) == 1:
        return OutputColumn(name, OutputKind.AGGREGATE, _spark(expr), _aggregates(expr)[0])
    return OutputColumn(name, OutputKind.AGGREGATE_EXPRESSION, _spark(expr))


_DERIVED = {
    OutputKind.GROUP_KEY: OutputKind.KEY_EXPRESSION,
    OutputKind.KEY_EXPRESSION: OutputKind.KEY_EXPRESSION,
    OutputKind.AGGREGATE: OutputKind.AGGREGATE_EXPRESSION,
    OutputKind.AGGREGATE_EXPRESSION: OutputKind.AGGREGATE_EXPRESSION,
    OutputKind.ROW: OutputKind.ROW,
}


def _through_wrapper(wrapper: exp.Select, inner: tuple[OutputColumn, ...]) -> tuple[OutputColumn, ...] | None:
    by_name = {c.name.lower(): c for c in inner if c.name}
    outputs = []
    for projection in wrapper.selects:
        expr = projection.unalias()
        source = by_name.get(_uncast(expr).name.lower())
        if source is None:
            return None
        kind = _DERIVED[source.kind] if isinstance(expr, exp.Cast) else source.kind
        same = kind is source.kind
        outputs.append(OutputColumn(projection.output_name or None, kind, source.sql,
                                    source.aggregate if same else None, source.group_key if same else None))
    return tuple(outputs)


def _result_facts(tree: exp.Expression) -> ResultSelect | None:
    found = result_select(tree)
    if found is None:
        return None
    select, wrapper = found
    keys, common, sets = _grouping(select)
    star = any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star) for p in select.selects)
    outputs: tuple[OutputColumn, ...] | None = None
    if not star:
        outputs = tuple(_output(select, p, keys) for p in select.selects)
        if wrapper is not None:
            outputs = _through_wrapper(wrapper, outputs)
    others = [s for s in tree.find_all(exp.Select) if s is not select and s is not wrapper]
    return ResultSelect(
        outputs=outputs,
        aggregated=_aggregated(select),
        group_keys=tuple(_spark(k) for k in keys),
        common_group_keys=tuple(_spark(k) for k in common),
        grouping_set_count=sets,
        distinct=bool(select.args.get("distinct")),
        having=select.args.get("having") is not None,
        wrapped=wrapper is not None,
        nested_aggregation=any(_aggregated(s) for s in others),
    )


def _repeated_sources(tree: exp.Expression, ctes: set[str]) -> tuple[TableName, ...]:
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
        names.setdefault(key, _table_name(parts))
    return tuple(names[k] for k, n in counts.items() if n > 1)
