"""The offline fallback (MT_MAGIC_ICEBERG=offline), tested cheaply: no download, no jarjar — the cache checks, the
jar merge and the session settings it produces, on synthetic jars holding the classes the checks look for."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mt_magic.runtime.spark import iceberg_jars, iceberg_maven, session


def _jar(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def test_merge_keeps_every_class_once_and_drops_meta_inf(tmp_path: Path) -> None:
    a = _jar(tmp_path / "a.jar", {"META-INF/MANIFEST.MF": b"m", "x/A.class": b"a1", "x/Shared.class": b"first"})
    b = _jar(tmp_path / "b.jar", {"META-INF/SIG.SF": b"s", "y/B.class": b"b", "x/Shared.class": b"second"})
    iceberg_jars._merge([a, b], tmp_path / "merged.jar")
    with zipfile.ZipFile(tmp_path / "merged.jar") as zf:
        assert sorted(zf.namelist()) == ["x/A.class", "x/Shared.class", "y/B.class"]
        assert zf.read("x/Shared.class") == b"first"


def test_a_valid_offline_cache_goes_on_spark_jars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if iceberg_maven.installed_runtime().spark_line != iceberg_jars.SPARK_LINE:
        pytest.skip("the offline fallback exists for Spark 3.5 only (its refusal is tested in test_iceberg_maven)")
    runtime = _jar(tmp_path / iceberg_jars.RUNTIME_JAR, {iceberg_jars.RUNTIME_CLASS: b""})
    companion = _jar(tmp_path / iceberg_jars.COMPANION_JAR, dict.fromkeys(iceberg_jars.COMPANION_CLASSES, b""))
    monkeypatch.setenv("MT_MAGIC_JARS_DIR", str(tmp_path))
    assert session.iceberg_classpath_conf(session.SparkSettings(iceberg="offline")) == {
        "spark.jars": f"{runtime},{companion}"
    }


def test_a_companion_without_httpclient_5_4_is_not_used(tmp_path: Path) -> None:
    _jar(tmp_path / iceberg_jars.RUNTIME_JAR, {iceberg_jars.RUNTIME_CLASS: b""})
    _jar(tmp_path / iceberg_jars.COMPANION_JAR, dict.fromkeys(iceberg_jars.COMPANION_CLASSES[:2], b""))
    assert iceberg_jars.cached_jars(tmp_path) is None
