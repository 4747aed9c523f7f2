"""The logic of statements that change a table on Airflow, against a fake Airflow API (the real one runs in
tests/airflow): each schedule change asks Airflow for a parse now, a refused Airflow changes nothing, a move
between the kernel and Airflow never leaves the table with two schedulers (nor with none after a failure), and
Airflow's view of a table (last run, log link, next run) is cached and never waited for."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from fake_airflow import SETTINGS, FakeAirflowClient

from mt_magic.errors import WorkflowSchedulerError
from mt_magic.scheduling.airflow import AirflowWorkflows
from mt_magic.scheduling.airflow_api import DagRunInfo
from mt_magic.scheduling.airflow_runs import AirflowRunCache, run_facts
from mt_magic.scheduling.dags import catalog_dag_id, dag_id
from mt_magic.sql import AlterScheduler, parse_cell
from mt_magic.sql.errors import UnsupportedOptionError
from mt_magic.vocabulary import WorkflowSchedulerKind

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=timezone.utc)


def test_alter_set_names_only_the_scheduler() -> None:
    (stmt,) = parse_cell("ALTER MATERIALIZED TABLE t SET ('Scheduler' = 'AIRFLOW')")
    assert isinstance(stmt, AlterScheduler) and stmt.scheduler == "airflow"
    with pytest.raises(UnsupportedOptionError, match="changes only 'scheduler', found 'connector'"):
        parse_cell("ALTER MATERIALIZED TABLE t SET ('scheduler' = 'kernel', 'connector' = 'x')")
    with pytest.raises(
        UnsupportedOptionError, match=r"SET \('scheduler' = 'cron'\) is not a known value. Fix: use 'kernel'"
    ):
        parse_cell("ALTER MATERIALIZED TABLE t SET ('scheduler' = 'cron')")


def test_schedule_changes_ask_airflow_to_parse_the_dag_file_now() -> None:
    fake = FakeAirflowClient()
    airflow = AirflowWorkflows(SETTINGS, fake, parse_follow_ups=())
    airflow.modify("mt.s.t")  # Airflow has not parsed the DAG file yet: nothing to ask, its first parse builds all
    assert fake.of("reparse") == []
    fake.add_dag(catalog_dag_id("mt.s.t"), paused=True)  # the DAG file's own DAG
    fake.add_dag(catalog_dag_id("mt2.s.t"), paused=True)
    airflow.create("mt.s.t")  # the new table's DAG file is found through its catalog's DAG
    assert fake.of("reparse") == [("reparse", "token-of-mt__mt")]
    fake.add_dag(dag_id("mt.s.t"), paused=True)  # left paused by an earlier DROP of the same name
    airflow.create("mt.s.t")
    assert not fake.dag_infos[dag_id("mt.s.t")].is_paused
    assert fake.of("reparse")[-1] == ("reparse", "token-of-mt__mt.s.t")
    airflow.delete("mt.s.t")
    assert fake.dag_infos[dag_id("mt.s.t")].is_paused and len(fake.of("reparse")) == 3
    fake.unreachable = True  # after the catalog write: said in the log, not raised (the next parse catches up)
    assert airflow.parse_now("mt.s.t") is False


def test_a_parse_request_is_repeated_after_a_parse_airflow_may_have_started_before_the_write(caplog) -> None:
    """Airflow drops a parse request for a file it is parsing at that moment (no duplicate processor), and that
    parse may have read the catalog before the statement's write: the request is repeated later, and a refused
    repeat is only logged."""
    import logging
    import threading

    fake = FakeAirflowClient()
    asked = threading.Semaphore(0)
    fake.on_call = lambda kind, call: asked.release() if kind == "reparse" else None
    fake.add_dag(catalog_dag_id("mt.s.t"), paused=True)
    assert AirflowWorkflows(SETTINGS, fake, parse_follow_ups=(0.05, 0.2)).parse_now("mt.s.t")
    assert all(asked.acquire(timeout=30) for _ in range(3))
    assert fake.of("reparse") == [("reparse", "token-of-mt__mt")] * 3

    refused = threading.Event()
    caplog.set_level(logging.INFO, logger="mt_magic.scheduling.airflow")
    airflow = AirflowWorkflows(SETTINGS, fake, parse_follow_ups=(0.3,))
    assert airflow.parse_now("mt.s.t")
    fake.unreachable = True  # before the repeat
    fake.on_call = None
    deadline = threading.Event()
    for _ in range(300):
        if any("follow-up parse request was refused" in r.getMessage() for r in caplog.records):
            refused.set()
            break
        deadline.wait(0.1)
    assert refused.is_set()
    assert airflow.parse_now("mt.s.t") is False  # nothing asked now: no repeats either


def test_airflow_s_view_is_cached_and_never_waited_for() -> None:
    fake = FakeAirflowClient()
    dag = dag_id("mt.s.t")
    fake.add_dag(dag, next_run_after="2026-01-02T11:00:00Z", schedule="1:00:00")
    fake.runs[dag] = [
        DagRunInfo(dag, "scheduled__x", "failed", "scheduled", {}, "2026-01-02T10:00:01Z", "2026-01-02T10:00:40Z")
    ]
    now = [T0]
    cache = AirflowRunCache(lambda: fake, clock=lambda: now[0], max_age=timedelta(seconds=10))
    fake.gate = threading.Event()  # Airflow answers only when the test lets it
    try:
        assert cache.get("mt.s.t") is None  # at once, with Airflow still answering
        assert run_facts(None) == [("airflow", "asking Airflow for the DAG's runs …")]
        fake.gate.set()
        view = _wait(lambda: cache.get("mt.s.t"))
    finally:
        fake.gate.set()
    assert view.failing and view.log_url.endswith(f"/dags/{dag}/runs/scheduled__x/tasks/refresh")
    facts = dict(run_facts(view))
    assert facts["airflow last run"].startswith("failed (the refresh failed in Airflow")
    assert "started 2026-01-02 10:00:01 UTC · ended 2026-01-02 10:00:40 UTC" in facts["airflow last run"]
    assert facts["airflow next run"] == "2026-01-02 11:00:00 UTC"
    assert facts["airflow DAG"] == f"{dag} · active · schedule 1:00:00"
    asked = len(fake.of("dag"))
    assert cache.get("mt.s.t") is view and len(fake.of("dag")) == asked  # fresh: no call
    now[0] += timedelta(seconds=11)
    fake.unreachable = True
    assert cache.get("mt.s.t") is view  # stale: the old view at once, Airflow asked in the background
    down = _wait(lambda: (v := cache.get("mt.s.t")) is not view and v)
    assert dict(run_facts(down))["airflow"].startswith("unreachable at 2026-01-02 10:00:11 UTC: Airflow at")
    cache.close()


def test_the_card_shows_airflow_s_view_with_a_log_link() -> None:
    from mt_magic.runtime.status import TableStatus
    from mt_magic.vocabulary import JobState, RefreshMode
    from mt_magic.widgets.airflow_run import airflow_html, airflow_rows

    class Source:
        def airflow_run(self, name: str):  # type: ignore[no-untyped-def]
            return cache.get(name)

    fake = FakeAirflowClient()
    dag = dag_id("mt.s.t")
    fake.add_dag(dag)
    fake.runs[dag] = [DagRunInfo(dag, "manual__1", "success", "manual", {}, "2026-01-02T10:00:01Z", None)]
    cache = AirflowRunCache(lambda: fake)
    kernel = TableStatus("mt.s.t", RefreshMode.FULL, timedelta(hours=1), JobState.IDLE)
    on_airflow = TableStatus(**{**kernel.__dict__, "scheduler": WorkflowSchedulerKind.AIRFLOW})
    assert airflow_rows(Source(), kernel) == []  # a table on the kernel has no Airflow lines
    rows = _wait(lambda: (r := airflow_rows(Source(), on_airflow)) and r[0][0] != "airflow" and r)
    page = airflow_html(rows)
    assert f'href="{SETTINGS.url}/dags/{dag}/runs/manual__1/tasks/refresh"' in page
    assert "success" in page and "manual" in page
    cache.close()


def test_statements_reach_airflow_and_a_refused_airflow_changes_nothing(mt, spark) -> None:
    """SET FRESHNESS / REFRESH_MODE / AS / RENAME of a table on Airflow ask for a parse after the catalog write;
    with Airflow unreachable each is refused before it and the definition stays."""
    fake = FakeAirflowClient()
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, SETTINGS, fake, parse_follow_ups=())
    namespace = mt.workspace.default_namespace
    spark.sql(f"CREATE TABLE mtit.{namespace}.src (k INT) USING iceberg")
    name = f"mtit.{namespace}.t"
    run(
        mt,
        "CREATE MATERIALIZED TABLE t WITH ('scheduler' = 'airflow') FRESHNESS = INTERVAL '1' HOUR AS SELECT k FROM src",
    )
    fake.add_dag(dag_id(name))
    fake.add_dag(catalog_dag_id(name), paused=True)
    fake.unreachable = True
    for sql in (
        "ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '5' MINUTE",
        "ALTER MATERIALIZED TABLE t SET REFRESH_MODE = FULL",
        "ALTER MATERIALIZED TABLE t AS SELECT k, 1 AS one FROM src",
        "ALTER MATERIALIZED TABLE t RENAME TO t2",
        "ALTER MATERIALIZED TABLE t SET ('scheduler' = 'kernel')",
    ):
        with pytest.raises(WorkflowSchedulerError, match="cannot be reached"):
            run(mt, sql)
    _, definition = mt.workspace.catalog.load_materialized(name)
    assert (definition.freshness, definition.definition_version) == ("INTERVAL '1' HOUR", 1)
    assert definition.options["scheduler"] == "airflow"
    fake.unreachable = False
    run(mt, "ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '5' MINUTE")
    assert fake.of("reparse") == [("reparse", f"token-of-{dag_id(name)}")]
    run(mt, "ALTER MATERIALIZED TABLE t RENAME TO t2")
    assert fake.dag_infos[dag_id(name)].is_paused and len(fake.of("reparse")) == 3  # old paused, parse asked
    assert mt.workspace.catalog.load_materialized(f"mtit.{namespace}.t2")[1].options["scheduler"] == "airflow"


def test_a_move_never_leaves_two_schedulers_and_a_failed_one_leaves_the_old(mt, spark, monkeypatch) -> None:
    fake = FakeAirflowClient()
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, SETTINGS, fake, parse_follow_ups=())
    namespace = mt.workspace.default_namespace
    name = f"mtit.{namespace}.t"
    spark.sql(f"CREATE TABLE mtit.{namespace}.src (k INT) USING iceberg")
    run(mt, "CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' HOUR AS SELECT k FROM src").refresh.result()
    fake.unreachable = True
    with pytest.raises(WorkflowSchedulerError, match="cannot be reached"):
        run(mt, "ALTER MATERIALIZED TABLE t SET ('scheduler' = 'airflow')")
    assert _scheduler(mt, name) is WorkflowSchedulerKind.KERNEL and _kernel_runs(mt, name)
    fake.unreachable = False

    seen: list[tuple[str, bool]] = []  # (call, did the kernel still run the table then)
    fake.on_call = lambda kind, call: seen.append((kind, _kernel_runs(mt, name)))
    catalog = mt.workspace.catalog
    real_update = catalog.update_properties

    def failing_update(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError("the catalog went away")

    monkeypatch.setattr(catalog, "update_properties", failing_update)
    with pytest.raises(OSError, match="went away"):
        run(mt, "ALTER MATERIALIZED TABLE t SET ('scheduler' = 'airflow')")
    assert _scheduler(mt, name) is WorkflowSchedulerKind.KERNEL and _kernel_runs(mt, name)  # the kernel took it back
    monkeypatch.setattr(catalog, "update_properties", real_update)

    result = run(mt, "ALTER MATERIALIZED TABLE t SET ('scheduler' = 'airflow')")
    assert "now refreshed by airflow" in result.message
    assert _scheduler(mt, name) is WorkflowSchedulerKind.AIRFLOW and not _kernel_runs(mt, name)
    assert mt.status(name).scheduler is WorkflowSchedulerKind.AIRFLOW  # still on its card, run by Airflow
    fake.add_dag(dag_id(name))  # Airflow parsed it
    seen.clear()
    fake.unreachable = True  # the move back is refused before anything changes
    with pytest.raises(WorkflowSchedulerError):
        run(mt, "CREATE OR ALTER MATERIALIZED TABLE t WITH ('scheduler' = 'kernel') AS SELECT k FROM src")
    assert _scheduler(mt, name) is WorkflowSchedulerKind.AIRFLOW and not fake.dag_infos[dag_id(name)].is_paused
    fake.unreachable = False
    run(mt, "CREATE OR ALTER MATERIALIZED TABLE t WITH ('scheduler' = 'kernel') AS SELECT k, 2 AS two FROM src")
    assert ("set_paused", False) in seen  # the DAG was paused while the kernel did not run the table yet
    assert fake.dag_infos[dag_id(name)].is_paused
    _, definition = mt.workspace.catalog.load_materialized(name)
    assert definition.options["scheduler"] == "kernel" and definition.definition_version == 2  # one commit
    assert _kernel_runs(mt, name)


def run(mt, sql: str):  # type: ignore[no-untyped-def]
    (statement,) = parse_cell(sql)
    return mt.execute(statement)


def _scheduler(mt, name: str) -> WorkflowSchedulerKind:  # type: ignore[no-untyped-def]
    from mt_magic.scheduling.workflow import scheduler_of

    return scheduler_of(mt.workspace.catalog.load_materialized(name)[1].options)


def _kernel_runs(mt, name: str) -> bool:  # type: ignore[no-untyped-def]
    """The kernel's manager schedules the table (it knows it and it is not on another scheduler)."""
    return mt.manager.knows(name) and mt.status(name).scheduler is WorkflowSchedulerKind.KERNEL


def _wait(predicate, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    try:
        while not deadline.is_set():
            value = predicate()
            if value:
                return value
            deadline.wait(0.02)
    finally:
        timer.cancel()
    raise AssertionError(f"nothing after {timeout} s")


def test_create_on_an_upstream_s_asset_says_its_first_run_follows_the_upstream_s_next_run(mt, spark) -> None:
    """A table scheduled by another table's Asset does not run when its DAG is parsed: it stays empty until the
    upstream's next refresh on Airflow, and its CREATE says so (with Airflow's time of that run)."""
    fake = FakeAirflowClient()
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, SETTINGS, fake, parse_follow_ups=())
    namespace = mt.workspace.default_namespace
    spark.sql(f"CREATE TABLE mtit.{namespace}.src (k INT) USING iceberg")
    up, down = f"mtit.{namespace}.up", f"mtit.{namespace}.down"
    first = run(mt, "CREATE MATERIALIZED TABLE up WITH ('scheduler' = 'airflow') AS SELECT k FROM src")
    assert first.message == (
        f"Created {up} (CONTINUOUS, INTERVAL '3' MINUTE) on Airflow: DAG {dag_id(up)} refreshes it, the first run as "
        "soon as Airflow's DAG processor has parsed it (asked for now)."
    )
    fake.add_dag(dag_id(up), next_run_after="2026-01-02T10:03:00Z")
    result = run(mt, "CREATE MATERIALIZED TABLE down WITH ('scheduler' = 'airflow') AS SELECT count(*) AS n FROM up")
    assert result.message == (
        f"Created {down} (CONTINUOUS, INTERVAL '3' MINUTE) on Airflow: DAG {dag_id(down)} refreshes it, it runs when "
        f"{up} on Airflow commits a refresh (its Asset), so its first run follows the next run of {up}'s DAG (at "
        "2026-01-02T10:03:00Z, per Airflow), and the table is empty until then. To fill it now: ALTER MATERIALIZED "
        f"TABLE {down} REFRESH."
    )


def test_an_unreachable_airflow_names_the_readme_s_launcher() -> None:
    """A real client against a loopback port nothing listens on: the Fix is the command that starts an Airflow with
    the DAG file and the catalog, not a bare ``airflow standalone`` (which has neither)."""
    from mt_magic.loopback import free_port
    from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings

    url = f"http://127.0.0.1:{free_port()}"
    client = AirflowClient(AirflowSettings(url, token="t", timeout=5))
    with pytest.raises(WorkflowSchedulerError) as raised:
        client.version()
    client.close()
    assert str(raised.value) == (
        f"Airflow at {url} cannot be reached (ConnectionError); nothing was changed. Fix: start it the README's way, "
        "`.venv/bin/python -m mt_magic.scheduling.local_airflow` (its DAG file reads this catalog; a plain `airflow "
        "standalone` has neither), or point MT_MAGIC_AIRFLOW_URL / %config MaterializedMagics.airflow_url at your "
        "Airflow's API server."
    )
