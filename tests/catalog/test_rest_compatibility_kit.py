"""Apache Iceberg's REST Compatibility Kit against the embedded server, next to Iceberg's reference server.

The kit (``RESTCompatibilityKitSuite``: iceberg-core's ``CatalogTests`` and ``ViewCatalogTests`` through Java's
``RESTCatalog``, 149 tests) runs unchanged from Iceberg's published test jars, once against
``python -m mt_magic.catalog serve`` and once against ``org.apache.iceberg.rest.RESTCatalogServer``, with the same
properties. The embedded server must pass every test the reference passes and skip exactly what the reference
skips (tests for catalog features neither has: the empty namespace, nested namespaces, dots in names). Both
are told ``rck.requires-namespace-create=true``; the reference's JDBC catalog creates tables in namespaces that
do not exist, so it fails ``tableCreationWithoutNamespace`` under that property (and skips it without it).
The counts of both runs are written to ``test-artifacts/rck-summary.txt``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reference_catalog import KitResult, reference_server, run_kit
from serve_process import serving

pytestmark = pytest.mark.slow

TOKEN = "rck-token"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
KIT_FIXED_ROOTS = (Path("/tmp/ns"), Path("/tmp/newdb"))
"""``CatalogTests`` puts some tables at ``file:/tmp/<namespace>/<table>`` whatever the warehouse."""

EXPECTED_SKIPS = {
    "RESTCompatibilityKitCatalogTests.createAndDropEmptyNamespace()": "the empty namespace",
    "RESTCompatibilityKitCatalogTests.listNamespacesWithEmptyNamespace()": "the empty namespace",
    "RESTCompatibilityKitCatalogTests.listTablesInEmptyNamespace()": "the empty namespace",
    "RESTCompatibilityKitCatalogTests.namespacePropertiesOnEmptyNamespace()": "the empty namespace",
    "RESTCompatibilityKitViewCatalogTests.listViewsInEmptyNamespace()": "the empty namespace",
    "RESTCompatibilityKitCatalogTests.testListNestedNamespaces()": "nested namespaces",
    "RESTCompatibilityKitCatalogTests.testNamespaceWithDot()": "a '.' in a name (rck.supports-names-with-dot)",
    "RESTCompatibilityKitCatalogTests.testTableNameWithDot()": "a '.' in a name (rck.supports-names-with-dot)",
}
"""What the kit skips on both servers, and the catalog feature it would need."""


def _summary(reference: KitResult, embedded: KitResult) -> str:
    lines = [
        "Iceberg REST Compatibility Kit 1.10.1 (rck.requires-namespace-create=true on both)",
        f"reference RESTCatalogServer: {reference.counts()} in {reference.seconds:.0f} s",
        f"embedded mt_magic server:    {embedded.counts()} in {embedded.seconds:.0f} s",
    ]
    lines += [f"reference failed {name}: {why[:200]}" for name, why in sorted(reference.failed.items())]
    lines += [f"embedded failed {name}: {why[:300]}" for name, why in sorted(embedded.failed.items())]
    return "\n".join(lines) + "\n"


def test_the_kit_passes_on_the_embedded_server_as_on_the_reference(tmp_path: Path) -> None:
    created = [root for root in KIT_FIXED_ROOTS if not root.exists()]
    try:
        with reference_server(tmp_path / "reference") as url:
            reference = run_kit(
                url, warehouse=(tmp_path / "reference" / "warehouse").as_uri(), folder=tmp_path / "reference"
            )

        kit = tmp_path / "embedded"
        warehouse = f"file:{kit / 'warehouse'}"  # the form Java and Hadoop print
        roots = [f"file:{kit / 'tmp'}", *(f"file:{root}" for root in KIT_FIXED_ROOTS)]
        allow = [arg for root in roots for arg in ("--allow-location", root)]
        kit.mkdir()
        with serving("--warehouse", warehouse, *allow, token=TOKEN, log=kit / "server.log") as url:
            embedded = run_kit(url, warehouse=warehouse, folder=kit, token=TOKEN)
    finally:
        for root in created:
            shutil.rmtree(root, ignore_errors=True)

    summary = _summary(reference, embedded)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "rck-summary.txt").write_text(summary)
    print(summary)

    assert embedded.failed == {}, summary
    assert set(embedded.skipped) == set(EXPECTED_SKIPS), embedded.skipped
    assert set(reference.skipped) == set(EXPECTED_SKIPS), reference.skipped
    assert reference.passed <= embedded.passed, sorted(reference.passed - embedded.passed)
    assert len(embedded.passed) + len(embedded.skipped) == 149
