"""Acting from outside: as a second local user (``runuser``), through the catalog's command line, waiting for a
``serve`` to print its URL (imported by name by the security tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

OTHER_USER = "mtother"


def other_user() -> str:
    """A second local user to try files and ports as (made if missing), or skip with the reason."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second local user (runuser)")
    if not shutil.which("runuser"):
        pytest.skip("needs runuser (util-linux) to act as a second local user")
    if subprocess.run(["id", OTHER_USER], capture_output=True).returncode != 0:
        made = subprocess.run(["useradd", "-M", "-s", "/bin/sh", OTHER_USER], capture_output=True, text=True)
        if made.returncode != 0 and "already exists" not in made.stderr:
            pytest.skip(f"cannot create the second user {OTHER_USER}: {made.stderr.strip()}")
    return OTHER_USER


def readable_by(user: str, paths: list[Path]) -> list[str]:
    """Which of ``paths`` ``user`` can read (``cat``), as that user."""
    script = 'for f in "$@"; do cat -- "$f" >/dev/null 2>&1 && printf "%s\\n" "$f"; done; exit 0'
    run = subprocess.run(
        ["runuser", "-u", user, "--", "sh", "-c", script, "sh", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return run.stdout.splitlines()


def catalog_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MT_MAGIC_", "PYICEBERG_"))}
    return subprocess.run(
        [sys.executable, "-m", "mt_magic.catalog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def url_of(proc: subprocess.Popen[bytes], log: Path) -> str:
    waited = threading.Event()
    for _ in range(1200):  # bounded: a minute
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("mt_magic catalog serving"):
                return line.split()[3]
        if proc.poll() is not None:
            break
        waited.wait(0.05)
    raise AssertionError(f"serve did not start (exit {proc.poll()}):\n{log.read_text(errors='replace')}")


def command_lines_holding(secret: str) -> dict[int, str]:
    """Every process whose command line holds ``secret`` (what any local user reads with ``ps``): pid → the line."""
    found = {}
    needle = secret.encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = cmdline.read_bytes()
        except OSError:  # ended meanwhile
            continue
        line = raw.replace(b"\0", b" ")  # arguments joined by spaces, as ps shows them
        if needle in line:
            found[int(cmdline.parent.name)] = line.decode(errors="replace")
    return found


CROSS_SITE = {"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}
"""What a web page's form sends to a port on this machine (a POST needs no CORS preflight in this shape)."""


def http(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One request straight to ``url`` (no proxy, no redirect followed): status, headers, body."""
    import urllib.error
    import urllib.request

    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), Keep)
    data = b"id=0&terminate=true" if method == "POST" else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with opener.open(request, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode(errors="replace")


def status_as(user: str, url: str) -> int:
    """The HTTP status ``user`` gets for a plain GET of ``url`` (curl, as that user)."""
    if not shutil.which("curl"):
        pytest.skip("needs curl to request a page as a second local user")
    run = subprocess.run(
        ["runuser", "-u", user, "--", "curl", "-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return int(run.stdout or 0)


def assert_owner_only(url: str, token: str, kill_path: str) -> None:
    """The web UI at ``url`` refuses a plain GET, a cross-site POST to ``kill_path`` and a second local user; its
    owner gets in with the bearer token, or with the cookie the ``?token=`` link sets, which a POST from another
    origin does not carry through."""
    status, _, body = http(f"{url}/")
    assert status == 401 and "Authorization: Bearer" in body, (status, body[:300])
    assert http(f"{url}{kill_path}", "POST", CROSS_SITE)[0] == 401
    assert http(f"{url}/", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert http(f"{url}/?token=wrong")[0] == 401
    if os.geteuid() == 0:  # as a second local user (elsewhere the owner-only parts above stand alone)
        assert status_as(other_user(), f"{url}/") == 401
    status, _, _ = http(f"{url}/", headers={"Authorization": f"Bearer {token}"})
    assert status in (200, 302), status  # a driver's root redirects to /jobs/
    status, headers, _ = http(f"{url}/?token={token}")
    assert status == 303 and headers["Location"] == "/", (status, headers)
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie and token not in cookie
    jar = {"Cookie": cookie.split(";", 1)[0]}
    assert http(f"{url}/", headers=jar)[0] in (200, 302)
    assert http(f"{url}{kill_path}", "POST", {**CROSS_SITE, **jar})[0] == 403
