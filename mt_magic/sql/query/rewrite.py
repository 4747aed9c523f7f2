"""Rewrites of a definition query's source tables, done on sqlglot's tree (spark dialect), never on raw text.

Each takes the query as a :class:`~.parsed.ParsedQuery` and returns a new one (tree in, tree out: nothing is parsed
again), or takes text and returns text (callers that hold only the stored definition's text: the refresh; the text
is parsed once per process, :func:`~.parsed.query_of`).

* :func:`qualify_sources` makes every source name ``catalog.namespace.table`` so a stored query means the
  same thing in any session, whatever its current catalog and namespace.
* :func:`pin_sources` makes every source read one snapshot (``VERSION AS OF <id>``), or a named view that
  the refresh engine registered (a delta, an empty relation), so one refresh sees one consistent state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import sqlglot
from sqlglot import exp

from mt_magic.errors import MtMagicError
from mt_magic.sql.names import name_part_refusal
from mt_magic.sql.query.parsed import ParsedQuery, Q, rewritten, tree_to_change


class QueryRewriteError(MtMagicError):
    """The definition query cannot be rewritten: sqlglot cannot read it, or a source's name or snapshot is missing
    (what, the text at fault and a Fix; the caller adds the statement)."""


def _tree(query: str | ParsedQuery) -> exp.Expr:
    """A tree of ``query`` to rewrite (a copy: a query's tree is shared)."""
    try:
        tree = tree_to_change(query)
    except sqlglot.errors.ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        raise QueryRewriteError(
            f"the query cannot be read as Spark SQL: {detail.get('description', exc)}",
            offending=detail.get("highlight") or None,
            fix="correct the query near this position (check its brackets and quotes)",
        ) from exc
    if tree is None:
        raise QueryRewriteError("the query body is empty", fix="write a SELECT after AS")
    return tree


def _cte_names(tree: exp.Expr) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def _source_tables(tree: exp.Expr) -> list[exp.Table]:
    ctes = _cte_names(tree)
    return [
        t
        for t in tree.find_all(exp.Table)
        if t.name and not (not t.db and t.name.lower() in ctes) and not isinstance(t.this, exp.Func)
    ]


def table_name_parts(table: exp.Table) -> tuple[str, ...]:
    """A table reference's name parts as written (catalog, namespace, name; the ones present)."""
    return tuple(p for p in (table.catalog, table.db, table.name) if p)


def _identifier_table(parts: tuple[str, ...], alias: str | None) -> exp.Table:
    names = [exp.to_identifier(p, quoted=True) for p in parts]
    catalog, db, name = ([None] * (3 - len(names)) + names)[-3:]
    table = exp.Table(this=name, db=db, catalog=catalog)
    if alias:
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return table


def _transform_sources(query: Q, replace: Callable[[tuple[str, ...], exp.Table], exp.Expr]) -> Q:
    tree = _tree(query)
    targets = {id(t) for t in _source_tables(tree)}

    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and id(node) in targets:
            return _placed(replace(table_name_parts(node), node), node)
        return node

    return rewritten(query, tree.transform(visit, copy=False))


def _placed(new: exp.Expr, old: exp.Table) -> exp.Expr:
    """``new`` at ``old``'s place in the text it was read from: its identifiers take the offset of ``old``'s first
    one, so facts read in textual order (joins, sources) see the rewritten tree in the order of its text."""
    if new is old:
        return new
    first = old.find(exp.Identifier, bfs=False)
    if first is None or "start" not in first.meta:
        return new
    for ident in new.find_all(exp.Identifier):
        if "start" not in ident.meta:
            ident.meta["start"] = first.meta["start"]
    return new


def qualify_sources(
    query: Q, default_catalog: str, default_namespace: str, known_catalogs: frozenset[str] = frozenset()
) -> tuple[Q, tuple[str, ...]]:
    """Fully qualify every source table.

    Args:
        query: the definition query (Spark SQL).
        default_catalog: catalog for names without one.
        default_namespace: namespace for one-part names.
        known_catalogs: catalog names (lower case) that a two-part name's first part may be; otherwise
            a two-part name is ``namespace.table`` in the default catalog.

    Returns:
        The rewritten query and the qualified source names in order of first appearance.

    Raises:
        QueryRewriteError: the query does not parse, or a source's name has a part ``sql.names`` refuses.
    """
    sources: list[str] = []

    def qualify(parts: tuple[str, ...]) -> tuple[str, ...]:
        if len(parts) == 1:
            return (default_catalog, default_namespace, parts[0])
        if len(parts) == 2 and parts[0].lower() not in known_catalogs:
            return (default_catalog, *parts)
        return parts

    def replace(parts: tuple[str, ...], node: exp.Table) -> exp.Expr:
        for part in parts:
            refusal = name_part_refusal(part)
            if refusal is not None:
                problem, fix = refusal
                raise QueryRewriteError(f"source table {'.'.join(parts)}: {problem}", offending=part, fix=fix)
        full = qualify(parts)
        name = ".".join(full)
        if name not in sources:
            sources.append(name)
        new = _identifier_table(full, node.alias or (parts[-1] if len(parts) > 1 else None))
        return new

    rewritten = _transform_sources(query, replace)
    return rewritten, tuple(sources)


def pin_sources(query: Q, snapshots: Mapping[str, int | None], views: Mapping[str, str] | None = None) -> Q:
    """Make each qualified source read a fixed snapshot or a registered view.

    Args:
        query: a query from :func:`qualify_sources`.
        snapshots: qualified source name → snapshot id (``None``: read as is, e.g. an empty table).
        views: qualified source name → temp view name, taking precedence over ``snapshots``.

    Raises:
        QueryRewriteError: a source of the query is in neither mapping.
    """
    views = views or {}

    def replace(parts: tuple[str, ...], node: exp.Table) -> exp.Expr:
        name = ".".join(parts)
        alias = node.alias or parts[-1]
        if name in views:
            return _identifier_table((views[name],), alias)
        if name not in snapshots:
            raise QueryRewriteError(
                f"source {name} has no pinned snapshot: the refresh read other sources than the query names",
                fix="run ALTER MATERIALIZED TABLE … AS with the table's query (SHOW CREATE MATERIALIZED TABLE shows "
                "it) so its sources are recorded again",
            )
        table = _identifier_table(parts, alias)
        snapshot = snapshots[name]
        if snapshot is not None:
            table.set("version", exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(snapshot)))
        return table

    return _transform_sources(query, replace)


def rename_source(query: Q, old: str, new: str) -> Q:
    """A qualified query (from :func:`qualify_sources`) reading ``new`` where it read ``old`` (RENAME TO).

    The old table's last name part stays its alias, so column references such as ``t.col`` keep working.
    """
    old_parts = tuple(old.split("."))

    def replace(parts: tuple[str, ...], node: exp.Table) -> exp.Expr:
        if parts != old_parts:
            return node
        return _identifier_table(tuple(new.split(".")), node.alias or parts[-1])

    return _transform_sources(query, replace)
