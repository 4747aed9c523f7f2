"""Where things are in a cell and what a table is called: the two values every part of the SQL front end shares."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mt_magic.errors import closest_names
from mt_magic.vocabulary import HIDDEN_COLUMN_PREFIX, is_hidden_column


@dataclass(frozen=True)
class Position:
    """A 1-based line and column in the cell text."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"

    def inside(self, origin: Position | None) -> Position:
        """This position, counted in a text that starts at ``origin`` of the cell, as a position in the cell."""
        if origin is None:
            return self
        return Position(origin.line + self.line - 1, self.column + origin.column - 1 if self.line == 1 else self.column)


@dataclass(frozen=True)
class TableName:
    """``[catalog.][namespace.]name`` as written (unquoted, original letter case kept)."""

    name: str
    namespace: str | None = None
    catalog: str | None = None

    @classmethod
    def from_parts(cls, parts: Sequence[str]) -> TableName:
        """1 part: name; 2: namespace.name; 3+: catalog.namespace.name (nested namespaces joined by '.')."""
        if len(parts) == 1:
            return cls(name=parts[0])
        if len(parts) == 2:
            return cls(name=parts[1], namespace=parts[0])
        return cls(name=parts[-1], namespace=".".join(parts[1:-1]), catalog=parts[0])

    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in (self.catalog, self.namespace, self.name) if p is not None)

    def __str__(self) -> str:
        return ".".join(self.parts())


NAME_PART_REFUSED = {
    ".": "names travel as catalog.namespace.table text and nested namespaces are joined with '.', so a dot "
    "inside one part would name a different table",
    "/": "the catalog stores a table under a directory of that name",
    "%": "the catalog's REST paths are percent-encoded and pyiceberg sends names unencoded, so '%41' would "
    "arrive as 'A'",
    "?": "pyiceberg sends names unencoded in the catalog's REST paths, where '?' starts the query string",
    "#": "pyiceberg sends names unencoded in the catalog's REST paths, where '#' starts a fragment",
    "+": "Spark's REST client sends a space as '+' in the catalog's REST paths, and pyiceberg sends '+' as it is, "
    "so the catalog could not tell them apart",
}
"""Characters a table's catalog, namespace or name may not contain although Spark accepts them in backquotes,
each with the reason. Everything else (spaces, ``;``, quotes, backquotes, non-ASCII letters, reserved words) works."""


NAME_PART_FIX = "rename it without that character (e.g. use '_')"
"""How to fix a name part :func:`name_part_refusal` refuses for one of its characters."""


def name_part_refusal(part: str) -> tuple[str, str] | None:
    """Why ``part`` cannot be part of a materialized table's or a source's name, and how to fix it, apart (the
    formatter's ``problem`` and ``fix``); ``None``: it can."""
    if not part:
        return "an empty name part is not a table name", "write a name between the backquotes"
    for char in part:
        why = NAME_PART_REFUSED.get(char)
        if why is None and char != " " and not char.isprintable():
            why = "a control or unprintable character (a tab, a line break, …) cannot be shown or typed in a cell"
        if why is not None:
            return f"the name part {part!r} contains {char!r}, which mt_magic does not support: {why}", NAME_PART_FIX
    return None


RESERVED_COLUMN_FIX = (
    "rename it (e.g. … AS key_0); to read another materialized table, read its Iceberg view (<table>__mv) or list "
    "its columns instead of SELECT *"
)
"""How to fix a column named with the reserved prefix (:func:`column_name_problem`)."""


def column_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a column of a materialized table (``None``: it can): the hidden key columns'
    prefix (:data:`~mt_magic.vocabulary.HIDDEN_COLUMN_PREFIX`) is reserved, so no user column collides with one.
    Callers add where, and :data:`RESERVED_COLUMN_FIX`."""
    if is_hidden_column(name):
        return (
            f"the column name {name!r} starts with {HIDDEN_COLUMN_PREFIX!r}, which mt_magic reserves for the hidden "
            "key columns it keeps in storage tables"
        )
    return None


def closest_name(written: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` a typo of ``written`` most likely meant (case-insensitive; ``None`` when none is close),
    for the "did you mean" of an unknown table or column."""
    close = closest_names(written, names)
    return close[0] if close else None
