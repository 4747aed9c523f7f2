"""The project's build metadata as the newest setuptools reads it: ``pip install -e .`` (``make demo``, ``make
test``: three virtualenvs) builds in an isolated environment with the newest setuptools the build requirement
admits, which deprecates ``project.license`` as a TOML table ("by 2027-Feb-18 … your builds will no longer be
supported", printed once per virtualenv). The SPDX string form needs setuptools 77.0.3 or later (PEP 639)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BUILT_FROM = ("pyproject.toml", "README.md", "mt_magic", "jupyter-config")
"""What a build reads: copied alone, so no build output left in the checkout (``*.egg-info``) adds files."""


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


def _tracked(*paths: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, check=True, capture_output=True, text=True)
    return listed.stdout.split()


def test_the_wheel_holds_every_tracked_file_of_the_package_and_the_override(tmp_path: Path) -> None:
    """A data file the code reads (the driver's logging settings, the UI filter's source) left out of
    ``package-data`` works from a checkout and fails once installed: the wheel, built from the tracked files alone,
    holds every tracked file of the package, and JupyterLab's override among its data files."""
    source = tmp_path / "source"
    for path in _tracked(*BUILT_FROM):
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, source / path)
    built = tmp_path / "wheel"
    pip = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(built)]
    subprocess.run(pip, check=True, capture_output=True)
    (wheel,) = built.glob("mt_magic-*.whl")
    packed = set(zipfile.ZipFile(wheel).namelist())
    package = _tracked("mt_magic")
    assert package and [path for path in package if path not in packed] == []
    assert any(p.endswith("share/jupyter/lab/settings/overrides.d/mt_magic.json") for p in packed), sorted(packed)
