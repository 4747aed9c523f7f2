"""The workflow scheduler of tables on Airflow: what the kernel asks of Airflow's REST API for each statement.

Airflow builds the DAGs itself, from the catalog (:mod:`.airflow_dags`), so CREATE and ALTER need no call — the
DAG appears or changes at the DAG processor's next parse. What must happen *now* goes through the API: SUSPEND
pauses the DAG, RESUME unpauses it, REFRESH (and a backfill, with the partition as the run's conf) triggers a
run, DROP pauses it (the DAG then disappears from the files at the next parse). ``check`` runs before the
statement writes the catalog: Airflow unreachable, refused credentials or a DAG not parsed yet refuse the
statement with what to do, and nothing changes.
"""

from __future__ import annotations

from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings, DagNotFoundError
from mt_magic.scheduling.dags import dag_id
from mt_magic.scheduling.workflow import Partition, WorkflowRun
from mt_magic.vocabulary import WorkflowSchedulerKind


class AirflowWorkflows:
    """:class:`~mt_magic.scheduling.workflow.WorkflowScheduler` on Airflow 3 (one client per kernel)."""

    kind = WorkflowSchedulerKind.AIRFLOW

    def __init__(self, settings: AirflowSettings, client: AirflowClient | None = None) -> None:
        self.settings = settings
        self.client = client or AirflowClient(settings)

    def check(self, name: str, *, exists: bool = True) -> None:
        """Reachable and authenticated; with ``exists``, the table's DAG is parsed (else DagNotFoundError)."""
        if exists:
            self.client.dag(dag_id(name))
        else:
            self.client.version()

    def create(self, name: str) -> None:
        """Nothing to call: the DAG processor builds the DAG from the catalog at its next parse."""

    def modify(self, name: str) -> None:
        """Nothing to call: the next parse rebuilds the DAG from the changed definition."""

    def delete(self, name: str) -> None:
        """Pause the DAG at once (no run starts before the next parse drops it); a DAG never parsed is fine."""
        try:
            self.client.set_paused(dag_id(name), True)
        except DagNotFoundError:
            pass

    def suspend(self, name: str) -> None:
        self.client.set_paused(dag_id(name), True)

    def resume(self, name: str, options: Partition = ()) -> None:
        self.client.set_paused(dag_id(name), False)

    def refresh(self, name: str, partition: Partition = ()) -> WorkflowRun:
        """Trigger a run now; a backfill's partition travels as the run's conf (``{"partition": {...}}``)."""
        conf = {"partition": dict(partition)} if partition else {}
        where = f" partition {dict(partition)}" if partition else ""
        run = self.client.trigger(dag_id(name), conf, note=f"REFRESH{where} from mt_magic")
        return WorkflowRun(self.kind, f"Airflow run {run.run_id} of DAG {run.dag_id} ({self.settings.url})", run.run_id)
