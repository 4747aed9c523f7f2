"""Completion in IPython (so JupyterLab's Tab gets it): mt_magic answers alone inside its cells.

In a ``%%materialized`` cell it completes the statements, in a ``%%mtsql`` cell the query, and on a ``%mt`` line the
command, its table name (or ``explain``'s statement) and its flags (:mod:`.mt_line`). Inside those SQL cells it is
the only answer, also when it has nothing to offer: IPython's matchers (Python names, magics, files) never answer
there. IPython's matcher API cannot say "this is mine, and there is nothing" (a matcher suppresses the others only
when it has completions), so :class:`SqlCompleter` wraps the shell completer's :meth:`completions` — what
ipykernel's ``complete_request`` (JupyterLab's Tab) and the terminal call — and hands every other cell to IPython.
Names come from a :class:`~mt_magic.completion.names.CatalogNames` cache, loaded in the background from the moment
``%load_ext`` opens the catalog (while Spark starts) and again after each cell runs (IPython's ``post_run_cell``
event), so a keypress never waits on the catalog, the first included, and a table a cell made (a statement,
``spark.sql``, pyiceberg) is offered at the next Tab once that load is done. A Tab that finds nothing, or reads a
table whose columns the cache lacks (one another process made), asks for one more load: the next Tab has it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from mt_magic.completion.grammar import complete, fragment
from mt_magic.completion.mt_line import complete_mt_line, flags_of
from mt_magic.completion.names import AskedNames, CatalogNames, catalog_snapshot

if TYPE_CHECKING:
    from IPython.core.completer import Completion

    from mt_magic.catalog.tables import MaterializedCatalog

STATEMENT_CELLS = ("%%materialized",)
QUERY_CELLS = ("%%mtsql",)


class SqlCompleter:
    """Owns the names cache and the wrapper it puts on ``shell.Completer.completions`` (removed by :meth:`close`).

    Args:
        shell: the IPython shell.
        catalog: the catalog to read and the namespace names are typed without (called in the cache's thread,
            never on a keypress).
        mt_commands: the ``%mt`` commands, in the magics' order.
    """

    def __init__(
        self, shell: Any, catalog: Callable[[], tuple[MaterializedCatalog, str]], mt_commands: Sequence[str]
    ) -> None:
        self.shell = shell
        self.names = CatalogNames(lambda: catalog_snapshot(*catalog()))
        line_magics = getattr(getattr(shell, "magics_manager", None), "magics", {}).get("line", {})
        mt = line_magics.get("mt")  # its flags, read from the magic's own parser
        self.mt_commands = flags_of(getattr(mt, "parser", None), mt_commands)
        self._ipython_completions = shell.Completer.completions
        shell.Completer.completions = self._completions
        shell.events.register("post_run_cell", self._after_cell)
        self.names.reload()  # warm: the first Tab finds the names loaded (and never waits for them)

    def close(self) -> None:
        if vars(self.shell.Completer).get("completions") == self._completions:
            del self.shell.Completer.completions
        if self._after_cell in self.shell.events.callbacks["post_run_cell"]:
            self.shell.events.unregister("post_run_cell", self._after_cell)

    def _after_cell(self, result: object) -> None:
        """Any cell may have made or dropped a table (a statement, ``spark.sql``): reload in the background."""
        self.names.invalidate()

    def completions(self, full_text: str, line: int, column: int) -> tuple[str, list[str]] | None:
        """``(fragment, completions)`` for the cursor at ``line``/``column`` of a cell; ``None``: not ours."""
        lines = full_text.split("\n")
        first = lines[0].strip()
        if first.startswith(STATEMENT_CELLS + QUERY_CELLS):
            if line == 0:  # on the magic's own line: its options are IPython's business, Python names are not
                return "", []
            body = "\n".join(lines[1:])
            cursor = sum(len(text) + 1 for text in lines[1:line]) + column
            asked = AskedNames.of(self.names.current())
            found = complete(body, cursor, asked, query=first.startswith(QUERY_CELLS))
            if not found or asked.unknown:
                self.names.missing(f"{first}\n{body[:cursor]}")
            return fragment(body, cursor), found
        return complete_mt_line(lines[line][:column], self.mt_commands, self.names.current())

    def _completions(self, text: str, offset: int) -> Iterator[Completion]:
        """``IPCompleter.completions``: mt_magic's answer alone where it has one, else IPython's."""
        from IPython.core.completer import Completion, position_to_cursor

        line, column = position_to_cursor(text, offset)
        found = self.completions(text, line, column)
        if found is None:
            yield from self._ipython_completions(text, offset)
            return
        word, texts = found
        for completion in texts:
            yield Completion(offset - len(word), offset, completion, type="mt_magic", _origin="mt_magic")
