"""FRESHNESS rules: defaults, refresh-mode inference and FULL-mode cron schedules, as Flink defines them.

Flink's rules (materialized-table statements reference):

* omitted FRESHNESS → ``materialized-table.default-freshness.continuous`` (3 minutes) or ``.full`` (1 hour),
  by the declared mode; with no mode either, the continuous default, and the mode inferred from it;
* no REFRESH_MODE → CONTINUOUS when freshness < ``materialized-table.refresh-mode.freshness-threshold``
  (30 minutes), else FULL;
* FULL mode needs a cron schedule, so only divisors of the next unit are allowed: seconds and minutes
  1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30; hours 1, 2, 3, 4, 6, 8, 12; days 1.

Cron strings (checked with ``croniter.is_valid``): ``n MINUTE`` → ``*/n * * * *``, ``n HOUR`` → ``0 */n * * *``,
``1 DAY`` → ``0 0 * * *``, and ``n SECOND`` → ``* * * * * */n``: croniter's six-field form, whose sixth
field is the second (Flink's Quartz form ``*/n * * * * ? *`` puts it first; croniter does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from croniter import croniter

from mt_magic.sql.ddl.statements import Freshness, FreshnessUnit
from mt_magic.sql.errors import FreshnessError
from mt_magic.vocabulary import RefreshMode

FULL_MODE_DIVISORS: dict[FreshnessUnit, tuple[int, ...]] = {
    FreshnessUnit.SECOND: (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30),
    FreshnessUnit.MINUTE: (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30),
    FreshnessUnit.HOUR: (1, 2, 3, 4, 6, 8, 12),
    FreshnessUnit.DAY: (1,),
}
"""The freshness values FULL mode accepts, per unit (Flink's list)."""

_DIVIDES = {
    FreshnessUnit.SECOND: "seconds must divide 60",
    FreshnessUnit.MINUTE: "minutes must divide 60",
    FreshnessUnit.HOUR: "hours must divide 24",
    FreshnessUnit.DAY: "days must be 1",
}


def humanize(delta: timedelta) -> str:
    """``timedelta(minutes=5)`` → ``"5 minutes"``, in the largest unit that divides it."""
    seconds = int(delta.total_seconds())
    for unit in (FreshnessUnit.DAY, FreshnessUnit.HOUR, FreshnessUnit.MINUTE, FreshnessUnit.SECOND):
        if seconds and seconds % unit.seconds == 0:
            n = seconds // unit.seconds
            return f"{n} {unit.value.lower()}{'' if n == 1 else 's'}"
    return f"{delta.total_seconds():g} seconds"


def describe_freshness(freshness: Freshness) -> str:
    """``Freshness(5, MINUTE)`` → ``"5 minutes"`` (as written, not normalised)."""
    n = freshness.value
    return f"{n} {freshness.unit.value.lower()}{'' if n == 1 else 's'}"


def full_mode_problem(freshness: Freshness) -> str | None:
    """Why ``freshness`` cannot be a FULL-mode schedule, or ``None`` when it can."""
    allowed = FULL_MODE_DIVISORS[freshness.unit]
    if freshness.value in allowed:
        return None
    return (
        f"FRESHNESS = {freshness.sql()} is not allowed in FULL mode: "
        f"{_DIVIDES[freshness.unit]} ({', '.join(str(n) for n in allowed)})"
    )


def freshness_to_cron(freshness: Freshness) -> str:
    """The cron expression of a FULL-mode freshness (see the module docstring for the forms)."""
    problem = full_mode_problem(freshness)
    if problem is not None:
        raise FreshnessError(problem, offending=freshness.sql(), fix=_full_fix(freshness.unit))
    n = freshness.value
    cron = {
        FreshnessUnit.SECOND: f"* * * * * */{n}",
        FreshnessUnit.MINUTE: f"*/{n} * * * *",
        FreshnessUnit.HOUR: f"0 */{n} * * *",
        FreshnessUnit.DAY: "0 0 * * *",
    }[freshness.unit]
    if not croniter.is_valid(cron):  # pragma: no cover - guards the table above
        raise FreshnessError(f"internal error: {cron!r} is not a valid cron expression", offending=freshness.sql())
    return cron


def _full_fix(unit: FreshnessUnit) -> str:
    values = ", ".join(str(n) for n in FULL_MODE_DIVISORS[unit])
    return f"use {values} {unit.value}, another unit, or REFRESH_MODE = CONTINUOUS"


@dataclass(frozen=True)
class FreshnessRules:
    """Flink's three settings, configurable as in Flink; validated so a bad config fails at once."""

    default_continuous: Freshness = Freshness(3, FreshnessUnit.MINUTE)
    """``materialized-table.default-freshness.continuous``."""
    default_full: Freshness = Freshness(1, FreshnessUnit.HOUR)
    """``materialized-table.default-freshness.full``; must itself be a valid FULL-mode freshness."""
    threshold: timedelta = timedelta(minutes=30)
    """``materialized-table.refresh-mode.freshness-threshold``: below it, CONTINUOUS; at or above, FULL."""

    def __post_init__(self) -> None:
        if self.threshold <= timedelta(0):
            raise FreshnessError(
                f"freshness threshold must be positive, got {self.threshold}",
                statement="FreshnessRules",
                fix="configure a positive threshold",
            )
        problem = full_mode_problem(self.default_full)
        if problem is not None:
            raise FreshnessError(
                f"default_full: {problem}",
                statement="FreshnessRules",
                offending=self.default_full.sql(),
                fix=_full_fix(self.default_full.unit),
            )

    def infer_mode(self, freshness: Freshness) -> RefreshMode:
        """Flink's inference: CONTINUOUS below the threshold, FULL at or above it."""
        return RefreshMode.CONTINUOUS if freshness.to_timedelta() < self.threshold else RefreshMode.FULL


@dataclass(frozen=True)
class RefreshSchedule:
    """The effective refresh of a table: the mode, the freshness, the cron (FULL only) and why."""

    mode: RefreshMode
    freshness: Freshness
    cron: str | None
    """FULL mode's cron expression (croniter syntax); ``None`` in CONTINUOUS mode."""
    mode_inferred: bool
    """True when REFRESH_MODE was omitted and the mode comes from the freshness threshold."""
    freshness_defaulted: bool
    """True when FRESHNESS was omitted and the configured default applies."""
    reason: str
    """One line for people, e.g. "freshness 5 minutes < 30 minutes threshold → CONTINUOUS"."""

    @property
    def interval(self) -> timedelta:
        """How often a CONTINUOUS table refreshes (and a FULL one's cron period)."""
        return self.freshness.to_timedelta()


def resolve_schedule(
    freshness: Freshness | None, mode: RefreshMode | None, rules: FreshnessRules | None = None
) -> RefreshSchedule:
    """Apply Flink's rules to a declared freshness and mode (either may be omitted).

    Raises:
        FreshnessError: FULL mode (declared or inferred) with a freshness that is not a divisor of its
            unit's cycle; the message names the allowed values.
    """
    rules = rules or FreshnessRules()
    defaulted = freshness is None
    if freshness is None:
        freshness = rules.default_full if mode is RefreshMode.FULL else rules.default_continuous
    reasons = []
    if defaulted:
        which = "FULL" if mode is RefreshMode.FULL else "CONTINUOUS"
        reasons.append(f"freshness omitted → default {describe_freshness(freshness)} for {which}")
    if mode is None:
        effective = rules.infer_mode(freshness)
        sign = "<" if effective is RefreshMode.CONTINUOUS else "≥"
        reasons.append(
            f"freshness {describe_freshness(freshness)} {sign} {humanize(rules.threshold)} threshold → "
            f"{effective.value}"
        )
    else:
        effective = mode
        reasons.append(f"REFRESH_MODE = {mode.value} declared")
    cron = None
    if effective is RefreshMode.FULL:
        try:
            cron = freshness_to_cron(freshness)
        except FreshnessError as exc:
            if mode is None:
                raise FreshnessError(
                    f"{exc.problem} (FULL mode was inferred: {reasons[-1]})", offending=exc.offending, fix=exc.fix
                ) from None
            raise
    return RefreshSchedule(
        mode=effective,
        freshness=freshness,
        cron=cron,
        mode_inferred=mode is None,
        freshness_defaulted=defaulted,
        reason="; ".join(reasons),
    )
