"""Airflow's view of a table on Airflow on its card and in ``%mt status``: the last DAG run's state, its start and
end, a link to its log in Airflow's UI, the next run, paused or not.

The card asks its feed (the service) for the cached view on every tick; the service never waits on Airflow (it
answers what it last saw and polls in the background, :mod:`mt_magic.scheduling.airflow_runs`), so a slow or
unreachable Airflow shows as such here and never holds up a keypress.
"""

from __future__ import annotations

import html
from typing import Protocol, runtime_checkable

from mt_magic.runtime.status import TableStatus
from mt_magic.scheduling.airflow_runs import AirflowRunView, run_facts
from mt_magic.vocabulary import WorkflowSchedulerKind

CELL = "text-align:left;padding:1px 8px 1px 0;vertical-align:top"


@runtime_checkable
class AirflowRunSource(Protocol):
    """What answers Airflow's view of a table at once (the service)."""

    def airflow_run(self, name: str) -> AirflowRunView | None: ...


def airflow_rows(source: object, status: TableStatus) -> list[tuple[str, str]]:
    """The card's Airflow lines for ``status`` (none for a table on the kernel, or without a source)."""
    if status.scheduler is not WorkflowSchedulerKind.AIRFLOW or not isinstance(source, AirflowRunSource):
        return []
    return run_facts(source.airflow_run(status.name))


def airflow_html(rows: list[tuple[str, str]]) -> str:
    """The lines as the card's table; the log is a link that opens Airflow's UI."""
    if not rows:
        return ""

    def cell(label: str, text: str) -> str:
        if label == "airflow log" and text.startswith(("http://", "https://")):
            link = html.escape(text, quote=True)
            return f'<a href="{link}" target="_blank" rel="noopener">open the run\'s log in Airflow</a>'
        failed = label == "airflow last run" and text.startswith("failed")
        style = ";color:#dc2626" if failed or text.startswith("unreachable") else ""
        return f'<span style="{style.lstrip(";")}">{html.escape(text)}</span>'

    body = "".join(
        f'<tr class="mt-{label.replace(" ", "-")}"><td style="{CELL};color:#6b7280">{html.escape(label)}</td>'
        f'<td style="{CELL}">{cell(label, text)}</td></tr>'
        for label, text in rows
    )
    return f'<table class="mt-airflow" style="border-collapse:collapse">{body}</table>'


def airflow_text(rows: list[tuple[str, str]]) -> str:
    return "".join(f"\n  {label}: {text}" for label, text in rows)
