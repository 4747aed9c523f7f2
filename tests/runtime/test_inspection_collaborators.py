"""The service's read-only half is given what it asks of the rest explicitly (issue 37): the manager, how to track
a table the manager does not know yet, and Airflow's cached view of a table, rather than methods its subclass
overrides. Spark-free: a stand-in manager."""

from __future__ import annotations

from types import SimpleNamespace

from mt_magic.runtime.inspect.questions import Inspection
from mt_magic.runtime.service import MaterializedTables


class _Manager:
    def __init__(self) -> None:
        self.known: set[str] = set()

    def status(self, name: str) -> str:
        assert name in self.known, f"{name} asked of the manager before it was tracked"
        return f"status of {name}"


def test_inspection_asks_its_given_collaborators() -> None:
    manager = _Manager()
    tracked: list[str] = []

    def track(name: str) -> None:
        tracked.append(name)
        manager.known.add(name)

    view = object()
    inspection = Inspection(
        SimpleNamespace(workspace="ws"),  # type: ignore[arg-type]
        manager,  # type: ignore[arg-type]
        track=track,
        airflow_runs=lambda name: view if name == "mt.ns.on_airflow" else None,
    )
    assert inspection.status("mt.ns.t") == "status of mt.ns.t" and tracked == ["mt.ns.t"]
    assert inspection.airflow_run("mt.ns.on_airflow") is view and inspection.airflow_run("mt.ns.t") is None
    assert inspection.workspace == "ws"


def test_no_method_of_inspection_exists_only_to_be_overridden() -> None:
    """Each method the service inherits from Inspection runs as Inspection defines it (no stub it replaces)."""
    overridden = {
        name
        for name, member in vars(Inspection).items()
        if callable(member) and not name.startswith("__") and vars(MaterializedTables).get(name) is not None
    }
    assert overridden == set()
