"""Errors that teach, everywhere (issue 38): the Airflow client, the kernel accessor, query cells, the magics' own
refusals and a misspelt ``spark.*`` key in WITH are all built by the one formatter
(:class:`~mt_magic.errors.MtMagicError`), each with a Fix and, where a name was misspelt, the name meant. No JVM:
each message is compared whole."""

from __future__ import annotations

import socket

import pytest
from IPython.core.error import UsageError
from traitlets import TraitError

from mt_magic.errors import DefinitionError, MtMagicError, WorkflowSchedulerError
from mt_magic.kernel import require_kernel_session
from mt_magic.magics import MT_COMMANDS, MaterializedMagics
from mt_magic.runtime.inspect.query import QueryCellError
from mt_magic.runtime.spark.semantics import split_pinned
from mt_magic.runtime.spark.session_cache import SessionCache
from mt_magic.scheduling.airflow_api import AirflowSettings, AirflowUnavailableError, _unreachable
from mt_magic.scheduling.local_airflow import port_is_free
from mt_magic.scheduling.workflow import parse_scheduler

LABEL = "CREATE MATERIALIZED TABLE t"


def _said(error: type[BaseException], call, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(error) as raised:
        call(*args)
    return str(raised.value)


def test_a_misspelt_spark_key_gets_the_setting_meant_not_the_whole_list() -> None:
    said = _said(DefinitionError, split_pinned, LABEL, {"spark.sql.ansi.enabeld": "true"})
    assert said == (
        "CREATE MATERIALIZED TABLE t: WITH ('spark.sql.ansi.enabeld' = 'true') is not a Spark setting that changes a "
        "query's answer, so it cannot belong to the definition. Nothing changed. Fix: did you mean "
        "'spark.sql.ansi.enabled'? Otherwise, per-refresh Spark settings go in ALTER MATERIALIZED TABLE … RESUME WITH "
        "('spark.sql.ansi.enabeld' = …)."
    )
    # names are case-sensitive for Spark; the judge is not, so the right spelling is offered
    assert "Fix: did you mean 'spark.sql.session.timeZone'? Otherwise, " in _said(
        DefinitionError, split_pinned, LABEL, {"spark.sql.session.timezone": "UTC"}
    )


def test_a_spark_key_near_none_still_lists_what_a_definition_pins() -> None:
    said = _said(DefinitionError, split_pinned, LABEL, {"spark.sql.shuffle.partitions": "4"})
    assert said.startswith(
        "CREATE MATERIALIZED TABLE t: WITH ('spark.sql.shuffle.partitions' = '4') is not a Spark setting that changes "
        "a query's answer, so it cannot belong to the definition. Nothing changed. Fix: per-refresh Spark settings go "
        "in ALTER MATERIALIZED TABLE … RESUME WITH ('spark.sql.shuffle.partitions' = …); a definition pins only these "
        "(names are case-sensitive): spark.sql.ansi.doubleQuotedIdentifiers, spark.sql.ansi.enabled, "
    ), said
    assert "did you mean" not in said and said.endswith(", spark.sql.timestampType."), said


def test_airflow_settings_and_reachability_are_said_in_the_one_shape() -> None:
    said = _said(WorkflowSchedulerError, AirflowSettings, "af:8080", "u", "p")
    assert said == (
        "Airflow URL 'af:8080' is not an http(s) URL. Fix: set MT_MAGIC_AIRFLOW_URL=http://host:8080 or %config "
        "MaterializedMagics.airflow_url."
    )
    said = _said(WorkflowSchedulerError, AirflowSettings, "http://af:8080")
    assert said == (
        "no credentials for Airflow at http://af:8080. Fix: set MT_MAGIC_AIRFLOW_USERNAME and "
        "MT_MAGIC_AIRFLOW_PASSWORD_FILE (or _PASSWORD, or MT_MAGIC_AIRFLOW_TOKEN), or the matching %config "
        "MaterializedMagics.airflow_* settings, before airflow_url."
    )
    unreachable = _unreachable("Airflow at http://af:8080", ConnectionError())
    assert isinstance(unreachable, AirflowUnavailableError)
    assert unreachable.fix is not None and unreachable.fix.startswith("start it the README's way")
    assert str(unreachable).startswith(
        "Airflow at http://af:8080 cannot be reached (ConnectionError); nothing was changed. Fix: start it the "
        "README's way, "
    )


def test_a_scheduler_setting_s_typo_gets_the_scheduler_meant() -> None:
    said = _said(DefinitionError, parse_scheduler, "airflw", "MaterializedMagics.scheduler")
    assert said.startswith(
        "MaterializedMagics.scheduler = 'airflw' is not a known value. Fix: did you mean 'airflow'? Otherwise, use "
    ), said


def test_a_taken_port_and_the_session_cache_notice_come_from_the_formatter() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        said = _said(RuntimeError, port_is_free, f"http://127.0.0.1:{port}")
    assert said == (
        f"cannot start Airflow on http://127.0.0.1:{port}: port {port} on 127.0.0.1 is taken (Address already in "
        "use), perhaps by an Airflow started earlier that is still running. Fix: stop what listens there (`ss -ltnp "
        f"'sport = :{port}'` names it), or start on another port: python -m mt_magic.scheduling.local_airflow "
        f"--port {port + 1}."
    )
    assert SessionCache(spark=object(), catalog="mtc").notice == (  # type: ignore[arg-type]
        "Note: catalog 'mtc' caches tables (Iceberg's default): mt_magic makes this session forget each table it "
        "commits, but other sessions on this catalog read a table up to 30 s behind. Fix: set "
        "spark.sql.catalog.mtc.cache-enabled=false where the catalog is defined."
    )


def test_no_kernel_and_a_bad_row_limit_say_what_to_type() -> None:
    from mt_magic.runtime.inspect.query import checked_limit  # the one check of query cells' and live views' limit

    assert _said(MtMagicError, require_kernel_session, "pass connection=") == (
        "No mt_magic connection in this kernel. Fix: run `%load_ext mt_magic` first, or pass connection=."
    )
    assert _said(QueryCellError, checked_limit, 0) == (
        "%%mtsql: the row limit must be at least 1, got 0. Fix: give 1 or more: %%mtsql --limit 100, or limit=100 "
        "from Python."
    )


@pytest.fixture
def magics() -> MaterializedMagics:
    """The magics without a connection: every refusal below comes before one would be made (no JVM)."""
    return MaterializedMagics(shell=None)


def test_a_misspelt_mt_command_gets_the_command_meant(magics: MaterializedMagics) -> None:
    assert _said(UsageError, magics.mt, "stauts daily") == (
        "Unknown %mt command 'stauts'. Fix: did you mean %mt status? Otherwise, use list, status, history, lineage, "
        f"explain, refresh, suspend, resume, {', '.join(MT_COMMANDS[8:])} (%mt? describes each)."
    )
    assert _said(UsageError, magics.mt, "explain") == (
        "%mt explain needs a table name or a statement. Fix: name the table, e.g. %mt explain daily_orders, or write "
        "the CREATE MATERIALIZED TABLE or ALTER MATERIALIZED TABLE statement, or the query, after %mt explain."
    )


def test_a_misspelt_flag_gets_the_flag_meant(magics: MaterializedMagics) -> None:
    assert _said(UsageError, magics.materialized, "--cascde", "DROP MATERIALIZED TABLE t") == (
        "%%materialized does not know the option --cascde. Fix: did you mean --cascade? Otherwise, use --cascade, "
        "--wait (%%materialized? describes each)."
    )
    assert _said(UsageError, magics.mtsql, "--limt 5", "SELECT 1") == (
        "%%mtsql does not know the option --limt. Fix: did you mean --limit? Otherwise, use --live, --spark, --out, "
        "--limit, --debounce (%%mtsql? describes each)."
    )


def test_bad_settings_say_what_to_set(magics: MaterializedMagics) -> None:
    with pytest.raises(TraitError) as raised:
        magics.preview_rows = 0
    assert str(raised.value) == (
        "preview_rows must be at least 1, got 0. Fix: %config MaterializedMagics.preview_rows = 1 or more (default "
        "100)."
    )
    with pytest.raises(TraitError) as raised:
        magics.namespace = "sales.eu"
    assert str(raised.value) == (
        "namespace must be one identifier, got 'sales.eu'. Fix: give one name without spaces or dots, e.g. %config "
        "MaterializedMagics.namespace = 'default'."
    )
    with pytest.raises(TraitError) as raised:
        magics.default_freshness_full = "INTERVAL '7' MINUTE"
    assert str(raised.value) == (
        "default_freshness_full: FRESHNESS = INTERVAL '7' MINUTE is not allowed in FULL mode: minutes must divide 60 "
        "(1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30). Fix: use 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 MINUTE, another unit, "
        "or REFRESH_MODE = CONTINUOUS."
    )
