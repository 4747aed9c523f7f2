"""The wheel holds every file of the package that git tracks: a data file the code reads (the driver's logging
settings, the UI filter's source) left out of ``package-data`` works from a checkout and fails once installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILT_FROM = ("pyproject.toml", "README.md", "mt_magic", "jupyter-config")
"""What a build reads: copied alone, so no build output left in the checkout (``*.egg-info``) adds files."""


def _tracked(*paths: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, check=True, capture_output=True, text=True)
    return listed.stdout.split()


def test_the_wheel_holds_every_tracked_file_of_the_package(tmp_path: Path) -> None:
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
