"""Every module of ``mt_magic`` parsed once with :mod:`ast` (no import, so no Spark): the rules' shared reading."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mt_magic"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def relative(self) -> str:
        return self.path.relative_to(PACKAGE.parent).as_posix()


@cache
def modules() -> dict[str, Module]:
    """Dotted name → module, for every ``.py`` under ``mt_magic/`` (a package is its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def imported(module: Module) -> set[str]:
    """The ``mt_magic`` modules ``module`` imports anywhere: at the top, in a function, under TYPE_CHECKING."""
    known = modules()
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names if alias.name.startswith("mt_magic")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    # ``import a.b`` also runs ``a``; the edge that matters is to the module named (a name that is no module of
    # ours, e.g. a half-moved file, is left to the import itself to fail on).
    return {target for target in targets if target in known and target != module.name}


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (a docstring names things; it declares nothing)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found
