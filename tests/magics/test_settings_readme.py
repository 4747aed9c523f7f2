"""Every setting ``%mt config`` shows is in docs/configuration.md, with the default and help the code declares:
the page's table is generated from ``MaterializedMagics``' traitlets (``scripts/readme_settings.py``), and current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mt_magic.magics import MaterializedMagics

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "readme_settings.py"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("readme_settings", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_list_every_setting_as_the_code_declares_it() -> None:
    generator = _generator()
    page = generator.PAGE.read_text()
    assert generator.page_with_table(page) == page, "Fix: .venv/bin/python scripts/readme_settings.py"
    table = page.split(generator.BEGIN)[1].split(generator.END)[0]
    for name in MaterializedMagics.class_own_traits(config=True):
        assert f"| `{name}` |" in table
