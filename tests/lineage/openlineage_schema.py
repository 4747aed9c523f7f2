"""Validation against the published OpenLineage JSON schema (``spec/``): the event, then each facet against its
own facet schema; a facet with no schema here fails, except mt_magic's own run facet (checked as a ``RunFacet``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SPEC = Path(__file__).parent / "spec"
OWN_FACETS = {"mt_magic_refresh"}


KINDS = ("OutputDatasetFacet", "InputDatasetFacet", "DatasetFacet", "RunFacet", "JobFacet")


def _load() -> tuple[dict[str, Any], dict[tuple[str, str], dict[str, Any]], Registry]:
    """The event schema, each facet schema by (kind, key), and a registry resolving their references."""
    event = json.loads((SPEC / "OpenLineage.json").read_text())
    facets: dict[tuple[str, str], dict[str, Any]] = {}
    resources = [(event["$id"], Resource.from_contents(event))]
    for path in sorted((SPEC / "facets").glob("*.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
        kind = next(k for k in KINDS if path.stem.endswith(k))
        for key in schema.get("properties", {}):
            facets[kind, key] = schema
    return event, facets, Registry().with_resources(resources)


EVENT, FACETS, REGISTRY = _load()


def problems(event: dict[str, Any]) -> list[str]:
    """Every way ``event`` breaks the schema (empty: valid)."""
    found = [f"event: {e.message}" for e in Draft202012Validator(EVENT, registry=REGISTRY).iter_errors(event)]
    groups = [
        ("RunFacet", event.get("run", {}).get("facets", {})),
        ("JobFacet", event.get("job", {}).get("facets", {})),
    ]
    for dataset in [*event.get("inputs", []), *event.get("outputs", [])]:
        groups += [("DatasetFacet", dataset.get("facets", {}))]
        groups += [("InputDatasetFacet", dataset.get("inputFacets", {}))]
        groups += [("OutputDatasetFacet", dataset.get("outputFacets", {}))]
    for kind, group in groups:
        for key, facet in group.items():
            if key in OWN_FACETS:
                continue
            schema = FACETS.get((kind, key))
            if schema is None:
                found.append(f"facet {key}: no published schema here")
                continue
            validator = Draft202012Validator(schema, registry=REGISTRY)
            found += [f"facet {key}: {e.message}" for e in validator.iter_errors({key: facet})]
    return found
