"""The workflow scheduler of tables on Airflow: what the kernel asks of Airflow's REST API for each statement.

Airflow builds the DAGs itself, from the catalog (:mod:`.airflow_dags`); a statement that changes a table's
schedule makes it take effect *now* instead of at the DAG processor's next periodic parse: CREATE, ALTER … AS,
SET FRESHNESS, SET REFRESH_MODE, RENAME and CREATE OR ALTER ask Airflow to parse the catalog's DAG file at once
(``PUT /api/v2/parseDagFile/{file_token}``, Airflow 3's priority parsing). SUSPEND pauses the DAG, RESUME
unpauses it, REFRESH (and a backfill, with the partition as the run's conf) triggers a run, DROP pauses it and
asks for the parse that drops it. ``check`` runs before the statement writes the catalog: Airflow unreachable,
refused credentials or a DAG not parsed yet refuse the statement with what to do, and nothing changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from mt_magic.errors import WorkflowSchedulerError
from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings, DagNotFoundError
from mt_magic.scheduling.dags import catalog_dag_id, dag_id
from mt_magic.scheduling.workflow import Partition, WorkflowRun
from mt_magic.vocabulary import WorkflowSchedulerKind

log = logging.getLogger(__name__)

PARSE_FOLLOW_UPS = (10.0, 30.0)
"""Seconds after a parse request to ask again. Airflow's DAG processor drops a request for a file it is parsing at
that moment (``DagFileProcessorManager._start_new_processes``: no duplicate processor), and that parse may have
read the catalog before this statement's write; one of these later requests starts a parse after it."""


class AirflowWorkflows:
    """:class:`~mt_magic.scheduling.workflow.WorkflowScheduler` on Airflow 3 (one client per kernel)."""

    kind = WorkflowSchedulerKind.AIRFLOW

    def __init__(
        self,
        settings: AirflowSettings,
        client: AirflowClient | None = None,
        parse_follow_ups: Sequence[float] = PARSE_FOLLOW_UPS,
    ) -> None:
        self.settings = settings
        self.client = client or AirflowClient(settings)
        self.parse_follow_ups = tuple(parse_follow_ups)

    def check(self, name: str, *, exists: bool = True) -> None:
        """Reachable and authenticated; with ``exists``, the table's DAG is parsed (else DagNotFoundError)."""
        if exists:
            self.client.dag(dag_id(name))
        else:
            self.client.version()

    def create(self, name: str, *, suspended: bool = False) -> None:
        """Ask for a parse of the catalog's DAG file now, so the new table's DAG appears (and runs) at once.

        A DAG of that id that Airflow still knows (left paused by a DROP, a RENAME or a move to the kernel) is
        unpaused, unless the table is ``suspended``; a new DAG starts paused only then (its DAG file says so).
        """
        try:
            known = self.client.dag(dag_id(name))
            if known.is_paused is not suspended:
                self.client.set_paused(known.dag_id, suspended)
        except DagNotFoundError:
            pass
        except WorkflowSchedulerError as exc:  # the catalog is written: said, and shown paused on the card
            log.warning("could not set the DAG of %s %s: %s", name, "paused" if suspended else "unpaused", exc)
        self.parse_now(name)

    def modify(self, name: str) -> None:
        """Ask for a parse now: the DAG is rebuilt from the changed definition (schedule, query, upstreams)."""
        self.parse_now(name)

    def delete(self, name: str) -> None:
        """Pause the DAG at once (no run starts), then ask for the parse that drops it; a DAG never parsed is fine."""
        try:
            self.client.set_paused(dag_id(name), True)
        except DagNotFoundError:
            pass
        self.parse_now(name)

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

    def parse_now(self, name: str) -> bool:
        """Ask Airflow to parse the DAG file of ``name``'s catalog now; False when it cannot be asked.

        The file is found through the table's own DAG, else the catalog's DAG of the same file
        (:func:`~mt_magic.scheduling.airflow_dags.catalog_dag`). The statement has already written the catalog, so
        a refusal here is logged, not raised: the DAG then catches up at the DAG processor's next periodic parse.
        """
        try:
            token = self._file_token(name)
            if token:
                self.client.reparse(token)
                for delay in self.parse_follow_ups:  # in case Airflow was parsing the file already (see above)
                    later = threading.Timer(delay, self._reparse_quietly, (token,))
                    later.daemon = True
                    later.start()
            return bool(token)
        except WorkflowSchedulerError as exc:
            log.warning("could not ask Airflow to parse the DAGs of %s now (the next parse catches up): %s", name, exc)
            return False

    def _reparse_quietly(self, token: str) -> None:
        try:
            self.client.reparse(token)
        except WorkflowSchedulerError as exc:
            log.info("a follow-up parse request was refused (the next parse catches up): %s", exc)

    def _file_token(self, name: str) -> str:
        """The file token of the table's DAG, else of its catalog's DAG (the DAG file's own, there before any
        table on Airflow); empty when Airflow has parsed neither yet."""
        for dag in (dag_id(name), catalog_dag_id(name)):
            try:
                return self.client.dag(dag).file_token
            except DagNotFoundError:
                continue
        return ""
