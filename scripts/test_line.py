"""Run one pytest line of ``make test`` and record what it cost: tests, passed, wall time, JVMs and kernels started.

    python scripts/test_line.py NAME [--log] -- PYTHON -m pytest ARGS...

The command runs with ``--junitxml=.test-times/NAME.xml`` added (every test's setup + call + teardown time; the
durations ``scripts/test_times.py`` sums by area) and its exit status is this script's. ``.test-times/NAME.json``
holds the line's record. With ``--log`` the output goes to ``.test-times/NAME.log`` and is printed when the line
ends, so two lines run side by side do not interleave their output.

What "JVMs" counts: every ``java`` process that this line started, directly or not — the test process's Spark, a
kernel's, a runner's, an Airflow task's, the Spark Connect server, the standalone cluster's master and workers, the
compatibility kit's Maven and server; not counted are ``java -version`` probes and the launcher JVM that
``spark-submit`` runs for a moment to build its command. "Kernels" counts the Jupyter
kernel processes (``ipykernel``). A process belongs to the line when its environment carries the line's
``MT_TEST_LINE`` marker (children inherit it, detached servers included) or the line's pytest is its ancestor.
"CPU" is the user and system time of the line's processes (pytest and everything it started), as ``/proc`` last
showed it ("JVM CPU" the part of it in ``java`` processes): ``/proc`` is sampled every 0.25 s, so a process that
lives less than that can be missed (the JVMs of this suite live for seconds or longer) and a process's last quarter
second is not counted. "CPU wait" is the share of the wall time in which some task on the machine (this line's or
anyone's) waited for a CPU (Linux's pressure stall information): near 0 the machine had spare cores, near 100 %
every core was taken, so the wall time is inflated by whatever else ran.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from mt_magic.loopback import private_dir

TIMES = Path(os.environ.get("MT_TEST_TIMES", ".test-times"))
MARKER = "MT_TEST_LINE"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return b""


class ProcessCounter:
    """Samples ``/proc`` for the processes of one line: its JVMs, its kernels and their CPU time (module docstring)."""

    def __init__(self, marker: bytes, root_pid: int) -> None:
        self.marker = marker
        self.root = str(root_pid)
        self.ours: dict[tuple[str, str], bool] = {}
        self.ticks: dict[tuple[str, str], int] = {}
        self.comms: dict[tuple[str, str], bytes] = {}
        self.jvms: list[str] = []
        self.kernels = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-line-counter", daemon=True)

    @property
    def cpu_seconds(self) -> float:
        """User and system CPU of the line's processes, as last sampled."""
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")

    @property
    def jvm_cpu_seconds(self) -> float:
        """The share of :attr:`cpu_seconds` spent in the line's ``java`` processes."""
        ticks = sum(t for key, t in self.ticks.items() if self.comms.get(key) == b"java")
        return ticks / os.sysconf("SC_CLK_TCK")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self._sample()

    def _sample(self) -> None:
        try:
            pids = [name for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return
        for pid in pids:
            fields = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
            if len(fields) < 20:
                continue
            key = (pid, fields[19].decode())  # the pid and its start time: pids are reused
            if key not in self.ours:
                self.ours[key] = self._is_ours(pid)
            if self.ours[key]:
                self.ticks[key] = int(fields[11]) + int(fields[12])
                comm = _read(f"/proc/{pid}/comm").strip()
                if comm and comm != self.comms.get(key):  # new, or it exec'd (spark-class execs its java)
                    self.comms[key] = comm
                    self._classify(pid, comm)

    def _classify(self, pid: str, comm: bytes) -> None:
        args = _read(f"/proc/{pid}/cmdline").split(b"\0")
        if comm == b"java":
            main = next((a for a in args[1:] if a and not a.startswith(b"-") and b"/" not in a), b"?")
            if b"-version" not in args and main != b"org.apache.spark.launcher.Main":
                self.jvms.append(main.decode(errors="replace").rsplit(".", 1)[-1])
        elif comm.startswith(b"python") and any(b"ipykernel" in a for a in args):
            self.kernels += 1

    def _is_ours(self, pid: str) -> bool:
        if pid == self.root or self.marker in _read(f"/proc/{pid}/environ").split(b"\0"):
            return True
        for _ in range(64):  # ancestry, for a child whose environment was built from scratch
            fields = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
            if len(fields) < 2:
                return False
            pid = fields[1].decode()
            if pid == self.root:
                return True
            if pid in ("0", "1"):
                return False
        return False


def cpu_pressure_us() -> int | None:
    """Microseconds in which some runnable task of the machine waited for a CPU (Linux PSI), or None without it."""
    for line in _read("/proc/pressure/cpu").decode().splitlines():
        if line.startswith("some "):
            return int(line.rsplit("total=", 1)[1])
    return None


def junit_counts(path: Path) -> dict[str, int]:
    """Tests, passed, failed (failures and errors) and skipped from a pytest junit xml."""
    counts = {"tests": 0, "passed": 0, "failed": 0, "skipped": 0}
    if not path.exists():
        return counts
    root = ET.parse(path).getroot()
    for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
        tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        counts["tests"] += tests
        counts["failed"] += failed
        counts["skipped"] += skipped
        counts["passed"] += tests - failed - skipped
    return counts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the line's name in the timing table")
    parser.add_argument("--log", action="store_true", help="write the output to .test-times/NAME.log, print at end")
    parser.usage = "%(prog)s NAME [--log] -- COMMAND..."
    split = argv.index("--") if "--" in argv else len(argv)
    args, command = parser.parse_args(argv[:split]), argv[split + 1 :]
    if not command:
        parser.error("no command after --")
    private_dir(TIMES)  # its logs hold the tests' output: the owner's only, as everything mt_magic writes
    junit = TIMES / f"{args.name}.xml"
    junit.unlink(missing_ok=True)
    command = [*command, f"--junitxml={junit}"]
    marker = f"{args.name}-{os.getpid()}"
    env = {**os.environ, MARKER: marker}
    log_path = TIMES / f"{args.name}.log"
    started_at = time.time()
    start = time.monotonic()
    pressure_at_start = cpu_pressure_us()
    with open(log_path, "wb") if args.log else open(os.devnull, "wb") as log:
        out = log if args.log else None
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT if args.log else None)
        counter = ProcessCounter(f"{MARKER}={marker}".encode(), proc.pid)
        counter.start()
        try:
            status = proc.wait()
        except KeyboardInterrupt:
            proc.wait()
            raise
        finally:
            counter.stop()
    wall = time.monotonic() - start
    pressure_at_end = cpu_pressure_us()
    waited = None if pressure_at_start is None or pressure_at_end is None else pressure_at_end - pressure_at_start
    if args.log:
        sys.stdout.write(log_path.read_text(errors="replace"))
    record = {
        "name": args.name,
        "command": shlex.join(command),
        "exit": status,
        "started": started_at,
        "ended": started_at + wall,
        "wall": round(wall, 1),
        **junit_counts(junit),
        "jvms": len(counter.jvms),
        "jvm_kinds": {kind: counter.jvms.count(kind) for kind in sorted(set(counter.jvms))},
        "kernels": counter.kernels,
        "cpu": round(counter.cpu_seconds, 1),
        "jvm_cpu": round(counter.jvm_cpu_seconds, 1),
        "cpu_wait": None if waited is None else round(100 * waited / 1e6 / wall),
    }
    (TIMES / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"test line {args.name}: exit {status}, {record['tests']} tests, {record['passed']} passed, "
        f"{wall:.0f} s wall, {record['cpu']:.0f} s CPU, {record['jvms']} JVMs, {record['kernels']} kernels",
        flush=True,
    )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
