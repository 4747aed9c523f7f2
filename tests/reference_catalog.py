"""Apache Iceberg's own REST catalog server and its REST Compatibility Kit (RCK), from the compiled jars that
``scripts/setup.sh --test`` resolves with Maven (``tests/catalog/rck/pom.xml``) into the cache.

Imported by name: pytest puts ``tests/`` on sys.path for its conftest.py. Two uses:

* :func:`reference_server` starts ``org.apache.iceberg.rest.RESTCatalogServer`` (the test-fixtures jar of
  ``iceberg-open-api``: Java's ``RESTCatalogAdapter`` over a ``JdbcCatalog`` in SQLite) on a free port and answers
  its URL — a catalog mt_magic did not write, for the integration tests' second catalog line;
* :func:`run_kit` runs ``RESTCompatibilityKitSuite`` (iceberg-core's ``CatalogTests`` and ``ViewCatalogTests``
  through Java's ``RESTCatalog``) against any REST catalog with the JUnit Platform console launcher and reads
  the launcher's XML report.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from listening import listens

from mt_magic.loopback import free_port

POM = Path(__file__).resolve().parent / "catalog" / "rck" / "pom.xml"
SUITE = "org.apache.iceberg.rest.RESTCompatibilityKitSuite"
SERVER_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
LAUNCHER = "junit-platform-console-standalone"
START_TIMEOUT_S = 90.0
KIT_TIMEOUT_S = 600.0


class KitMissing(RuntimeError):
    """The kit's jars are not in the cache (``scripts/setup.sh --test`` fetches them)."""


def kit_dir() -> Path:
    """The cache folder of the jars for the current pom: ``<cache>/mt_magic/rck/<pom digest>``, as setup.sh
    names it (``$MT_MAGIC_JARS_DIR`` replaces ``<cache>/mt_magic``)."""
    base = os.environ.get("MT_MAGIC_JARS_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mt_magic"
    )
    return Path(base) / "rck" / hashlib.sha256(POM.read_bytes()).hexdigest()[:16]


def kit_jars() -> list[Path]:
    """Every jar of the kit and the reference server.

    Raises:
        KitMissing: setup has not fetched them for this version of the pom.
    """
    folder = kit_dir()
    if not (folder / "complete").is_file():
        raise KitMissing(
            f"Iceberg's REST Compatibility Kit is not in {folder}: run `bash scripts/setup.sh --test` "
            "(or `make setup-test`), which resolves tests/catalog/rck/pom.xml with Maven"
        )
    return sorted((folder / "lib").glob("*.jar"))


def _classpath(jars: list[Path]) -> str:
    return os.pathsep.join(str(j) for j in jars if not j.name.startswith(LAUNCHER))


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/config", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


START_ATTEMPTS = 3


@contextmanager
def reference_server(folder: Path) -> Iterator[str]:
    """Run Iceberg's reference REST catalog until the block ends; yields its URL (``http://127.0.0.1:<port>``).

    Its warehouse is ``folder/warehouse`` and its catalog a SQLite file in ``folder`` (the server's default,
    an in-memory database, is one database per JDBC connection). It is configured as its own docs say, by
    ``CATALOG_*`` environment variables; it takes no token. It logs to ``folder/reference-server.log``. The URL
    counts only once the server's own process listens on the port (another catalog of the suite may have taken
    the free port first: then the server exits, and starts again on another port).
    """
    jars = kit_jars()
    warehouse = folder / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
    env |= {"CATALOG_WAREHOUSE": warehouse.as_uri(), "CATALOG_URI": f"jdbc:sqlite:{folder / 'reference-catalog.db'}"}
    log = folder / "reference-server.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(START_ATTEMPTS):
            port = free_port()
            with log.open("ab") as out:
                proc = subprocess.Popen(
                    ["java", "-cp", _classpath(jars), SERVER_MAIN],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env | {"CATALOG_REST_PORT": str(port)},
                )
            url = f"http://127.0.0.1:{port}"
            if _started(url, proc, port):
                break
            _end(proc)
        else:
            raise AssertionError(f"Iceberg's reference REST server did not start:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        if proc is not None:
            _end(proc)


def _started(url: str, proc: subprocess.Popen[bytes], port: int) -> bool:
    """Whether ``proc`` answers on ``url`` itself; False once it has exited (its port was taken) or timed out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (_answers(url) and listens(proc.pid, port)):
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _end(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


@dataclass(frozen=True)
class KitResult:
    """One run of the kit: each test's display name (``Class.method(args)``) by outcome, with the reason."""

    passed: frozenset[str]
    failed: dict[str, str]
    skipped: dict[str, str]
    seconds: float

    def counts(self) -> str:
        return f"{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped"


def _read_report(report: Path, seconds: float) -> KitResult:
    passed: set[str] = set()
    failed: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        skip = case.find("skipped")
        if problem is not None:
            failed[name] = (problem.get("message") or problem.text or "").strip()[:500]
        elif skip is not None:
            text = (skip.get("message") or skip.text or "").strip()
            skipped[name] = text.split("\n", 1)[0][:300]
        else:
            passed.add(name)
    return KitResult(frozenset(passed), failed, skipped, seconds)


def run_kit(
    uri: str,
    *,
    warehouse: str,
    folder: Path,
    token: str | None = None,
    requires_namespace_create: bool = True,
) -> KitResult:
    """Run the REST Compatibility Kit against the catalog at ``uri``.

    Args:
        uri: the catalog's REST endpoint.
        warehouse: the ``warehouse`` the kit's client sends.
        folder: for the launcher's report, its output and the JVM's temporary directory (the kit creates
            tables and views under the JVM's ``java.io.tmpdir`` and under ``file:/tmp/ns`` and
            ``file:/tmp/newdb``).
        token: the bearer token, if the catalog wants one.
        requires_namespace_create: the kit's ``rck.requires-namespace-create`` (the catalog refuses tables in
            namespaces that do not exist).
    """
    jars = kit_jars()
    launcher = next(j for j in jars if j.name.startswith(LAUNCHER))
    reports, tmp = folder / "reports", folder / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    props = {
        "java.io.tmpdir": str(tmp),
        "rck.local": "false",
        "rck.requires-namespace-create": str(requires_namespace_create).lower(),
        "uri": uri,
        "warehouse": warehouse,
    }
    if token:
        props["token"] = token
    cmd = [
        "java",
        *(f"-D{key}={value}" for key, value in props.items()),
        "-jar",
        str(launcher),
        "execute",
        "--class-path",
        _classpath(jars),
        "--select-class",
        SUITE,
        "--config",
        "rck.local=false",
        "--reports-dir",
        str(reports),
        "--details",
        "none",
        "--disable-banner",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
    started = time.monotonic()
    with (folder / "kit-output.log").open("wb") as out:
        subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=KIT_TIMEOUT_S, check=False)
    report = reports / "TEST-junit-platform-suite.xml"
    if not report.is_file():
        raise AssertionError(f"The kit wrote no report:\n{(folder / 'kit-output.log').read_text()[-3000:]}")
    return _read_report(report, time.monotonic() - started)
