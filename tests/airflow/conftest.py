"""A real Airflow for the tests of refresh workflows on Airflow (``make test`` runs them; marker ``airflow``).

One Airflow per run (API server, scheduler and DAG processor on loopback, SQLite, ``AIRFLOW_HOME`` in a temporary
directory: :mod:`mt_magic.scheduling.local_airflow`), reaching the run's embedded catalog (``tests/conftest.py``'s
``catalog_server``, configured for pyiceberg as ``mtit``) through the environment, as Airflow reaches a team's
catalog in production.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import pytest
from airflow_helpers import inline_service, run
from shared_catalog import CATALOG

from mt_magic.scheduling.local_airflow import LocalAirflow, local_airflow


@pytest.fixture(scope="session")
def airflow(connection, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAirflow]:
    """Airflow started for the run; its tasks get a small local Spark and one quick retry."""
    prefix = f"PYICEBERG_CATALOG__{CATALOG.upper()}__"
    extra = {key: value for key, value in os.environ.items() if key.startswith(prefix)}
    extra.update(
        {
            "MT_MAGIC_SPARK_MASTER": "local[1]",
            "MT_MAGIC_DRIVER_MEMORY": "1g",
            "MT_MAGIC_AIRFLOW_RETRIES": "1",
            "MT_MAGIC_AIRFLOW_RETRY_DELAY": "1",
            # No periodic parse during a run: a DAG appears or changes only because a statement asked Airflow to
            # parse the DAG file (PUT /api/v2/parseDagFile), which is what the tests show (a dropped or renamed
            # DAG goes stale at a later parse: airflow_helpers.wait_stale asks for one).
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
            "AIRFLOW__SCHEDULER__PARSING_CLEANUP_INTERVAL": "5",
        }
    )
    server = local_airflow(tmp_path_factory.mktemp("airflow_home"), CATALOG, extra)
    try:
        server.start()
        _wait_for_the_catalog_dag(server)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def airflow_settings(airflow: LocalAirflow):
    from mt_magic.scheduling.airflow_api import AirflowSettings

    return AirflowSettings(airflow.url, airflow.user, airflow.password, timeout=30)


@pytest.fixture
def one_shot_table(connection) -> Iterator[Callable[[str, str, str, str], None]]:
    """The one-shot tests' set-up, without Airflow: ``make(namespace, source, values, create)`` creates the Iceberg
    table ``source`` (name and columns) in ``namespace`` holding ``values``, then runs ``create`` (a CREATE
    MATERIALIZED TABLE over it) and its first refresh inline; the namespace's tables are purged afterwards."""
    with ExitStack() as stack:

        def make(namespace: str, source: str, values: str, create: str) -> None:
            mt = stack.enter_context(contextmanager(inline_service)(connection, namespace))
            name = source.split(" ", 1)[0]
            connection.spark.sql(f"CREATE TABLE {CATALOG}.{namespace}.{source} USING iceberg")
            connection.spark.sql(f"INSERT INTO {CATALOG}.{namespace}.{name} VALUES {values}")
            run(mt, create).refresh.result()

        yield make


def _wait_for_the_catalog_dag(server: LocalAirflow, timeout: float = 240) -> None:
    """Until Airflow's first parse of the DAG file is in: its catalog DAG is the handle every statement's parse
    request goes through (there is no periodic parse in these tests)."""
    import time

    from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings, DagNotFoundError
    from mt_magic.scheduling.dags import catalog_dag_id

    client = AirflowClient(AirflowSettings(server.url, server.user, server.password, timeout=30))
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                client.dag(catalog_dag_id(CATALOG))
                return
            except DagNotFoundError:
                if time.monotonic() > deadline:
                    tail = server.log_tail("dag-processor")
                    raise RuntimeError(f"Airflow did not parse its DAG file:\n{tail}") from None
                time.sleep(1)
    finally:
        client.close()
