"""Spec-driven fuzzing of the REST catalog server with schemathesis (imported by name by the suite's
``test_rest_fuzz.py`` and by ``benchmarks/bench_catalog_fuzz.py``).

The spec is Iceberg's ``rest-catalog-open-api.yaml``, shipped unchanged beside this file (from
``open-api/rest-catalog-open-api.yaml`` in apache/iceberg, Apache License 2.0). The optional ``{prefix}``
path segment is removed, since ``/v1/config`` returns none. Before each operation a namespace, two tables
and a view are (re)created, and half the requests of every operation name them in their path, so generated
bodies reach the real handlers instead of a 404. Every response goes through schemathesis'
``not_a_server_error`` check; every 4xx must also be the spec's ``ErrorModel``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok

SPEC_FILE = Path(__file__).with_name("rest-catalog-open-api.yaml")
NAMESPACE, TABLES, VIEW = "fuzz", ("t1", "t2"), "v1"
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
VIEW_VERSION = {
    "version-id": 1,
    "timestamp-ms": 1,
    "schema-id": 0,
    "summary": {},
    "representations": [{"type": "sql", "sql": "SELECT 1 AS id", "dialect": "spark"}],
    "default-namespace": [NAMESPACE],
}


@dataclass
class FuzzReport:
    """What a run sent and what came back wrong."""

    requests: int = 0
    server_errors: list[str] = field(default_factory=list)
    not_error_model: list[str] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    def summary(self) -> str:
        by_status = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        return (
            f"requests generated: {self.requests}; server errors (5xx): {len(self.server_errors)}; "
            f"4xx not in ErrorModel shape: {len(self.not_error_model)}; statuses: {by_status}"
        )


def load_spec() -> dict[str, Any]:
    """The shipped spec with the ``{prefix}`` segment and its parameter removed."""
    raw = yaml.safe_load(SPEC_FILE.read_text())
    paths = {}
    for path, item in raw["paths"].items():
        item = copy.deepcopy(item)
        for holder in [item, *(v for v in item.values() if isinstance(v, dict))]:
            if isinstance(holder.get("parameters"), list):
                holder["parameters"] = [p for p in holder["parameters"] if "prefix" not in p.get("$ref", "")]
        paths[path.replace("/{prefix}", "")] = item
    raw["paths"] = paths
    return raw


def seed(base_url: str) -> None:
    """(Re)create the namespace, tables and view the generated requests are pointed at (a drop may have
    removed them)."""
    with httpx.Client(base_url=base_url, timeout=30) as http:
        if http.head(f"/v1/namespaces/{NAMESPACE}").status_code != 204:
            http.post("/v1/namespaces", json={"namespace": [NAMESPACE]})
        for table in TABLES:
            if http.head(f"/v1/namespaces/{NAMESPACE}/tables/{table}").status_code != 204:
                http.post(f"/v1/namespaces/{NAMESPACE}/tables", json={"name": table, "schema": SCHEMA})
        if http.head(f"/v1/namespaces/{NAMESPACE}/views/{VIEW}").status_code != 204:
            body = {"name": VIEW, "schema": SCHEMA, "view-version": VIEW_VERSION}
            http.post(f"/v1/namespaces/{NAMESPACE}/views", json=body)


def _is_error_model(response: requests.Response) -> bool:
    try:
        error = response.json()["error"]
        return isinstance(error["message"], str) and isinstance(error["type"], str) and isinstance(error["code"], int)
    except (ValueError, KeyError, TypeError):
        return False


def _record(case: Any, response: requests.Response, report: FuzzReport) -> None:
    report.requests += 1
    report.statuses[response.status_code] = report.statuses.get(response.status_code, 0) + 1
    where = f"{case.method} {case.formatted_path}"
    try:
        case.validate_response(response, checks=[not_a_server_error])
    except Exception as exc:  # schemathesis' failure group: keep going, report them all
        report.server_errors.append(f"{where} -> {response.status_code}: {response.text[:300]} ({type(exc).__name__})")
    if 400 <= response.status_code < 500 and case.method != "HEAD" and not _is_error_model(response):
        report.not_error_model.append(f"{where} -> {response.status_code}: {response.text[:200]}")


def _seeded_path(parameters: list[str], index: int) -> dict[str, Any]:
    values = {"namespace": NAMESPACE, "table": TABLES[index % 2], "view": VIEW}
    return {name: values[name] for name in parameters if name in values}


def fuzz(
    base_url: str, examples: int, *, derandomize: bool = False, log: Callable[[str], None] = lambda _: None
) -> FuzzReport:
    """Send up to ``examples`` generated requests per operation and generation mode (half seeded).

    ``derandomize`` makes the run repeatable (the suite); the benchmark explores new inputs every run.
    """
    schema = schemathesis.openapi.from_dict(load_spec())
    report = FuzzReport()
    session = requests.Session()
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            raise AssertionError(f"The spec has an operation schemathesis cannot read: {result.err()}")
        operation = result.ok()
        names = [p.name for p in operation.path_parameters]
        seed(base_url)
        for index, mode in enumerate((schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)):
            seeded = _seeded_path(names, index)
            for fixed in ({}, seeded) if seeded else ({},):
                strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed or None)
                share = max(1, examples // 2) if seeded else examples
                _run(strategy, share, derandomize, lambda case: _record(case, case.call(base_url, session), report))
        log(f"{operation.label}: {report.summary()}")
    return report


def _run(strategy: Any, examples: int, derandomize: bool, check: Callable[[Any], None]) -> None:
    @settings(
        max_examples=examples,
        derandomize=derandomize,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        check(case)

    run()
