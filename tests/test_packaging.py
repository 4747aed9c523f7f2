"""The project's build metadata as the newest setuptools reads it: ``pip install -e .`` (``make demo``, ``make
test``: three virtualenvs) builds in an isolated environment with the newest setuptools the build requirement
admits, which deprecates ``project.license`` as a TOML table ("by 2027-Feb-18 … your builds will no longer be
supported", printed once per virtualenv). The SPDX string form needs setuptools 77.0.3 or later (PEP 639)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())


def test_the_license_is_an_spdx_string_and_the_build_requires_a_setuptools_that_reads_it() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    (setuptools,) = (Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    floor = min(Version(s.version) for s in setuptools.specifier if s.operator in (">=", "=="))
    assert floor >= Version("77.0.3"), setuptools


def test_the_wheel_installs_jupyterlabs_widget_state_override() -> None:
    """JupyterLab reads every package's ``share/jupyter/lab/settings/overrides.d/*.json``: mt_magic's turns on
    saving widget state, so a reopened notebook shows its cards (tests/browser/test_reopened_card_browser.py)."""
    import json

    data_files = PYPROJECT["tool"]["setuptools"]["data-files"]
    (source,) = data_files["share/jupyter/lab/settings/overrides.d"]
    override = json.loads((Path(__file__).resolve().parents[1] / source).read_text())
    assert override == {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
