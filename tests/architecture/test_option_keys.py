"""Rule: only ``mt_magic/options/`` declares a ``WITH`` option key.

Elsewhere a key is reached through its declaration (``CONVERT.key``, ``DATE_FORMATTER.column(key)``), never bound
to a name of its own, spelt as a literal to read an option, or declared with ``Option(…)``. Spark settings
(``spark.*``) are Spark's names, not ours, and may be written anywhere.
"""

from __future__ import annotations

import ast

from mt_modules import Module, docstrings, modules

from mt_magic.options import DATE_FORMATTER, registered

OWN_KEYS = {option.key.lower() for option in registered() if not option.key.startswith("spark.")}
DECLARING = {"Option", "ColumnOption"}

ALLOWED = {
    # Issue 51: a second name for CONVERT.key, kept while runtime/refresh/incremental/explain.py (another owner's
    # module) imports it; that module switches to mt_magic.options.CONVERT.key and this line goes.
    ("mt_magic/sql/ddl/options.py", "CONVERT_OPTION"),
    # Issue 51: second names for an Option's key in modules of other owners (the refresh, the Spark baselines);
    # their readers switch to the Option itself (INCREMENTAL.key, option(...)) and these lines go.
    ("mt_magic/runtime/refresh/context.py", "INCREMENTAL_OPTION"),
    ("mt_magic/runtime/refresh/context.py", "MAX_CHANGE_OPTION"),
    ("mt_magic/runtime/refresh/context.py", "ENGINE_OPTION"),
    ("mt_magic/runtime/refresh/retention.py", "MAX_AGE_MS"),
    ("mt_magic/runtime/refresh/retention.py", "MIN_TO_KEEP"),
    ("mt_magic/runtime/spark/baselines.py", "BASELINE_OPTION"),
    # RefreshKind.INCREMENTAL, a kind of refresh spelt like the option, not the option.
    ("mt_magic/vocabulary.py", "INCREMENTAL"),
    # A refresh strategy's label in the cost history ("incremental" vs "full recompute"), not the WITH option.
    ("mt_magic/runtime/inspect/cost_history.py", "INCREMENTAL"),
}


def _is_key(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.lower()
        return text in OWN_KEYS or text in (DATE_FORMATTER.prefix, DATE_FORMATTER.suffix)
    return isinstance(node, ast.Attribute) and node.attr == "key" and isinstance(node.value, ast.Name)


def declarations(module: Module) -> list[tuple[str, int]]:
    """(what, line) for each place ``module`` declares an option key of its own."""
    found = []
    skip = docstrings(module.tree) | {
        id(v) for n in ast.walk(module.tree) if isinstance(n, ast.JoinedStr) for v in n.values
    }
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_key(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [(t.id, node.lineno) for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DECLARING:
            found.append((f"{node.func.id}(…)", node.lineno))
        elif isinstance(node, (ast.Compare, ast.Subscript)) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
        ):
            parts = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            parts += [node.slice] if isinstance(node, ast.Subscript) else []
            parts += node.args[:1] if isinstance(node, ast.Call) else []
            found += [
                (repr(p.value), node.lineno)
                for p in parts
                if isinstance(p, ast.Constant) and id(p) not in skip and _is_key(p)
            ]
    return found


def test_no_module_outside_options_declares_a_with_key() -> None:
    offenders = [
        f"{module.relative}:{line} {what}"
        for module in modules().values()
        if not module.name.startswith("mt_magic.options")
        for what, line in declarations(module)
        if (module.relative, what) not in ALLOWED
    ]
    assert not offenders, (
        f"WITH option keys declared outside mt_magic/options/: {offenders}. Fix: declare the option in "
        "mt_magic/options/declared.py and reach it by its Option (e.g. CONVERT.key, option('incremental'))"
    )


def test_the_check_finds_a_key_bound_to_a_name() -> None:
    tree = ast.parse("FORMATTER_PREFIX = 'partition.fields.'\nX = CONVERT.key\nif key == 'scheduler': pass\n")
    found = declarations(Module("example", modules()["mt_magic"].path, tree))
    assert [what for what, _ in found] == ["FORMATTER_PREFIX", "X", "'scheduler'"]
