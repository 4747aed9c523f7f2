"""What a ``%%materialized`` cell shows: one line per statement, then a live card per table it touched."""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets

from mt_magic.runtime.results import StatementResult
from mt_magic.widgets.base import FallbackBundle, LiveView, ViewHost, close_tree
from mt_magic.widgets.card import TableCard
from mt_magic.widgets.render import results_html, results_text


class StatementOutput(FallbackBundle, widgets.VBox):
    """The statements' messages and their tables' cards; a card replaced elsewhere drops out of it."""

    def __init__(
        self, results: Sequence[StatementResult], cards: Sequence[TableCard], host: ViewHost | None = None
    ) -> None:
        self.host = host
        self.results = tuple(results)
        self.messages = widgets.HTML(results_html(self.results))
        self.cards = list(cards)
        super().__init__(children=[self.messages, *self.cards])
        self.add_class("mt-statement-output")
        for card in self.cards:
            card.when_closed(self._drop)
            card.when_changed(lambda _: self.republish())

    def view_host(self) -> ViewHost | None:
        return self.host

    def settle(self) -> None:
        for card in list(self.cards):
            card.settle()

    def lines(self) -> list[str]:
        return [r.message for r in self.results]

    def _drop(self, card: LiveView) -> None:
        self.cards = [c for c in self.cards if c is not card]
        self.children = tuple(c for c in self.children if c is not card)  # type: ignore[has-type]

    def close(self) -> None:
        """Close the messages and the cards (which unsubscribe)."""
        for card in list(self.cards):
            card.close()
        close_tree(self.messages)
        layout = self.layout
        super().close()
        layout.close()

    def fallback_html(self) -> str:
        return results_html(self.results) + "".join(card.fallback_html() for card in self.cards)

    def fallback_text(self) -> str:
        return "\n".join([results_text(self.results), *(card.fallback_text() for card in self.cards)])
