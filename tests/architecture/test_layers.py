"""Rule: every module of mt_magic is in a layer of an import-linter contract (``pyproject.toml``), so
``lint-imports`` checks its imports: each top-level module in the root contract, and each direct child of a
package with a layers contract of its own (``mt_magic.runtime``, ``mt_magic.sql``, ``mt_magic.options``) in it."""

from __future__ import annotations

import tomllib
from mt_modules import PACKAGE, modules

CONTRACTS = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def layered() -> dict[str, set[str]]:
    """Container (``mt_magic`` for the root contract) → the module names its layers list."""
    found: dict[str, set[str]] = {}
    for contract in CONTRACTS:
        if contract["type"] != "layers":
            continue
        names = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
        for container in contract.get("containers", ["mt_magic"]):
            prefix = "" if container == "mt_magic" else container + "."
            found.setdefault(container, set()).update(prefix + name for name in names)
    return found


def unlayered() -> list[str]:
    missing = []
    for container, names in layered().items():
        children = {
            name for name in modules() if name.startswith(container + ".") and "." not in name[len(container) + 1 :]
        }
        missing += sorted(children - names)
    return missing


def test_every_module_is_in_a_layer() -> None:
    missing = unlayered()
    assert not missing, (
        f"modules in no import-linter layer: {missing}. Fix: add each to its layer in pyproject.toml's "
        "[tool.importlinter] contracts (the layer of what it imports and what imports it)"
    )


def test_the_containers_with_layers_are_the_ones_named() -> None:
    assert set(layered()) == {"mt_magic", "mt_magic.runtime", "mt_magic.sql", "mt_magic.options"}
