"""The one line of an error a refresh failure shows (``errors.first_line``)."""

from __future__ import annotations

from mt_magic.errors import first_line


class _NoMessage(Exception):
    """What PySpark raises for a JVM exception without a message: its text is the string "None"."""

    def __str__(self) -> str:
        return "None"


def test_the_line_that_names_the_problem() -> None:
    error = RuntimeError("An error occurred while calling o12.sql.\n: [DIVIDE_BY_ZERO] Division by zero.\nat …")
    assert first_line(error) == ": [DIVIDE_BY_ZERO] Division by zero."


def test_an_exception_without_a_message_is_named_by_its_type() -> None:
    assert first_line(_NoMessage()) == "_NoMessage"  # a refresh failed with "None" in the seed-7 soak
    assert first_line(ValueError("")) == "ValueError"
