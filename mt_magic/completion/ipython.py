"""Completion in IPython (so JupyterLab's Tab gets it): a matcher of IPython's v2 API on the shell's completer.

In a ``%%materialized`` cell it completes the statements, in a ``%%mtsql`` cell the query, and on a ``%mt`` line
the command and then the table name. Elsewhere it stays out of the way (IPython's own matchers answer). Names come
from a :class:`~mt_magic.completion.names.CatalogNames` cache, so a keypress never waits on the catalog.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mt_magic.completion.grammar import complete, fragment
from mt_magic.completion.names import CatalogNames, catalog_snapshot

if TYPE_CHECKING:
    from IPython.core.completer import CompletionContext

    from mt_magic.runtime.service import MaterializedTables

STATEMENT_CELLS = ("%%materialized",)
QUERY_CELLS = ("%%mtsql",)
NAMED_COMMANDS = ("status", "history", "lineage", "explain", "refresh", "suspend", "resume")
"""``%mt`` commands whose argument is a table name."""
_MT_LINE = re.compile(r"^\s*%mt\s+(?:(?P<command>\w+)\s+)?(?P<word>\S*)$")


class SqlCompleter:
    """Owns the names cache and the matcher it puts on ``shell.Completer`` (removed again by :meth:`close`).

    Args:
        shell: the IPython shell.
        service: the kernel's service (called in the cache's thread, never on a keypress).
        mt_commands: the ``%mt`` commands, in the magics' order.
    """

    def __init__(self, shell: Any, service: Callable[[], MaterializedTables], mt_commands: Sequence[str]) -> None:
        self.shell = shell
        self.names = CatalogNames(lambda: catalog_snapshot(service()))
        self.mt_commands = tuple(mt_commands)
        self._matcher = self._make_matcher()
        shell.Completer.custom_matchers.append(self._matcher)
        self.names.reload()  # the first Tab finds names already loaded

    def close(self) -> None:
        matchers = self.shell.Completer.custom_matchers
        if self._matcher in matchers:
            matchers.remove(self._matcher)

    def completions(self, full_text: str, line: int, column: int) -> tuple[str, list[str]] | None:
        """``(fragment, completions)`` for the cursor at ``line``/``column`` of a cell; ``None``: not ours."""
        lines = full_text.split("\n")
        first = lines[0].strip()
        if first.startswith(STATEMENT_CELLS + QUERY_CELLS) and line > 0:
            body = "\n".join(lines[1:])
            cursor = sum(len(text) + 1 for text in lines[1:line]) + column
            query = first.startswith(QUERY_CELLS)
            return fragment(body, cursor), complete(body, cursor, self.names.current(), query=query)
        match = _MT_LINE.match(lines[line][:column])
        if match is None:
            return None
        command, word = match.group("command"), match.group("word")
        if command is None:
            return word, [c for c in self.mt_commands if c.startswith(word.lower()) and c != word]
        if command.lower() not in NAMED_COMMANDS:
            return None
        return word, [n for n in self.names.current().materialized if n.lower().startswith(word.lower())]

    def _make_matcher(self) -> Callable[[CompletionContext], dict[str, Any]]:
        from IPython.core.completer import SimpleCompletion, context_matcher

        @context_matcher()
        def mt_magic_sql(context: CompletionContext) -> dict[str, Any]:
            """A ``SimpleMatcherResult`` (IPython's v2 matcher API)."""
            found = self.completions(context.full_text, context.cursor_line, context.cursor_position)
            if found is None:
                return {"completions": [], "suppress": False}
            word, texts = found
            return {
                "completions": [SimpleCompletion(text, type="mt_magic") for text in texts],
                "matched_fragment": word,
                "suppress": bool(texts),
                "ordered": True,
            }

        return mt_magic_sql
