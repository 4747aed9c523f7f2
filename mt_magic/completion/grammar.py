"""What may come next at the cursor of a ``%%materialized`` cell (or a query cell), from the tokens before it.

The statement's words so far (our grammar's lexer, :mod:`mt_magic.sql.ddl.lexing`) decide the context: the next
keywords in Flink's grammar order (:data:`~mt_magic.sql.ddl.statements.STATEMENT_STARTS` to begin a statement,
:data:`~mt_magic.sql.ddl.create.CLAUSE_ORDER` for CREATE's clauses, the parser's ALTER actions, ``(`` for CREATE's
column list), table names where a statement names one (part by part after ``mt.``), WITH option keys and their
values, and FRESHNESS units; inside a query :mod:`.queries` answers.
Pure: the catalog's names come in as a :class:`~mt_magic.completion.names.NameSnapshot`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mt_magic.completion.names import NameSnapshot
from mt_magic.completion.queries import NAME_KINDS, Cursor, new_columns, next_parts, qualifier_of, query_candidates
from mt_magic.sql.ddl.create import CLAUSE_ORDER
from mt_magic.sql.ddl.lexing import Tok, TokKind, tokenize
from mt_magic.sql.ddl.parser import ALTER_ACTIONS
from mt_magic.sql.ddl.statements import STATEMENT_STARTS, FreshnessUnit, StartFrom
from mt_magic.vocabulary import RefreshMode

UNITS = tuple(unit.value for unit in FreshnessUnit)
MODES = tuple(mode.value for mode in RefreshMode)
START_MODES = tuple(start.value for start in StartFrom) + tuple(f"RESUME_OR_{s.value}" for s in StartFrom)
ACTIONS = tuple(dict.fromkeys(re.split(r" = | \(", action)[0] for action in ALTER_ACTIONS))
"""The parser's ALTER actions as typed (``SET FRESHNESS``, not its hint ``SET FRESHNESS = INTERVAL …``)."""
_FRAGMENT = re.compile(r"[\w.`'\-]*$")


def fragment(text: str, cursor: int) -> str:
    """The part of the word at the cursor that a completion replaces: a WITH key whole (quoted, it may hold
    '.'), else the name part after the last '.' (``ord`` in ``s.ord``, ``tab`` in ``mt.ns.tab``)."""
    match = _FRAGMENT.search(text[:cursor])
    word = match.group(0) if match else ""
    return word if word.startswith("'") else word.rsplit(".", 1)[-1]


def complete(
    text: str,
    cursor: int,
    names: NameSnapshot | None = None,
    *,
    query: bool = False,
    actions: Sequence[str] = ACTIONS,
) -> list[str]:
    """What may replace :func:`fragment` at ``cursor``: keywords in grammar order, then names.

    Args:
        text: the cell's SQL (without its ``%%`` line).
        cursor: offset of the cursor in ``text``.
        names: the catalog's names (nothing but keywords without them).
        query: ``text`` is one query (a ``%%mtsql`` cell), not statements.
        actions: the ALTER actions offered after the table's name (``%mt explain`` takes only those it previews).
    """
    names = names or NameSnapshot()
    word = fragment(text, cursor)
    start = cursor - len(word)
    statement = _current_statement(tokenize(text), start)
    before = [t for t in statement if t.end <= start and t.significant]
    at = Cursor(text, start, cursor, statement)
    if query:
        qualifier, before = qualifier_of(before)
        candidates = query_candidates(before, at, names, qualifier)
    else:
        candidates = _statement(before, at, names, actions)
    return _matching(candidates, word)


def _current_statement(toks: list[Tok], offset: int) -> list[Tok]:
    """The tokens of the statement the cursor is in (statements end at a ';' outside parentheses)."""
    begin, depth = 0, 0
    for i, tok in enumerate(toks):
        if tok.start >= offset:
            break
        depth += tok.is_punct("(") - tok.is_punct(")")
        if tok.is_punct(";") and depth <= 0:
            begin, depth = i + 1, 0
    end = next((i for i in range(begin, len(toks)) if toks[i].is_punct(";") and toks[i].start >= offset), len(toks))
    return toks[begin:end]


def _statement(before: list[Tok], at: Cursor, names: NameSnapshot, actions: Sequence[str]) -> list[str]:
    qualifier, before = qualifier_of(before)
    words = [t.upper if t.kind is TokKind.WORD else t.text for t in before]
    if not words:
        return list(STATEMENT_STARTS)
    body = _query_start(words)
    if body is not None:
        return query_candidates(before[body:], at, names, qualifier, before[body - 1])
    if qualifier:  # an existing table's name typed part by part (ALTER, DROP, SHOW CREATE, DESCRIBE, OR ALTER)
        names_one = words[-1] in ("TABLE", "EXISTS") and (words[0] != "CREATE" or "OR" in words)
        return next_parts(names.materialized_paths, qualifier) if names_one else []
    last = words[-1]
    if words[0] == "CREATE":
        return _create(words, before, names, at)
    if words[0] == "ALTER":
        return _alter(words, before, names, actions)
    if words[0] == "DROP":
        return {"DROP": ["MATERIALIZED TABLE"], "MATERIALIZED": ["TABLE"]}.get(last) or (
            ["IF EXISTS", *names.materialized]
            if last == "TABLE"
            else list(names.materialized)
            if last == "EXISTS"
            else []
        )
    if words[0] == "SHOW":
        follow = {"SHOW": ["MATERIALIZED TABLES", "CREATE MATERIALIZED TABLE"], "CREATE": ["MATERIALIZED TABLE"]}
        if last == "TABLE":
            return list(names.materialized)
        return follow.get(last, ["FROM", "IN", "LIKE"] if last == "TABLES" else [])
    if words[0] in ("DESCRIBE", "DESC"):
        return ["MATERIALIZED TABLE"] if len(words) == 1 else list(names.materialized) if last == "TABLE" else []
    return []


def _query_start(words: list[str]) -> int | None:
    """Index of the first token of the query body (after CREATE's or ALTER's ``AS``), if the cursor is in it."""
    if words[0] not in ("CREATE", "ALTER") or "AS" not in words:
        return None
    return words.index("AS") + 1


def _create(words: list[str], before: list[Tok], names: NameSnapshot, at: Cursor) -> list[str]:
    last = words[-1]
    head = {"CREATE": ["MATERIALIZED TABLE", "OR ALTER MATERIALIZED TABLE"], "OR": ["ALTER MATERIALIZED TABLE"]}
    if last in head:
        return head[last]
    if last == "ALTER" and len(words) == 3:
        return ["MATERIALIZED TABLE"]
    if last == "MATERIALIZED":
        return ["TABLE"]
    if last == "TABLE":
        return list(names.materialized) if "OR" in words else []
    clause = _value_of_clause(words, before)
    if clause is not None:
        return clause
    named = words.index("TABLE") + 1 if "TABLE" in words else len(words)
    if words[named:].count("(") > words[named:].count(")"):  # the column list or PARTITIONED BY's
        expectation = _expectation(words[named:])
        if expectation is not None:
            return expectation or list(new_columns(at, names))
        if last not in ("(", ","):
            return []  # a type, a constraint: not offered
        typed = {w.lower() for w in words[named:]}
        return [c for c in new_columns(at, names) if c.lower() not in typed]
    if words[-2:] == ["PARTITIONED", "BY"]:
        return ["("]
    seen = [c for c in CLAUSE_ORDER if c.split()[0] in words]
    after = CLAUSE_ORDER.index(seen[-1]) + 1 if seen else 0
    just_named = not seen and all(t.kind in NAME_KINDS or t.is_punct(".") for t in before[named:])
    column_list = ["("] if just_named else []
    return [*column_list, *CLAUSE_ORDER[after:], "AS"]


def _expectation(words: list[str]) -> list[str] | None:
    """Inside ``CONSTRAINT n EXPECT (…) [ON VIOLATION …]``: what comes next (``[]``: the condition's columns), or
    ``None`` when the cursor is not in one."""
    last = words[-1]
    if len(words) >= 2 and words[-2] == "CONSTRAINT":
        return ["EXPECT (", "PRIMARY KEY"]
    follows = {"EXPECT": ["("], "ON": ["VIOLATION"], "VIOLATION": ["DROP ROW", "FAIL UPDATE"], "DROP": ["ROW"]}
    if last in follows and "EXPECT" in words:
        return follows[last] if last != "DROP" or words[-2] == "VIOLATION" else None
    if "EXPECT" not in words:
        return None
    since = words[len(words) - 1 - words[::-1].index("EXPECT") :]
    depth = since.count("(") - since.count(")")
    if depth > 0:
        return [] if last in ("(", "AND", "OR", "NOT") else None
    if last == ")" and depth == 0:
        return ["ON VIOLATION", ",", ")"]
    return None


def _alter(words: list[str], before: list[Tok], names: NameSnapshot, actions: Sequence[str]) -> list[str]:
    last = words[-1]
    if last == "ALTER":
        return ["MATERIALIZED TABLE"]
    if last == "MATERIALIZED":
        return ["TABLE"]
    if last == "TABLE":
        return list(names.materialized)
    if len(words) == 4 or (len(words) > 4 and words[-2] == "."):
        return list(actions)
    if last == "SET":
        return ["FRESHNESS", "REFRESH_MODE"]
    if last == "REFRESH":
        return ["PARTITION"]
    if last == "RESUME":
        return ["WITH"]
    if last == "RENAME":
        return ["TO"]
    return _value_of_clause(words, before) or []


def _value_of_clause(words: list[str], before: list[Tok]) -> list[str] | None:
    """Inside FRESHNESS, REFRESH_MODE, START_MODE or WITH: what that clause takes next (``None``: not inside one)."""
    last, previous = words[-1], words[-2] if len(words) > 1 else ""
    if last in ("FRESHNESS", "REFRESH_MODE", "START_MODE"):
        return ["="]
    if last == "=" and previous == "FRESHNESS":
        return ["INTERVAL"]
    if previous == "INTERVAL" and before and before[-1].kind is TokKind.STRING:
        return list(UNITS)
    if last == "=" and previous == "REFRESH_MODE":
        return list(MODES)
    if last == "=" and previous == "START_MODE":
        return list(START_MODES)
    inside = _open_with(words, before)
    if inside is not None:
        return inside
    return None


def _open_with(words: list[str], before: list[Tok]) -> list[str] | None:
    """In an unclosed ``WITH (``: option keys after ``(`` or ``,`` (RESUME's: Spark run settings), a key's values
    after ``=``."""
    from mt_magic.completion.options import option_keys, option_values

    if "WITH" not in words:
        return None
    at = len(words) - 1 - words[::-1].index("WITH")
    if at + 1 >= len(words) or words[at + 1] != "(" or ")" in words[at + 1 :]:
        return ["("] if at == len(words) - 1 else None
    last, resume = words[-1], at > 0 and words[at - 1] == "RESUME"
    if last in ("(", ","):
        return list(option_keys(resume))
    if last == "=" and not resume and before and len(before) >= 2 and before[-2].kind is TokKind.STRING:
        return list(option_values(before[-2].text.strip("'")))  # RESUME's Spark settings take free values
    return []


def _matching(candidates: Sequence[str], word: str) -> list[str]:
    """The candidates that start with what was typed (case-insensitive), each once, in the order given."""
    typed = word.lower()
    seen: list[str] = []
    for candidate in candidates:
        if candidate.lower().startswith(typed) and candidate != word and candidate not in seen:
            seen.append(candidate)
    return seen
