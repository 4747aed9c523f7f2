"""Rule: what ``%mt explain`` takes is listed once, in the statement registry (``runtime/statements/registry.py``,
beside each statement's handler); the API's check, the change preview, ``%mt``'s completion and its help derive
from it.

A second list is code (not a docstring) naming two or more of the ALTERs explain previews and none of those it
refuses: a tuple, list, set or dict of their classes, a ``|`` union of them, or a text (a string, an f-string, a
collection of strings) naming each of their actions but AS (an error message written out by hand).
"""

from __future__ import annotations

import ast
from typing import get_args

from mt_modules import Module, docstrings, modules

from mt_magic.runtime.statements.registry import CHANGES, PREVIEWED, Change

HOME = "mt_magic.runtime.statements.registry"
PREVIEWED_CLASSES = frozenset(kind.__name__ for kind in PREVIEWED)
REFUSED_CLASSES = frozenset({"AlterSuspend", "AlterRefresh", "AlterRename", "AlterScheduler", "AlterConstraint"})
PREVIEWED_WORDS = frozenset(word for word in PREVIEWED.values() if word != "AS")  # "AS" is in every query
REFUSED_WORDS = frozenset({"SUSPEND", "RENAME", "scheduler", "CONSTRAINT"})


def _names(node: ast.AST) -> set[str]:
    """The class names a collection or a ``|`` union holds."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _names(node.left) | _names(node.right)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_names(element) for element in node.elts))
    if isinstance(node, ast.Dict):
        return set().union(*(_names(key) for key in node.keys if key is not None))
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def _text(node: ast.AST) -> str:
    """The literal text of a string, an f-string, or a collection of strings."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.JoinedStr, ast.Tuple, ast.List, ast.Set)):
        parts = node.values if isinstance(node, ast.JoinedStr) else node.elts
        return " ".join(_text(part) for part in parts)
    if isinstance(node, ast.Dict):
        return " ".join(_text(key) for key in node.keys if key is not None)
    return ""


def second_lists(module: Module) -> list[str]:
    """Where ``module`` lists what explain takes (line: what it names)."""
    skip = docstrings(module.tree)
    found: dict[int, str] = {}  # by line: the outermost node (ast.walk goes outside in), not each part of a union
    for node in ast.walk(module.tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp)):
            names = _names(node)
            if len(names & PREVIEWED_CLASSES) >= 2 and not names & REFUSED_CLASSES:
                found.setdefault(node.lineno, f"{module.relative}:{node.lineno}: {sorted(names & PREVIEWED_CLASSES)}")
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.Tuple, ast.List, ast.Set, ast.Dict)):
            text = _text(node)
            words = {word for word in PREVIEWED_WORDS if word in text}
            if words == PREVIEWED_WORDS and not any(word in text for word in REFUSED_WORDS):
                found.setdefault(node.lineno, f"{module.relative}:{node.lineno}: {sorted(words)}")
    return list(found.values())


def _may_list(module: Module) -> bool:
    """Whether ``module``'s text names enough of them to hold a list (the rest is not walked: this rule stays fast)."""
    text = module.path.read_text(encoding="utf-8")
    return sum(name in text for name in PREVIEWED_CLASSES) >= 2 or all(word in text for word in PREVIEWED_WORDS)


def test_what_explain_takes_is_listed_once() -> None:
    candidates = [module for name, module in modules().items() if name != HOME and _may_list(module)]
    found = [line for module in candidates for line in second_lists(module)]
    assert not found, (
        f"a second list of what %mt explain takes: {found}. Fix: derive it from "
        "mt_magic.runtime.statements.registry (PREVIEWED, CHANGES, EXPLAINED, explains)"
    )


def test_the_type_names_the_listed_statements() -> None:
    assert get_args(Change) == CHANGES


def test_the_rule_sees_a_second_list() -> None:
    """The check itself, on code written here: a tuple of classes, a union and a hand-written message."""
    source = (
        "TAKEN = (AlterQuery, AlterResume)\n"
        "Change = s.AlterFreshness | s.AlterRefreshMode\n"
        "def refuse(found):\n"
        "    raise E(f'explain takes SET FRESHNESS, SET REFRESH_MODE, RESUME, got {found}')\n"
        "EVERY_ALTER = (AlterQuery, AlterResume, AlterSuspend)\n"
    )
    written = Module("mt_magic.written", modules()[HOME].path, ast.parse(source))
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in second_lists(written)] == ["1", "2", "4"]
