"""Spark SQL text the runtime writes: quoted identifiers and string literals, spelled once."""

from __future__ import annotations


def identifier(name: str) -> str:
    """One name part in backquotes (a column, a view, a namespace)."""
    return "`" + name.replace("`", "``") + "`"


def qualified(name: str) -> str:
    """A dotted name (``catalog.namespace.table``) quoted part by part."""
    return ".".join(identifier(part) for part in name.split("."))


def procedure(table: str, name: str) -> tuple[str, str]:
    """For ``CALL <catalog>.system.<name>(table => …)`` on ``catalog.namespace.table``: the quoted procedure
    name and the table argument (the name inside the catalog, as a string literal)."""
    catalog, *parts = table.split(".")
    return f"{identifier(catalog)}.system.{name}", string_literal(".".join(identifier(p) for p in parts))


def string_literal(value: str) -> str:
    """A Spark SQL string literal holding ``value`` exactly."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
