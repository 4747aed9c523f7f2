"""Rule: no module imports another module's ``_private`` name, nor reaches it through an imported module
(``rows._x``): what another module may use gets a public name in the module that owns it.
"""

from __future__ import annotations

import ast

from mt_modules import PACKAGE, Module, modules


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _base(module: Module, node: ast.ImportFrom) -> str:
    """The dotted module a ``from … import`` names, a relative one resolved against ``module``'s package."""
    if not node.level:
        return node.module or ""
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*parts, node.module] if node.module else parts)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)) is not None:
        return f"{base}.{node.attr}"
    return None


def private_uses(module: Module) -> list[str]:
    """Where ``module`` uses another mt_magic module's private name (path:line: module.name)."""
    known = modules()
    found: list[str] = []
    bound: dict[str, str] = {}  # a local name → the mt_magic module it is bound to
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and (base := _base(module, node)).startswith("mt_magic"):
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif _private(alias.name) and base != module.name:
                    found.append(f"{module.relative}:{node.lineno}: {base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mt_magic") and any(_private(part) for part in alias.name.split(".")):
                    found.append(f"{module.relative}:{node.lineno}: {alias.name}")
                elif alias.name in known:
                    bound[alias.asname or alias.name] = alias.name
    for node in ast.walk(module.tree) if bound else ():
        if isinstance(node, ast.Attribute) and _private(node.attr) and (reached := _dotted(node.value)):
            owner = bound.get(reached)
            if owner is not None and owner != module.name:
                found.append(f"{module.relative}:{node.lineno}: {owner}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = [line for module in modules().values() for line in private_uses(module)]
    assert not found, (
        f"private names used from another module: {found}. Fix: give the name a public one in the module that owns "
        "it (or use the public door it already has)"
    )


def test_the_rule_sees_each_kind_of_private_use() -> None:
    """The check itself, on a module written here: a from-import, a relative one, a private module, an attribute
    through a from-import and through a dotted import."""
    source = (
        "from mt_magic.catalog.rows import _hidden, commit_files\n"
        "from .tables import _kept\n"
        "import mt_magic._secret\n"
        "from mt_magic.catalog import rows\n"
        "rows._other(rows.commit_files)\n"
        "from mt_magic.catalog.written import _mine\n"
        "import mt_magic.catalog.tables\n"
        "mt_magic.catalog.tables._loaded()\n"
    )
    written = Module("mt_magic.catalog.written", PACKAGE / "catalog" / "written.py", ast.parse(source))
    assert [line.split(": ", 1)[1] for line in private_uses(written)] == [
        "mt_magic.catalog.rows._hidden",
        "mt_magic.catalog.tables._kept",
        "mt_magic._secret",
        "mt_magic.catalog.rows._other",
        "mt_magic.catalog.tables._loaded",
    ]
