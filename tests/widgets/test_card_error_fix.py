"""A card's button that fails shows what is wrong in red and the error's Fix on its own line (issue 38: the card
reads the one formatter's facts, not a glued text)."""

from __future__ import annotations

from widget_helpers import NAME

from mt_magic.errors import DefinitionError
from mt_magic.widgets.live import LiveViews
from mt_magic.widgets.render import error_html


def test_a_failed_backfill_shows_the_problem_then_the_fix_on_its_own_line(live: LiveViews) -> None:
    card = live.card(NAME)
    card.partition.value = "ds = "
    card.backfill_button.click()
    assert card.message.value == (
        '<span style="color:#dc2626">✖ PARTITION (ds =): expected a literal value for partition column ds, found '
        '&#x27;)&#x27;.</span><br><span style="color:#374151">Fix: write it as ds = &#x27;20250101&#x27;.</span>'
    )


def test_an_error_without_a_fix_is_one_red_line() -> None:
    assert error_html(DefinitionError("t: boom")) == '<span style="color:#dc2626">✖ t: boom</span>'
    assert error_html(RuntimeError()) == '<span style="color:#dc2626">✖ RuntimeError</span>'
