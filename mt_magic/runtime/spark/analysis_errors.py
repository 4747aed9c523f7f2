"""Spark's analysis errors read for a person: the problem without the plan, where in the text it is, and a Fix.

Spark says where a problem is as ``line L pos P`` of the text it analysed (PySpark 4 also as a query context with the
fragment), appends the logical plan, and puts its advice in the middle of the message. mt_magic analyses a rewritten
query (every source qualified), so the position is in text the user never wrote: :func:`read_problem` returns the
offending token and which occurrence of it Spark meant, and :func:`offset_in` finds the same occurrence in the
query as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.errors import RefreshError, first_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mt_magic.sql.names import Position

_POSITION = re.compile(r";?\s*line (\d+) pos (\d+);?")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?")
_TOKEN = re.compile(r"`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*")
_CLASS = re.compile(r"^\[([A-Z_.]+)\]\s*")
_SUGGESTIONS = re.compile(r"\s*Did you mean one of the following\? \[(.*?)\]\.?")
_NAME = re.compile(r"with name ((?:`(?:[^`]|``)+`\.?)+)")
_EXPRESSION = re.compile(r'non-aggregating expression "(.+?)"')
_ROUTINE = re.compile(r"Cannot resolve (?:function|routine) (`(?:[^`]|``)+`)")
ANALYSIS_KINDS = frozenset({"UNRESOLVED_COLUMN", "UNRESOLVED_ROUTINE", "MISSING_AGGREGATION", "DATATYPE_MISMATCH"})
"""Spark's error classes of a query that does not fit its sources (read by :func:`_advice`, which has their Fix)."""
TRY_ALONE = "correct the query there (run it alone with %%mtsql to try a change on Spark)"
"""The Fix of a refusal whose kind has no advice of its own (a query cell says its own)."""


@dataclass(frozen=True)
class SparkProblem:
    """What Spark refused: ``problem`` (its words, without position, SQLSTATE or plan), ``token`` and
    ``occurrence`` (the identifier Spark points at and how many times it appears before that point in the analysed
    text), ``fix`` (Spark's advice or a suggestion; ``None`` when there is none)."""

    error_class: str | None
    problem: str
    token: str | None
    occurrence: int
    fix: str | None


def read_problem(
    exc: BaseException,
    analysed: str,
    names: Callable[[str], Iterable[str]] | None = None,
    otherwise: str = TRY_ALONE,
) -> SparkProblem:
    """Read ``exc`` (raised analysing ``analysed``). ``names(kind)``: candidate names for a "did you mean" of an
    unresolved ``"function"`` (called only then; may be slow). ``otherwise``: the Fix of a kind without advice."""
    message = str(exc).strip()
    head = message.split(";\n", 1)[0]  # the plan follows the first ';\n'
    offset = _offset(exc, head, analysed)
    head = _SQLSTATE.sub("", _POSITION.sub("", head)).strip()
    found = _CLASS.match(head)
    error_class = found.group(1) if found else None
    words = head[found.end() :] if found else first_line(exc)
    problem, fix = _advice(error_class, words, names, otherwise)
    token, occurrence = _token_at(analysed, offset)
    expression = _EXPRESSION.search(words)
    if token is None and expression is not None:  # e.g. MISSING_AGGREGATION names the expression, not a position
        first = _TOKEN.search(expression.group(1))
        token = first.group(0) if first else None
    return SparkProblem(error_class, problem, token, occurrence, fix)


def offset_in(written: str, token: str | None, occurrence: int) -> int | None:
    """Where the ``occurrence``-th (0-based) ``token`` is in ``written``; ``None`` when it is not there that often."""
    if token is None:
        return None
    seen = 0
    for match in _TOKEN.finditer(written):
        if _same(match.group(0), token):
            if seen == occurrence:
                return match.start()
            seen += 1
    return None


@dataclass(frozen=True)
class PlacedRefusal:
    """Spark's refusal of a query as the user wrote it: ``problem`` (Spark's words, the offending token spelt as
    written), ``position`` (the cell's line and column of that token; ``None`` when it cannot be found) and ``fix``."""

    problem: str
    position: Position | None
    fix: str | None


def placed_refusal(
    exc: BaseException,
    analysed: str,
    written: str | None,
    origin: Position | None,
    spark: SparkSession | None = None,
    otherwise: str = TRY_ALONE,
) -> PlacedRefusal:
    """The one mapping of Spark's refusal of ``analysed`` (a rewrite: sources qualified, snapshots pinned) to the
    text the user typed: the token Spark points at is found again in ``written`` (which starts at ``origin`` of the
    cell) and placed at its line and column; ``spark``: the session whose functions an unknown one is judged
    against for the "did you mean" (asked only then)."""
    from mt_magic.sql.ddl.lexing import Source

    problem = read_problem(exc, analysed, None if spark is None else lambda kind: session_functions(spark), otherwise)
    at, words = None, problem.problem
    offset = offset_in(written, problem.token, problem.occurrence) if written is not None else None
    if written is not None and offset is not None and problem.token is not None:
        at = Source(written).position(offset).inside(origin)
        as_written = written[offset : offset + len(problem.token)]  # the rewrite may have changed its letter case
        words = words.replace(f"`{problem.token.strip('`')}`", f"`{as_written.strip('`')}`")
    return PlacedRefusal(words, at, problem.fix)


def session_functions(spark: SparkSession) -> list[str]:
    """Every function the session knows (for the "did you mean" of an unknown one; only on that error path)."""
    try:
        return [row[0] for row in spark.sql("SHOW FUNCTIONS").collect()]
    except Exception:  # a suggestion is a courtesy; the error is said without it
        return []


_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")
"""Spark's error class in its text (``[USER_RAISED_EXCEPTION]``), wherever a Java exception's wrapping put it."""


def refresh_failure(table: str, exc: BaseException) -> RefreshError:
    """A refresh Spark refused, for the card, the history and ``--wait``. A query that no longer fits its sources
    (a source's column or type changed since the table was defined) is Spark's problem without its plan or its
    position — which would be in the query the refresh generated, not in anything the user wrote — and a Fix;
    anything else is Spark's first line."""
    from mt_magic.catalog.errors import not_granted

    denied = not_granted(exc, f"refresh of {table} failed")  # the catalog refused its commit: a grant is missing
    if denied is not None:
        return RefreshError(denied.problem, fix=denied.fix)
    problem = read_problem(exc, "")
    if (problem.error_class or "").split(".")[0] not in ANALYSIS_KINDS:
        error = RefreshError(f"refresh of {table} failed: {first_line(exc)}")
        named = problem.error_class or next(iter(_ERROR_CLASS.findall(str(exc))), None)  # wrapped by Py4J
        what = f"[{named}]" if named else type(exc).__name__
        error.shared = f"refresh of {table} failed: {what} (Spark's message can quote values: it stays in this process)"
        return error
    return RefreshError(
        f"refresh of {table} failed: its query no longer fits its sources: {problem.problem}",
        fix=f"{problem.fix}; then ALTER MATERIALIZED TABLE {table} AS the corrected query",
    )


def _offset(exc: BaseException, head: str, analysed: str) -> int | None:
    contexts = getattr(exc, "getQueryContext", None)
    if contexts is not None:
        try:
            for context in contexts():
                start = context.startIndex()
                if 0 <= start < len(analysed):
                    return int(start)
        except Exception:  # a context of another kind (a DataFrame call site) has no index
            pass
    found = _POSITION.search(head)
    if found is None:
        return None
    line, pos = int(found.group(1)), int(found.group(2))
    lines = analysed.split("\n")
    if not 1 <= line <= len(lines):
        return None
    return sum(len(text) + 1 for text in lines[: line - 1]) + pos


def _token_at(text: str, offset: int | None) -> tuple[str | None, int]:
    if offset is None:
        return None, 0
    token = next((m for m in _TOKEN.finditer(text) if m.start() >= offset), None)
    if token is None:
        return None, 0
    before = sum(1 for m in _TOKEN.finditer(text[: token.start()]) if _same(m.group(0), token.group(0)))
    return token.group(0), before


def _same(a: str, b: str) -> bool:
    return a.strip("`").lower() == b.strip("`").lower()


def _advice(
    error_class: str | None, words: str, names: Callable[[str], Iterable[str]] | None, otherwise: str = TRY_ALONE
) -> tuple[str, str | None]:
    """(the problem, the Fix) from Spark's words: its suggestions and advice become the Fix."""
    kind = (error_class or "").split(".")[0]
    if kind == "UNRESOLVED_COLUMN":
        suggestions = _SUGGESTIONS.search(words)
        problem = _SUGGESTIONS.sub("", words).rstrip(". ")
        written = _NAME.search(words)
        if suggestions:
            columns = [c.strip() for c in suggestions.group(1).split(",") if c.strip()]
            near = _closest(written.group(1) if written else "", columns)
            if near is not None:
                return problem, f"did you mean {near}? (Spark sees {', '.join(columns)})"
            return problem, f"use one of the columns Spark sees: {', '.join(columns)}"
        return problem, "check the column's name and table (DESCRIBE the source lists its columns)"
    if kind == "UNRESOLVED_ROUTINE":
        routine = _ROUTINE.search(words)
        problem = re.sub(r" on search path \[.*?\]", "", words).rstrip(". ")
        if routine and names is not None:
            near = _closest(routine.group(1), names("function"))
            if near is not None:
                return problem, f"did you mean {near}?"
        return problem, "check the function's name; SHOW FUNCTIONS lists them"
    if kind == "MISSING_AGGREGATION" and "\n" in words:
        problem, advice = words.split("\n", 1)
        advice = advice.strip().rstrip(".")
        return problem.rstrip(". "), advice[:1].lower() + advice[1:]
    if kind == "DATATYPE_MISMATCH":
        return words.rstrip(". "), "make the types agree, e.g. CAST one side to the other's type"
    return words.rstrip(". "), otherwise


def _closest(written: str, names: Iterable[str]) -> str | None:
    from mt_magic.sql.names import closest_name

    plain = {name.strip("`").split(".")[-1].strip("`"): name for name in names}
    near = closest_name(written.strip("`").split(".")[-1].strip("`"), plain)
    return plain[near] if near is not None else None
