"""When merging a sum is exact: while the absolute values it adds up stay below its type's bound.

Spark adds a group's values one by one into a buffer of the result type (in each task, then the tasks' buffers
together). A buffer past the type makes a DECIMAL sum NULL for good (ANSI off) and fails the query (ANSI on, BIGINT
too); which partial sums exist depends on the order Spark reads the rows in. So once the *mass* of a sum — the
absolute values of every input row, added up — reaches the bound, Spark's answer depends on the files' layout, and
only Spark's own query over the rows gives it: the touched groups are recomputed (the strategy line says why).
Below the bound no partial sum, in any order, can pass the type: a merge gives Spark's exact total, and a NULL
sum means "no values".

At risk are the sums typed DECIMAL(38, s) (inputs of 28 or more digits; a narrower decimal's sum has 10 digits
more than its inputs and needs 10^10 rows to come near) and, under ANSI mode, BIGINT sums (ANSI off, BIGINT wraps:
adding is exact modulo 2^64 in any order, so a merge gives Spark's answer).

Each aggregate merge records the at-risk sums' mass in its refresh state (``mt.sum-mass``): an upper bound, the
mass over every input row at the start of the chain (one probe by Spark over the sources, the first merge after
any other refresh) plus each merged delta's. The in-process path merges only with a recorded mass, and leaves a
refresh that reaches the bound to Spark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from mt_magic.sql.query.result_rewrite import mass_probe

LONG_BOUND = float(2**63)
MARGIN = 0.999
"""Masses are added in doubles (relative error far below 1e-9 for a billion values); 0.1 % keeps the bound exact."""
ANSI = "spark.sql.ansi.enabled"
NOTE = "a sum's inputs reach its type's bound, where Spark's answer depends on the order it adds them in"
"""Appended to the strategy line when a merge recomputed its touched groups for that reason."""


def sum_bound(type_name: str, ansi: bool) -> float | None:
    """The magnitude a sum typed ``type_name`` (Spark's ``decimal(38,10)``/``bigint`` or Iceberg's ``decimal(38,
    10)``/``long``) may not reach for a merge to be exact; ``None``: no bound matters (see the module)."""
    normal = type_name.replace(" ", "").lower()
    found = re.fullmatch(r"decimal\(38,(\d+)\)", normal)
    if found:
        return float(10 ** (38 - int(found[1])))
    if normal in ("bigint", "long") and ansi:
        return LONG_BOUND
    return None


def ansi_mode(*settings: Mapping[str, str] | None) -> bool:
    """Whether ANSI mode is on: the first of ``settings`` that says so decides; unknown counts as on (the
    conservative side: more sums are checked)."""
    for found in settings:
        value = (found or {}).get(ANSI)
        if value is not None:
            return str(value).strip().lower() == "true"
    return True


def at_risk(sums: Sequence[tuple[str, str]], types: Mapping[str, str], ansi: bool) -> list[tuple[str, str]]:
    """The merged sums (output column, summed expression) whose merge depends on their mass.

    Args:
        sums: :attr:`~.shape.QueryPlan.sums`.
        types: the table's columns, lower-case name → type name.
    """
    return [(name, e) for name, e in sums if sum_bound(types.get(name.lower(), ""), ansi) is not None]


def past_bound(mass: Mapping[str, float], types: Mapping[str, str], ansi: bool) -> list[str]:
    """The sums whose mass reaches their bound (their merge would have to guess Spark's order)."""
    past = []
    for name, value in mass.items():
        limit = sum_bound(types.get(name.lower(), ""), ansi)
        if limit is not None and value >= limit * MARGIN:
            past.append(name)
    return past


def after_delta(
    query: str,
    sums: Sequence[tuple[str, str]],
    recorded: Mapping[str, float],
    types: Mapping[str, str],
    ansi: bool,
    probe_delta: Callable[[str], Sequence[float]],
    probe_all: Callable[[str], Sequence[float]],
) -> tuple[dict[str, float], list[str]]:
    """The at-risk sums' mass after an appended delta, and those it puts past their bound — on either engine.

    The recorded mass plus the delta's; with none recorded (the first merge after any other refresh), the probe
    over every input row (once per chain).

    Args:
        query: the definition query; ``sums``: :attr:`~.shape.QueryPlan.sums`; ``recorded``: the last state's mass;
            ``types``: the table's lower-case column → type name.
        probe_delta, probe_all: run a :func:`~mt_magic.sql.query.result_rewrite.mass_probe` over the delta or over
            all the pinned sources; one value per summed expression.
    """
    risky = at_risk(sums, types, ansi)
    if not risky:
        return {}, []
    probe = mass_probe(query, [e for _, e in risky])
    names = [name.lower() for name, _ in risky]
    if all(name in recorded for name in names):
        mass = {name: recorded[name] + value for name, value in zip(names, probe_delta(probe), strict=True)}
    else:
        mass = dict(zip(names, probe_all(probe), strict=True))
    return mass, past_bound(mass, types, ansi)
