"""Fallback for machines without Maven Central: the Iceberg runtime for Spark 3.5 assembled offline.

Only with ``MT_MAGIC_ICEBERG=offline``. The standard route is :mod:`mt_magic.runtime.spark.iceberg_maven`
(the official jar from Maven Central). Without Maven Central we assemble the official
``iceberg-spark-runtime-3.5_2.12`` jar from a PyPI wheel that ships it, plus a small companion jar holding
the Jackson and HttpClient 5 classes that the runtime expects under Iceberg's relocated (shaded) package
names. The result lives in a cache directory outside the repository and is reused whenever the class-presence
check passes.

Run ``python -m mt_magic.runtime.spark.iceberg_jars`` to assemble (idempotent); it prints the jar paths.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from mt_magic.errors import RuntimeSetupError

SPARK_LINE = "3.5"
ICEBERG_VERSION = "1.10.2"
RUNTIME_JAR = f"iceberg-spark-runtime-{SPARK_LINE}_2.12-{ICEBERG_VERSION}.jar"
WHEEL_REQUIREMENT = "snowpark-connect-deps-iceberg==1.0.3"
RUNTIME_JAR_SHA256 = "5b30080c7bbbced0fb0900894b7ea0200b1bbb2e4c355ebe727baafaf49c16f6"
COMPANION_JAR = "iceberg-shaded-deps.jar"
HTTPCLIENT_DEBS = ("libhttpclient5-java", "libhttpcore5-java")
JARJAR = Path("/usr/share/java/jarjar.jar")

RUNTIME_CLASS = "org/apache/iceberg/spark/SparkCatalog.class"
COMPANION_CLASSES = (
    "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class",
    # HttpClient >= 5.4 is required by Iceberg 1.10's REST client.
    "org/apache/iceberg/shaded/org/apache/hc/client5/http/ssl/TlsSocketStrategy.class",
)
RELOCATION_RULES = (
    "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
    "rule org.apache.hc.** org.apache.iceberg.shaded.org.apache.hc.@1\n"
)
SETUP_HINT = (
    "Run `MT_MAGIC_ICEBERG=offline make setup` (or `python -m mt_magic.runtime.spark.iceberg_jars`) from the "
    "repository to install and assemble it."
)


@dataclass(frozen=True)
class IcebergJars:
    """The two jars Spark needs on ``spark.jars`` for Iceberg without Maven."""

    runtime: Path
    companion: Path

    def spark_jars(self) -> str:
        """Comma-separated value for ``spark.jars``."""
        return f"{self.runtime},{self.companion}"


def cache_dir() -> Path:
    """Where assembled jars live: ``$MT_MAGIC_JARS_DIR`` or the user's cache directory."""
    explicit = os.environ.get("MT_MAGIC_JARS_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "mt_magic" / f"iceberg-{ICEBERG_VERSION}"


def _has_classes(jar: Path, classes: tuple[str, ...]) -> bool:
    if not jar.is_file():
        return False
    try:
        with zipfile.ZipFile(jar) as zf:
            names = set(zf.namelist())
    except zipfile.BadZipFile:
        return False
    return all(c in names for c in classes)


def cached_jars(directory: Path | None = None) -> IcebergJars | None:
    """The cached jars if both are present and pass the class-presence check, else ``None``."""
    d = directory or cache_dir()
    jars = IcebergJars(d / RUNTIME_JAR, d / COMPANION_JAR)
    if _has_classes(jars.runtime, (RUNTIME_CLASS,)) and _has_classes(jars.companion, COMPANION_CLASSES):
        return jars
    return None


def require_jars() -> IcebergJars:
    """The cached jars, or a clear error saying how to assemble them."""
    jars = cached_jars()
    if jars is None:
        raise RuntimeSetupError(
            f"The Iceberg runtime jars are not in {cache_dir()} (needed: {RUNTIME_JAR} and {COMPANION_JAR}). "
            f"{SETUP_HINT} Where Maven Central is reachable, use MT_MAGIC_ICEBERG=maven (the default) instead."
        )
    return jars


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeSetupError(f"Could not {what}: `{' '.join(cmd)}` failed:\n" + "\n".join(tail) + f"\n{SETUP_HINT}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fetch_runtime_jar(work: Path, target: Path) -> None:
    _run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(work), WHEEL_REQUIREMENT],
        "download the Iceberg runtime wheel",
    )
    wheel = next(work.glob("snowpark_connect_deps_iceberg-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        member = next((n for n in zf.namelist() if n.endswith("/" + RUNTIME_JAR)), None)
        if member is None:
            raise RuntimeSetupError(f"{wheel.name} does not contain {RUNTIME_JAR}. {SETUP_HINT}")
        with zf.open(member) as src, (work / RUNTIME_JAR).open("wb") as dst:
            shutil.copyfileobj(src, dst)
    digest = _sha256(work / RUNTIME_JAR)
    if digest != RUNTIME_JAR_SHA256:
        raise RuntimeSetupError(f"{RUNTIME_JAR} has sha256 {digest}, expected {RUNTIME_JAR_SHA256}; refusing it.")
    shutil.move(str(work / RUNTIME_JAR), target)


def _apt_source_uri() -> str:
    """The Debian archive URI this machine already uses (never hard-coded in the repository)."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.is_file():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if parts[:1] == ["deb"]:
                return next(p for p in parts[1:] if "://" in p)
    raise RuntimeSetupError("Cannot find this machine's Debian archive in /etc/apt; cannot fetch HttpClient 5.")


def _fetch_httpclient_jars(work: Path) -> list[Path]:
    """HttpClient 5.4+ from Debian sid, downloaded into a private apt state (nothing installed system-wide)."""
    sid_list = work / "sid.list"
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    sid_list.write_text(f"deb [signed-by={keyring}] {_apt_source_uri()} sid main\n")
    (work / "lists" / "partial").mkdir(parents=True)
    opts = [
        "-o",
        f"Dir::Etc::sourcelist={sid_list}",
        "-o",
        "Dir::Etc::sourceparts=-",
        "-o",
        f"Dir::State::Lists={work / 'lists'}",
        "-o",
        f"Dir::Cache={work / 'cache'}",
    ]
    _run(["apt-get", *opts, "update"], "read Debian sid's package list")
    _run(["apt-get", *opts, "download", *HTTPCLIENT_DEBS], "download HttpClient 5 from Debian", cwd=work)
    extracted = work / "x"
    for deb in work.glob("*.deb"):
        _run(["dpkg", "-x", str(deb), str(extracted)], f"unpack {deb.name}")
    return sorted(p for p in (extracted / "usr/share/java").glob("*.jar") if not p.is_symlink())


def _jackson_jars() -> list[Path]:
    import pyspark

    jar_dir = Path(pyspark.__file__).parent / "jars"
    wanted = re.compile(r"jackson-(core|databind|annotations)-[\d.]+\.jar")
    jars = [p for p in jar_dir.glob("jackson-*.jar") if wanted.fullmatch(p.name)]
    if len(jars) != 3:
        raise RuntimeSetupError(f"Expected jackson-core/-databind/-annotations in {jar_dir}, found {jars}.")
    return jars


def _merge(jars: list[Path], out: Path) -> None:
    """One jar holding every class of ``jars`` (META-INF dropped: signatures and manifests do not survive)."""
    seen: set[str] = set()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for jar in jars:
            with zipfile.ZipFile(jar) as src:
                for name in src.namelist():
                    if name.startswith("META-INF") or name.endswith("/") or name in seen:
                        continue
                    seen.add(name)
                    dst.writestr(name, src.read(name))


def _build_companion(work: Path, target: Path) -> None:
    if not JARJAR.is_file():
        raise RuntimeSetupError(f"{JARJAR} is missing (Debian package libjarjar-java). {SETUP_HINT}")
    merged = work / "merged.jar"
    _merge(_jackson_jars() + _fetch_httpclient_jars(work), merged)
    rules = work / "rules.txt"
    rules.write_text(RELOCATION_RULES)
    _run(
        ["java", "-jar", str(JARJAR), "process", str(rules), str(merged), str(work / COMPANION_JAR)],
        "relocate Jackson and HttpClient 5 with jarjar",
    )
    shutil.move(str(work / COMPANION_JAR), target)


def assemble(directory: Path | None = None) -> IcebergJars:
    """Assemble the jars into the cache directory unless they are already there and valid."""
    d = directory or cache_dir()
    existing = cached_jars(d)
    if existing is not None:
        return existing
    if shutil.which("java") is None:
        raise RuntimeSetupError(f"Java is not installed (Spark needs Java 17). {SETUP_HINT}")
    d.mkdir(parents=True, exist_ok=True)
    runtime, companion = d / RUNTIME_JAR, d / COMPANION_JAR
    with tempfile.TemporaryDirectory(prefix="mt-magic-jars-") as tmp:
        work = Path(tmp)
        if not _has_classes(runtime, (RUNTIME_CLASS,)):
            (work / "wheel").mkdir()
            _fetch_runtime_jar(work / "wheel", runtime)
        if not _has_classes(companion, COMPANION_CLASSES):
            (work / "deps").mkdir()
            _build_companion(work / "deps", companion)
    jars = cached_jars(d)
    if jars is None:
        raise RuntimeSetupError(f"The assembled jars in {d} fail the class-presence check. {SETUP_HINT}")
    return jars


def main() -> int:
    try:
        jars = assemble()
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(jars.runtime)
    print(jars.companion)
    return 0


if __name__ == "__main__":
    sys.exit(main())
