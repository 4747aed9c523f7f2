"""Spark settings that hold secrets, handed to a JVM in a properties file only its owner reads, never on its command
line (every local user reads command lines with ``ps``).

Spark reads a properties file where it would read ``spark-defaults.conf``: ``spark-submit --properties-file`` (the
Spark Connect server, a PySpark driver through ``PYSPARK_SUBMIT_ARGS``) and the standalone master's and workers'
``--properties-file``. A file given so replaces ``spark-defaults.conf`` (Spark 3.5; 4.x without
``--load-spark-defaults``), so a driver's file starts with the user's own defaults, copied as they are.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from mt_magic.loopback import owner_only

SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"
"""PySpark's own: the arguments ``launch_gateway`` gives ``spark-submit`` after the session's ``--conf`` settings."""
DEFAULT_SUBMIT_ARGS = "pyspark-shell"


def escaped(value: str) -> str:
    """A value as a Java properties file reads it back (Spark reads the file as UTF-8)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def write_private(path: Path, conf: Mapping[str, str], head: str = "") -> Path:
    """Write ``conf`` (after ``head``, text copied as it is) to ``path``, made anew 0600 (its folder 0700)."""
    lines = [f"{key}={escaped(value)}\n" for key, value in conf.items()]
    with owner_only():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # an existing file keeps its mode: make a new one
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            if head:
                out.write(head if head.endswith("\n") else head + "\n")
            out.writelines(lines)
    return path


def user_defaults(spark_home: Path | None = None) -> str:
    """The text of the ``spark-defaults.conf`` Spark would read without a properties file: ``$SPARK_CONF_DIR``'s,
    else that of ``spark_home`` (default: PySpark's Spark home); empty when there is none."""
    if spark_home is None:
        try:
            from pyspark.find_spark_home import _find_spark_home

            spark_home = Path(_find_spark_home())
        except Exception:  # noqa: BLE001 - no Spark home: no defaults file to keep
            spark_home = None
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    folder = Path(conf_dir) if conf_dir else (spark_home / "conf" if spark_home else None)
    found = folder / "spark-defaults.conf" if folder else None
    return found.read_text(encoding="utf-8") if found is not None and found.is_file() else ""


def _split_properties_file(args: list[str]) -> tuple[list[str], Path | None]:
    """``args`` without a ``--properties-file`` the user gave, and that file."""
    rest: list[str] = []
    given: Path | None = None
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "--properties-file" and i + 1 < len(args):
            given, skip = Path(args[i + 1]), True
        elif arg.startswith("--properties-file="):
            given = Path(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return rest, given


@contextmanager
def driver_launch_properties(conf: Mapping[str, str], folder: Path) -> Iterator[None]:
    """While the block starts a PySpark driver (``SparkSession.builder.getOrCreate()``), its ``spark-submit`` reads
    ``conf`` from a 0600 file in ``folder`` (with the user's ``spark-defaults.conf``, or the ``--properties-file``
    their ``PYSPARK_SUBMIT_ARGS`` names, first): the settings reach the driver's ``SparkConf`` as if given with
    ``--conf``, without being on its command line. The file is removed when the block ends (the JVM reads it when
    it starts); ``PYSPARK_SUBMIT_ARGS`` is restored. Nothing happens for an empty ``conf``.
    """
    if not conf:
        yield
        return
    previous = os.environ.get(SUBMIT_ARGS_ENV)
    args, given = _split_properties_file(shlex.split(previous or DEFAULT_SUBMIT_ARGS))
    args = args or [DEFAULT_SUBMIT_ARGS]
    head = given.read_text(encoding="utf-8") if given is not None else user_defaults()
    with owner_only():
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="driver-", suffix=".conf", dir=folder)  # 0600
    os.close(fd)
    path = write_private(Path(name), conf, head)
    try:
        with environment_while(SUBMIT_ARGS_ENV, shlex.join(["--properties-file", str(path), *args])):
            yield
    finally:
        path.unlink(missing_ok=True)


@contextmanager
def environment_while(name: str, value: str) -> Iterator[None]:
    """``os.environ[name]`` is ``value`` while the block runs (a PySpark launcher reads it), then as it was."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous
