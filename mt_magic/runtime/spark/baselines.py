"""Baselines of the answer-changing SQL settings: each measured Spark version's defaults, named, so ``SHOW CREATE``
writes one name instead of thirty-odd settings that merely say "Spark's defaults".

A table records the effective value of every :data:`~mt_magic.runtime.spark.semantics.ANSWER_SETTINGS` key its
Spark knows (exact, whatever the next Spark's defaults are). ``SHOW CREATE`` folds them (:func:`folded`): it picks
the baseline that leaves the fewest settings to write — among those whose every key the table recorded, so that
expanding the baseline adds no setting the table did not have — and writes
``'sql-settings.baseline' = 'spark-3.5.9'`` followed by only the settings that differ from it (the session time zone
always: its default is the machine's, not Spark's). A CREATE given the option expands it (:func:`expanded`): the
baseline's values, then the settings written beside it, then the session's values for any key the baseline does
not name — so the output of ``SHOW CREATE`` run on the same Spark line records exactly the same settings, on any
machine and in any session. No baseline fits (a Spark version not measured here): every setting is written, as
before. Measured with ``scripts/spark_sql_defaults.py``; ``tests/runtime/test_baselines.py`` checks the installed
Spark's defaults against its baseline.
"""

from __future__ import annotations

from collections.abc import Mapping

from mt_magic.errors import DefinitionError
from mt_magic.options import BASELINE

BASELINE_OPTION = BASELINE.key
"""The WITH option naming a baseline (declared in :mod:`mt_magic.options`; its value is checked here, against
:data:`BASELINES`)."""

UNFOLDED = frozenset({"spark.sql.session.timeZone"})
"""Settings no baseline holds: their default is not a Spark version's (the JVM's time zone)."""

SPARK_3_5_9: Mapping[str, str] = {
    "spark.sql.ansi.doubleQuotedIdentifiers": "false",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.ansi.enforceReservedKeywords": "false",
    "spark.sql.ansi.relationPrecedence": "false",
    "spark.sql.caseSensitive": "false",
    "spark.sql.decimalOperations.allowPrecisionLoss": "true",
    "spark.sql.function.concatBinaryAsString": "false",
    "spark.sql.function.eltOutputAsString": "false",
    "spark.sql.groupByAliases": "true",
    "spark.sql.groupByOrdinal": "true",
    "spark.sql.legacy.allowNegativeScaleOfDecimal": "false",
    "spark.sql.legacy.castComplexTypesToString.enabled": "false",
    "spark.sql.legacy.ctePrecedencePolicy": "EXCEPTION",
    "spark.sql.legacy.exponentLiteralAsDecimal.enabled": "false",
    "spark.sql.legacy.followThreeValuedLogicInArrayExists": "true",
    "spark.sql.legacy.groupingIdWithAppendedUserGroupBy": "false",
    "spark.sql.legacy.inSubqueryNullability": "false",
    "spark.sql.legacy.integerGroupingId": "false",
    "spark.sql.legacy.interval.enabled": "false",
    "spark.sql.legacy.literal.pickMinimumPrecision": "true",
    "spark.sql.legacy.lpadRpadAlwaysReturnString": "false",
    "spark.sql.legacy.negativeIndexInArrayInsert": "false",
    "spark.sql.legacy.nullInEmptyListBehavior": "true",
    "spark.sql.legacy.percentileDiscCalculation": "false",
    "spark.sql.legacy.setopsPrecedence.enabled": "false",
    "spark.sql.legacy.sizeOfNull": "true",
    "spark.sql.legacy.statisticalAggregate": "false",
    "spark.sql.legacy.timeParserPolicy": "EXCEPTION",
    "spark.sql.legacy.typeCoercion.datetimeToString.enabled": "false",
    "spark.sql.mapKeyDedupPolicy": "EXCEPTION",
    "spark.sql.orderByOrdinal": "true",
    "spark.sql.parser.escapedStringLiterals": "false",
    "spark.sql.storeAssignmentPolicy": "ANSI",
    "spark.sql.timestampType": "TIMESTAMP_LTZ",
}

SPARK_4_1_4: Mapping[str, str] = {
    **{k: v for k, v in SPARK_3_5_9.items() if k != "spark.sql.legacy.nullInEmptyListBehavior"},  # gone in 4.x
    # what 4.x changed or added
    "spark.sql.ansi.enabled": "true",
    "spark.sql.legacy.bangEqualsNot": "false",
    "spark.sql.legacy.codingErrorAction": "false",
    "spark.sql.legacy.ctePrecedencePolicy": "CORRECTED",
    "spark.sql.legacy.decimal.retainFractionDigitsOnTruncate": "false",
    "spark.sql.legacy.javaCharsets": "false",
    "spark.sql.legacy.scalarSubqueryCountBugBehavior": "false",
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
}

BASELINES: Mapping[str, Mapping[str, str]] = {"spark-3.5.9": SPARK_3_5_9, "spark-4.1.4": SPARK_4_1_4}
"""Spark version → the defaults of its answer-changing settings (without :data:`UNFOLDED`)."""


def folded(settings: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """The baseline that leaves the fewest of ``settings`` to write, and those (``None``: no baseline fits; all).

    >>> folded({"spark.sql.session.timeZone": "UTC", "x": "1"})
    (None, {'spark.sql.session.timeZone': 'UTC', 'x': '1'})
    """
    best: tuple[str | None, dict[str, str]] = (None, dict(settings))
    for name, defaults in BASELINES.items():
        if not set(defaults) <= set(settings):
            continue
        differing = {k: v for k, v in settings.items() if defaults.get(k) != v}
        if len(differing) < len(best[1]):
            best = (name, differing)
    return best


def expanded(label: str, options: Mapping[str, str]) -> dict[str, str]:
    """The settings a statement's baseline option stands for (empty without one).

    Raises:
        DefinitionError: the baseline is not one this version knows (the message lists them).
    """
    name = next((v for k, v in options.items() if k.lower() == BASELINE_OPTION), None)
    if name is None:
        return {}
    if name not in BASELINES:
        known = ", ".join(f"'{n}'" for n in BASELINES) or "none"
        raise DefinitionError(
            f"WITH ('{BASELINE_OPTION}' = '{name}') names no baseline of SQL settings known here. Nothing changed",
            statement=label,
            fix=f"use one of {known}, or write the settings themselves ('spark.sql.…' = '…')",
        )
    return dict(BASELINES[name])
