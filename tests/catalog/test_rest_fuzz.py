"""The spec as a test: schemathesis generates requests for every operation of Iceberg's REST spec, valid and
invalid, and none gets a server error; every 4xx is the spec's ErrorModel (see ``spec_fuzzing.py``; the
longer run is ``benchmarks/bench_catalog_fuzz.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_process import serving
from spec_fuzzing import fuzz

pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 4  # per generation mode; the benchmark runs many more


def test_generated_requests_get_no_server_error(tmp_path: Path) -> None:
    with serving("--warehouse", str(tmp_path / "warehouse"), log=tmp_path / "server.log") as url:
        report = fuzz(url, EXAMPLES_PER_OPERATION, derandomize=True)  # repeatable in the suite
    print(report.summary())
    assert report.requests > 200, report.summary()
    assert report.server_errors == [], "\n".join(report.server_errors)
    assert report.not_error_model == [], "\n".join(report.not_error_model)
    assert report.statuses.get(200, 0) > 10, report.summary()  # the seeded objects were really reached
