"""The table of settings in docs/configuration.md (it was the README's), generated from the settings themselves
(``MaterializedMagics``' traitlets: name, default and ``help``), so the docs list every setting ``%mt config`` shows
and say what the code says.

    .venv/bin/python scripts/readme_settings.py          # rewrite the table in docs/configuration.md
    .venv/bin/python scripts/readme_settings.py --check  # exit 1 if the page's table differs (tests/magics runs it)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
BEGIN = "<!-- settings: generated from MaterializedMagics' traitlets by scripts/readme_settings.py -->"
END = "<!-- /settings -->"


def settings_table() -> str:
    """One row per ``config=True`` trait of ``MaterializedMagics``, in name order."""
    from mt_magic.magics import MaterializedMagics

    rows = ["| setting | default | what it does |", "| --- | --- | --- |"]
    for name, trait in sorted(MaterializedMagics.class_own_traits(config=True).items()):
        default = trait.default_value
        shown = f"`{default!r}`" if isinstance(default, str) else f"`{default}`"
        text = " ".join(str(trait.help).split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {shown} | {text} |")
    return "\n".join(rows)


def page_with_table(page: str) -> str:
    """``page`` with the text between the markers replaced by :func:`settings_table`.

    Raises:
        ValueError: the markers are missing.
    """
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{PAGE.name} has no {BEGIN!r} … {END!r} block. Fix: put the two markers where the table goes")
    return f"{head}{BEGIN}\n{settings_table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only say whether the page's table is current")
    args = parser.parse_args(argv)
    current = PAGE.read_text()
    wanted = page_with_table(current)
    if args.check:
        if wanted != current:
            print("docs/configuration.md's settings table is stale. Fix: .venv/bin/python scripts/readme_settings.py")
            return 1
        return 0
    PAGE.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
