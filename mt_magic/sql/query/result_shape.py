"""Facts about the result SELECT — the one producing the table's rows — for the incremental planner:
its output columns (group key, aggregate, …), grouping keys and grouping sets, looking through a renaming
wrapper over an aggregating SELECT."""

from __future__ import annotations

from sqlglot import exp

from mt_magic.sql.query.facts import OutputColumn, OutputKind, ResultSelect
from mt_magic.sql.query.tree import aggregate_calls, in_window, is_aggregate, spark_sql


def result_select(tree: exp.Expr) -> tuple[exp.Select, exp.Select | None] | None:
    """The SELECT producing the result rows and the renaming wrapper looked through, if any.

    ``None`` when the query is not a SELECT (a set operation). The wrapper is only looked through when
    the inner SELECT aggregates: over a plain projection, the wrapper is just more projection.
    """
    if not isinstance(tree, exp.Select):
        return None
    inner = _wrapped_select(tree)
    return (inner, tree) if inner is not None else (tree, None)


def _from(select: exp.Select) -> exp.Expr | None:
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


def _uncast(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Cast) else node


def _own_aggregates(select: exp.Select, within: exp.Expr | None = None) -> list[exp.Expr]:
    """Aggregate calls that belong to ``select`` itself (not to its subqueries), outside windows."""
    return [
        fn
        for fn in (within or select).find_all(exp.Func)
        if is_aggregate(fn) and not in_window(fn) and fn.find_ancestor(exp.Select) is select
    ]


def _aggregated(select: exp.Select) -> bool:
    return bool(select.args.get("group") or select.args.get("distinct") or _own_aggregates(select))


def _resolve_ordinal(select: exp.Select, node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit():
        index = int(node.name) - 1
        if 0 <= index < len(select.selects):
            return select.selects[index].unalias()
    return node


def _grouping(select: exp.Select) -> tuple[list[exp.Expr], list[exp.Expr], int]:
    """(every grouping expression, those in every grouping set, number of grouping sets)."""
    group = select.args.get("group")
    if group is None:
        if select.args.get("distinct") and not _own_aggregates(select):
            keys = [p.unalias() for p in select.selects]
            return keys, keys, 1
        return [], [], 1 if _own_aggregates(select) else 0
    plain: list[exp.Expr] = []
    common_sets: list[list[exp.Expr]] = []
    rolled: list[exp.Expr] = []
    count = 1
    for e in group.expressions:
        if isinstance(e, exp.GroupingSets):
            sets = [s.unnest() for s in e.expressions]
            members = [
                [_resolve_ordinal(select, x) for x in (s.expressions if isinstance(s, exp.Tuple) else [s])]
                for s in sets
            ]
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


def _dedupe(nodes: list[exp.Expr]) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    for node in nodes:
        if not _member(node, out):
            out.append(node)
    return out


def _same_key(a: exp.Expr, b: exp.Expr) -> bool:
    """Same expression; columns match by name when one side has no table qualifier."""
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        return a.name.lower() == b.name.lower() and (not a.table or not b.table or a.table == b.table)
    return spark_sql(a) == spark_sql(b)


def _member(node: exp.Expr, nodes: list[exp.Expr]) -> bool:
    return any(_same_key(node, other) for other in nodes)


def _output(select: exp.Select, projection: exp.Expr, keys: list[exp.Expr]) -> OutputColumn:
    expr = projection.unalias()
    name = projection.output_name or None
    if not _aggregated(select):
        return OutputColumn(name, OutputKind.ROW, spark_sql(expr))
    calls = _own_aggregates(select, expr)
    if not calls:
        key = next((k for k in keys if _same_key(expr, k)), None)
        if key is None:
            return OutputColumn(name, OutputKind.KEY_EXPRESSION, spark_sql(expr))
        return OutputColumn(name, OutputKind.GROUP_KEY, spark_sql(expr), group_key=spark_sql(key))
    bare = expr.this if isinstance(expr, exp.Filter) else expr
    if is_aggregate(bare) and len(calls) == 1:
        return OutputColumn(name, OutputKind.AGGREGATE, spark_sql(expr), aggregate_calls(expr)[0])
    return OutputColumn(name, OutputKind.AGGREGATE_EXPRESSION, spark_sql(expr))


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
        outputs.append(
            OutputColumn(
                projection.output_name or None,
                kind,
                source.sql,
                source.aggregate if same else None,
                source.group_key if same else None,
            )
        )
    return tuple(outputs)


def result_facts(tree: exp.Expr) -> ResultSelect | None:
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
        group_keys=tuple(spark_sql(k) for k in keys),
        common_group_keys=tuple(spark_sql(k) for k in common),
        grouping_set_count=sets,
        distinct=bool(select.args.get("distinct")),
        having=select.args.get("having") is not None,
        wrapped=wrapper is not None,
        nested_aggregation=any(_aggregated(s) for s in others),
    )
