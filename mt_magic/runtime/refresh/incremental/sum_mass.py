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
from collections.abc import Mapping, Sequence

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


def names(risky: Sequence[tuple[str, str]]) -> list[str]:
    """How the refresh state names the at-risk sums: their output columns, lower case."""
    return [name.lower() for name, _ in risky]


def added(recorded: Mapping[str, float], delta: Mapping[str, float]) -> dict[str, float]:
    """The chain's mass after a delta: the recorded mass plus the delta's, for each sum in ``delta``."""
    return {name: recorded[name] + value for name, value in delta.items()}
