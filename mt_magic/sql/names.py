"""Where things are in a cell and what a table is called: the two values every part of the SQL front end shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """A 1-based line and column in the cell text."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"


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
