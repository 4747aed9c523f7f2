"""Which process listens on a loopback port, from Linux's ``/proc`` (imported by name).

A fixture that picks a free port and starts a server can lose the port to another server of the suite before its
own binds it; the other server then answers in its place. :func:`listens` tells whether the answer comes from the
process the fixture started: the listening socket's inode (``/proc/net/tcp``) is among that process's open files.
"""

from __future__ import annotations

import os
from pathlib import Path

LISTEN = "0A"


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on ``port``."""
    wanted = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not wanted:
        return False
    folder = Path(f"/proc/{pid}/fd")
    try:
        links = os.listdir(folder)
    except OSError:
        return False
    for fd in links:
        try:
            if os.readlink(folder / fd) in wanted:
                return True
        except OSError:
            continue
    return False
