"""The Spark SQL settings that change a query's answer: captured from the defining session, applied to every refresh.

A materialized table must hold what ``spark.sql(<its query>)`` answers in the session that defined it. Refreshes
run in child sessions (:mod:`.jobs`), which start from Spark's defaults, so at CREATE, ALTER … AS and CREATE OR
ALTER the settings below are read from the defining session — each as its *effective* value
(``spark.conf.get(key)``, the default written out), so a Spark upgrade that flips a default (ANSI mode in Spark 4)
or a runner whose JVM has another time zone does not change the answer — and stored with the definition
(``MaterializedTableDefinition.sql_settings``). Spark captures a view's SQL configs the same way (SPARK-33138);
unlike Spark, only the settings listed here are kept (a user's ``spark.sql.shuffle.partitions`` is not part of
a table's meaning), and a key this Spark does not know is skipped.

``CREATE … WITH ('spark.sql.session.timeZone' = 'UTC')`` pins a setting in the statement itself, over the
session's value; ``SHOW CREATE`` writes the recorded settings that way (those equal to a measured Spark version's
defaults as its baseline, :mod:`.baselines`), so its output run in a fresh session defines the same table.

Precedence in a refresh's child session, lowest first: the product's base (the SparkContext's settings, the
catalog's ``session_conf``, ``REFRESH_SESSION_CONF``), then the run's options (``RESUME WITH``, the sizing of
small merges), then the table's settings. ``ALTER … RESUME WITH`` giving a recorded key another value is refused
(:func:`conflicting_options`); the table's settings win over anything a run brings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mt_magic.errors import DefinitionError, closest_names, first_line
from mt_magic.options.settings import ANSWER_SETTINGS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def captured_settings(spark: SparkSession, pinned: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective value of every :data:`ANSWER_SETTINGS` key in ``spark``'s session, ``pinned`` over them.

    A key this Spark does not know, or one without a value (an optional setting left unset), is not recorded.
    """
    settings: dict[str, str] = {}
    for key in ANSWER_SETTINGS:
        if not spark.conf.isModifiable(key):  # a key of another Spark version (asking for it raises, slowly)
            continue
        value = spark.conf.get(key)
        if value is not None:
            settings[key] = value
    return {**settings, **(pinned or {})}


def split_pinned(label: str, options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A statement's WITH options as (settings it pins, the other options). A baseline
    (``'sql-settings.baseline' = 'spark-3.5.9'``, what ``SHOW CREATE`` writes) pins its settings under those written.

    Raises:
        DefinitionError: a ``spark.*`` key that is not an answer-changing setting (it would be stored as an
            Iceberg table property and do nothing), or a baseline not known here.
    """
    from mt_magic.runtime.spark.baselines import BASELINE_OPTION, expanded

    baseline = expanded(label, options)
    options = {k: v for k, v in options.items() if k.lower() != BASELINE_OPTION}
    pinned = {**baseline, **{k: v for k, v in options.items() if k in ANSWER_SETTINGS}}
    stray = [k for k in options if k.lower().startswith("spark.") and k not in ANSWER_SETTINGS]
    if stray:
        key = stray[0]
        near = tuple(f"'{name}'" for name in closest_names(key, ANSWER_SETTINGS, n=2))
        elsewhere = f"per-refresh Spark settings go in ALTER MATERIALIZED TABLE … RESUME WITH ('{key}' = …)"
        pins = f"a definition pins only these (names are case-sensitive): {', '.join(sorted(ANSWER_SETTINGS))}"
        raise DefinitionError(
            f"WITH ('{key}' = '{options[key]}') is not a Spark setting that changes a query's answer, so it cannot "
            "belong to the definition. Nothing changed",
            statement=label,
            did_you_mean=near,
            fix=elsewhere if near else f"{elsewhere}; {pins}",
        )
    return pinned, {k: v for k, v in options.items() if k not in pinned}


@contextmanager
def applied(label: str, spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Run the block with ``settings`` set in ``spark`` (a statement's analysis under the definition's pins); the
    session's own values come back afterwards. Keys already at their value are not touched.

    Raises:
        DefinitionError: Spark refuses a value (``'spark.sql.session.timeZone' = 'Mars/Base'``); nothing changed.
    """
    restore: dict[str, str | None] = {}
    try:
        for key, value in settings.items():
            current = _current(spark, key)
            if current == value:
                continue
            try:
                spark.conf.set(key, value)
            except Exception as exc:
                raise DefinitionError(
                    f"WITH ('{key}' = '{value}'): Spark refuses the value: {first_line(exc)}. Nothing changed",
                    statement=label,
                    fix="give a value Spark accepts for it, or remove it to use the session's",
                ) from exc
            restore[key] = current
        yield
    finally:
        for key, previous in restore.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def _current(spark: SparkSession, key: str) -> str | None:
    try:
        return spark.conf.get(key)
    except Exception:
        return None


def conflicting_options(settings: Mapping[str, str] | None, options: Mapping[str, str]) -> dict[str, str]:
    """The run options (``RESUME WITH``) that would give a recorded setting another value: key → recorded value.

    Values are compared without case and surrounding spaces (``'TRUE'`` is ``'true'``); a table without recorded
    settings (created before they were) has none.
    """
    if not settings:
        return {}
    return {
        key: settings[key]
        for key, value in options.items()
        if key in settings and value.strip().lower() != settings[key].strip().lower()
    }


def refuse_conflicts(label: str, settings: Mapping[str, str] | None, options: Mapping[str, str]) -> None:
    """Refuse run options that would change a recorded answer-changing setting (checked before anything changes).

    Raises:
        DefinitionError: names each option, the recorded value and how to change the definition instead.
    """
    conflicts = conflicting_options(settings, options)
    if not conflicts:
        return
    listed = "; ".join(f"'{k}' = '{options[k]}' (the definition says '{v}')" for k, v in conflicts.items())
    raise DefinitionError(
        f"{listed} would change what the table's query answers, and that setting belongs to the definition. "
        "Nothing changed",
        statement=label,
        fix="to change it, run ALTER MATERIALIZED TABLE … AS <query> in a session with the setting (e.g. "
        "spark.conf.set(…)) — or CREATE OR ALTER … WITH ('<key>' = '<value>') — so the table is recomputed under it; "
        "or drop the option from RESUME WITH",
    )
