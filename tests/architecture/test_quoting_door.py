"""Rule: a name is quoted for Spark only by ``mt_magic/runtime/spark/quoting.py`` (``identifier``, ``qualified``).

Quoting by hand is found three ways: escaping a backquote (``.replace("`", "``")``), gluing one on
(``"`" + name``), and SQL text handed to ``.sql(…)`` with a backquote around a ``{placeholder}``.
"""

from __future__ import annotations

import ast

from mt_modules import Module, modules

DOOR = "mt_magic/runtime/spark/quoting.py"
ALLOWED = {
    # Issue 51: these sit below the runtime layer, so they cannot import the door (DISTRIBUTED BY's columns in the
    # grammar's rendering; an expectation's CONSTRAINT name). The door moves down to the vocabulary layer, then
    # these call it.
    "mt_magic/sql/ddl/statements.py",
    "mt_magic/vocabulary.py",
}


def _backquote(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "`"


def _escaped(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "``"


def hand_quoting(module: Module) -> list[int]:
    """The lines where ``module`` quotes a name itself."""
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if (
                node.func.attr == "replace"
                and len(node.args) == 2
                and _backquote(node.args[0])
                and _escaped(node.args[1])
            ):
                found.append(node.lineno)
            elif node.func.attr == "sql" and node.args and isinstance(node.args[0], ast.JoinedStr):
                parts = node.args[0].values
                if any(
                    isinstance(a, ast.Constant) and str(a.value).endswith("`") and isinstance(b, ast.FormattedValue)
                    for a, b in zip(parts, parts[1:], strict=False)
                ):
                    found.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _backquote(node.left):
            found.append(node.lineno)
    return found


def test_names_are_quoted_only_through_the_quoting_module() -> None:
    offenders = [
        f"{module.relative}:{line}"
        for module in modules().values()
        if module.relative != DOOR and module.relative not in ALLOWED
        for line in hand_quoting(module)
    ]
    assert not offenders, (
        f"names quoted by hand: {offenders}. Fix: use mt_magic.runtime.spark.quoting.identifier() or qualified()"
    )


def test_the_check_finds_quoting_by_hand() -> None:
    tree = ast.parse('spark.sql(f"SHOW NAMESPACES IN `{name}`")\nq = "`" + c.replace("`", "``") + "`"\n')
    assert hand_quoting(Module("example", modules()["mt_magic"].path, tree)) == [1, 2, 2]
