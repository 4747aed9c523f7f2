"""Spark SQL text the runtime writes: quoted identifiers and string literals, spelled once.

Every name that reaches Spark — SQL text, ``spark.table``, ``read.table``, ``writeTo``, ``CALL`` arguments —
goes through :func:`identifier` or :func:`qualified`, so any name Spark accepts in backquotes (spaces, ``;``,
quotes, backquotes, non-ASCII letters, reserved words) means the same table everywhere. Names travel inside
the runtime as ``catalog.namespace.table`` text, so :func:`qualified` splits on '.'; a dot inside one name
part is refused where names enter (``sql.names.name_part_refusal``: the grammar, ``Workspace.qualify``, the
sources of a query).
"""

from __future__ import annotations


def identifier(name: str) -> str:
    """One name part in backquotes (a column, a view, a namespace)."""
    return "`" + name.replace("`", "``") + "`"


def qualified(name: str) -> str:
    """A dotted name (``catalog.namespace.table``) quoted part by part."""
    return ".".join(identifier(part) for part in name.split("."))


def procedure(table: str, name: str) -> tuple[str, str]:
    """For ``CALL <catalog>.system.<name>(table => …)`` on ``catalog.namespace.table``: the quoted procedure
    name and the table argument (the name inside the catalog, quoted, as a string literal)."""
    catalog, _, inside = table.partition(".")
    return f"{identifier(catalog)}.system.{identifier(name)}", string_literal(qualified(inside))


def string_literal(value: str) -> str:
    """A Spark SQL string literal holding ``value`` exactly."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def is_temp_view(spark, name: str) -> bool:  # type: ignore[no-untyped-def]
    """Whether a one-part ``name`` is a temporary view of ``spark``'s session (Spark answers "not found" with an
    exception: that is False)."""
    try:
        return bool(spark.catalog.getTable(identifier(name)).isTemporary)
    except Exception:
        return False
