"""Completion of a ``%mt`` line, part by part: the command, then its table name, then its flags; after
``%mt explain`` a table name or a whole statement or query (a CREATE, an ALTER of the kinds explain previews),
completed as in a ``%%materialized`` or ``%%mtsql`` cell. A ``%mt`` line never gets Python names: where nothing
fits, the answer is empty.

The commands and flags are the magic's own: :func:`flags_of` reads them from its argument parser, where each flag's
help starts with the commands it belongs to (``"refresh: backfill one partition …"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mt_magic.completion.grammar import ACTIONS, complete, fragment
from mt_magic.completion.names import NameSnapshot
from mt_magic.runtime.statements.registry import EXPLAINED, PREVIEWED

NAMED_COMMANDS = frozenset({"status", "history", "lineage", "explain", "refresh", "suspend", "resume"})
"""``%mt`` commands whose argument is a table name."""
EXPLAINED_STATEMENTS = (*dict.fromkeys(start for kind in EXPLAINED for start in kind.starts), "SELECT")
"""What ``%mt explain`` takes besides a table name: the starts of the statements it explains, or a query."""
EXPLAINED_ACTIONS = tuple(a for a in ACTIONS if a in PREVIEWED.values())
"""The ALTER actions ``%mt explain`` previews (``registry.PREVIEWED``), in the grammar's order."""
QUERY_WORDS = frozenset({"SELECT", "WITH"})
STATEMENT_WORDS = frozenset(start.split()[0] for start in EXPLAINED_STATEMENTS)
_LINE = re.compile(r"^\s*%mt\s(?P<rest>.*)$", re.DOTALL)


@dataclass(frozen=True)
class MtCommands:
    """The ``%mt`` commands in the magic's order and each one's flags."""

    commands: tuple[str, ...]
    flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def flags_of(parser: Any, commands: Sequence[str]) -> MtCommands:
    """The commands and, per command, the flags of the magic's ``argparse`` parser whose help names it first
    (``"refresh: …"``; several as ``"refresh, lineage: …"``)."""
    flags: dict[str, list[str]] = {command: [] for command in commands}
    for action in getattr(parser, "_actions", ()):
        long = [option for option in action.option_strings if option.startswith("--") and option != "--help"]
        if not long or not action.help or ":" not in action.help:
            continue
        for command in action.help.split(":", 1)[0].split(","):
            if command.strip() in flags:
                flags[command.strip()].append(long[0])
    return MtCommands(tuple(commands), {command: tuple(found) for command, found in flags.items()})


def complete_mt_line(before_cursor: str, spec: MtCommands, names: NameSnapshot) -> tuple[str, list[str]] | None:
    """``(word at the cursor, completions)`` on a ``%mt`` line; ``None`` when the line is not one (``%mt``
    itself, still being typed, is IPython's: it completes magic names)."""
    match = _LINE.match(before_cursor)
    if match is None:
        return None
    rest = match.group("rest")
    words = rest.split()
    word = "" if not words or rest[-1].isspace() else words.pop()
    if not words:  # the command
        return word, [c for c in spec.commands if c.startswith(word.lower()) and c != word]
    command, given = words[0].lower(), words[1:]
    if command not in spec.commands:
        return word, []
    if command == "explain" and given and given[0].upper() in STATEMENT_WORDS | QUERY_WORDS:
        return _explain(rest, names)
    if word.startswith("-") or given or command not in NAMED_COMMANDS:  # after the table: the command's flags
        if given and given[-1] == "--partition":  # its value is the user's: a quoted predicate
            return word, []
        return word, [f for f in spec.flags.get(command, ()) if f.startswith(word) and f not in given]
    tables = [n for n in names.materialized if n.lower().startswith(word.lower())]
    if command == "explain":
        tables += [s for s in EXPLAINED_STATEMENTS if s.startswith(word.upper())]
    return word, tables


def _explain(rest: str, names: NameSnapshot) -> tuple[str, list[str]]:
    """The statement or query after ``explain``, completed as in a cell (an ALTER with the actions explain takes)."""
    text = rest.split(None, 1)[1].lstrip()  # after "explain": the statement or query typed so far
    query = text.split(None, 1)[0].upper() in QUERY_WORDS
    return fragment(text, len(text)), complete(text, len(text), names, query=query, actions=EXPLAINED_ACTIONS)
