"""The token on Spark's web UIs that mt_magic opens: only their owner gets in.

``spark.authenticate`` does not cover Spark's web pages: a driver's UI (jobs, SQL plans, the environment; kill links
when ``spark.ui.killEnabled``) and a standalone master's and workers' (the workers' show executors' stdout and
stderr) answer anyone who reaches their port, another local user or a web page in the owner's browser. So every UI
mt_magic opens gets :file:`UiTokenFilter.java` through ``spark.ui.filters`` (Spark installs it on every page of a
driver's, master's or worker's UI): a request needs the UI's token as ``Authorization: Bearer``, or the cookie that
opening :func:`entry_link` once sets. The token reaches the JVM as the filter's parameter in a 0600 properties file,
never on a command line.

The filter is compiled on first use, for the servlet API the installed PySpark has (``javax.servlet`` in Spark 3.5,
``jakarta.servlet`` in Spark 4), into an owner-only cache under ``MT_MAGIC_HOME`` keyed by the source's hash; that
needs ``javac`` (a JDK). Without it a driver's UI is turned off (with a warning), and a cluster does not start.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from mt_magic.catalog.embedded import mt_home
from mt_magic.errors import RuntimeSetupError
from mt_magic.loopback import owner_only
from mt_magic.runtime.spark.properties import environment_while

FILTER_CLASS = "mt_magic.spark.UiTokenFilter"
SOURCE = Path(__file__).with_name("UiTokenFilter.java")
FILTERS_CONF = "spark.ui.filters"
TOKEN_CONF = f"spark.{FILTER_CLASS}.param.token"
"""The filter's token as Spark hands it over (``spark.<filter class>.param.<name>``); Spark's redaction hides it
(its name says ``token``)."""
HINT_CONF = f"spark.{FILTER_CLASS}.param.hint"
UI_CONF = "spark.ui.enabled"
CLASSPATH_ENV = "SPARK_DIST_CLASSPATH"
"""Spark's launcher adds it to every JVM's classpath: the driver's (``spark-submit``) and the daemons'."""
NO_JAVAC = (
    "javac (a Java compiler) is not installed, and mt_magic compiles the filter that keeps Spark's web pages to their "
    "owner with it"
)
JAVAC_FIX = "install a JDK (Debian: apt-get install openjdk-17-jdk-headless, as `make setup` does) or set JAVA_HOME"


SESSION_HINT = "mt_magic.runtime.spark.ui_auth.ui_link(spark) in the session's Python gives that link."


def new_token() -> str:
    return secrets.token_hex(32)


def servlet_flavour(jars: Path | None = None) -> tuple[str, Path]:
    """Which servlet API the installed Spark's Jetty uses (``javax`` or ``jakarta``) and the jar that declares it."""
    if jars is None:
        import pyspark

        jars = Path(pyspark.__file__).parent / "jars"
    found: dict[str, Path] = {}
    for jar in sorted(jars.glob("*servlet-api*.jar")):
        with zipfile.ZipFile(jar) as archive:
            names = set(archive.namelist())
        for flavour in ("jakarta", "javax"):
            if f"{flavour}/servlet/Filter.class" in names:
                found.setdefault(flavour, jar)
    for flavour in ("jakarta", "javax"):  # Spark 4 ships both; its Jetty serves jakarta's
        if flavour in found:
            return flavour, found[flavour]
    raise RuntimeSetupError(f"No servlet API jar in {jars}: this PySpark install has no web UI to guard.")


def _javac() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").exists():
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def filter_classes(home: Path | None = None) -> Path:
    """The folder that holds the compiled filter for the installed Spark (a classpath entry), compiled now if missing.

    Raises:
        RuntimeSetupError: no ``javac``, or it refused the source (the message says what to do).
    """
    flavour, api_jar = servlet_flavour()
    source = SOURCE.read_text(encoding="utf-8")
    if flavour == "jakarta":
        source = source.replace("javax.servlet", "jakarta.servlet")
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    cache = (home or mt_home()) / "spark-ui-filter"
    target = cache / f"{flavour}-{key}"
    if (target / "mt_magic" / "spark" / "UiTokenFilter.class").is_file():
        return target
    javac = _javac()
    if javac is None:
        raise RuntimeSetupError(f"{NO_JAVAC}.", fix=JAVAC_FIX + ".")
    with owner_only():
        cache.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
    (work / "UiTokenFilter.java").write_text(source, encoding="utf-8")
    release = "8" if flavour == "javax" else "17"  # the oldest Java each Spark line runs on
    compiled = subprocess.run(
        [javac, "-nowarn", "-Xlint:-options", "--release", release, "-cp", str(api_jar), "-d", str(work / "classes")]
        + [str(work / "UiTokenFilter.java")],
        capture_output=True,
        text=True,
        umask=0o077,
    )
    if compiled.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeSetupError(
            f"javac did not compile {SOURCE.name} against {api_jar.name}: {compiled.stderr.strip()[-800:]}",
            fix=JAVAC_FIX + " (Java 17 or newer).",
        )
    try:
        (work / "classes").rename(target)  # whole or not at all: another process may compile the same at once
    except OSError:
        if not target.is_dir():
            raise
    shutil.rmtree(work, ignore_errors=True)
    return target


def filter_conf(token: str, hint: str = "") -> dict[str, str]:
    """The settings that put the filter with ``token`` on a JVM's web UIs (for a 0600 properties file only)."""
    conf = {FILTERS_CONF: FILTER_CLASS, TOKEN_CONF: token}
    if hint:
        conf[HINT_CONF] = hint
    return conf


def entry_link(ui_url: str, token: str) -> str:
    """The link that lets the owner's browser in: it sets the cookie, then drops the token from the address."""
    return f"{ui_url.rstrip('/')}/?token={token}"


def classpath_env(classes: Path, env: Mapping[str, str] | None = None, name: str = CLASSPATH_ENV) -> dict[str, str]:
    """``name`` (a launcher's classpath variable) with ``classes`` first, keeping what ``env`` already had."""
    current = (env if env is not None else os.environ).get(name, "")
    return {name: os.pathsep.join(filter(None, [str(classes), current]))}


def guarded_driver_conf(conf: Mapping[str, str], hint: str = SESSION_HINT) -> tuple[dict[str, str], Path | None]:
    """For a driver about to start with ``conf``: the settings to add (a fresh token for its UI, in a 0600 properties
    file) and the filter's classes, when its UI is on. When ``javac`` is missing the UI is turned off instead, with a
    warning: a page nobody guards is not opened."""
    if str(conf.get(UI_CONF, "true")).lower() != "true" or conf.get(FILTERS_CONF):
        return {}, None  # no UI, or the user installed filters of their own (they decide who gets in)
    try:
        classes = filter_classes()
    except RuntimeSetupError as exc:
        print(f"mt_magic: Spark's web UI is turned off: {exc}", file=sys.stderr)
        return {UI_CONF: "false"}, None
    return filter_conf(new_token(), hint), classes


@contextmanager
def on_launch_classpath(classes: Path | None) -> Iterator[None]:
    """While the block starts a PySpark driver, its launcher puts ``classes`` on the JVM's classpath."""
    if classes is None:
        yield
        return
    with environment_while(CLASSPATH_ENV, classpath_env(classes)[CLASSPATH_ENV]):
        yield


def ui_link(spark: object) -> str | None:
    """The owner's way into a classic session's web UI (``None`` when it has none, or no token of mt_magic's)."""
    sc = spark.sparkContext  # type: ignore[attr-defined]
    url = sc.uiWebUrl
    token = sc.getConf().get(TOKEN_CONF)
    if not url:
        return None
    return entry_link(url, token) if token else url
