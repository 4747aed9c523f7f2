"""What grants cost a catalog request (issue 48's bar: statement cost with grants at most 1.1x without).

A request of the catalog's admin (the server's own token) is decided without a database read, as every request was
before principals existed; a principal's request reads the access version row and evaluates its route's rule
against the snapshot. This runs both, side by side in one process on one in-process app (the ASGI app ``serve``
runs, SQLite, no network), for the requests a materialized table's statement and refresh make most (load a table,
check it exists, commit to it, list tables), alternated request by request, and prints the medians and their
ratio; then the authorizer's own share, timed alone.

    .venv/bin/python benchmarks/bench_authz.py [--rounds 7] [--requests 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "catalog"))

from access_app import client, create_table, grant, new_principal, ok  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402


def _requests(http: TestClient) -> dict[str, Callable[[], object]]:
    commit = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    return {
        "load table": lambda: ok(http.get("/v1/namespaces/team/tables/t")),
        "table exists": lambda: http.head("/v1/namespaces/team/tables/t"),
        "commit": lambda: ok(http.post("/v1/namespaces/team/tables/t", json=commit)),
        "list tables": lambda: ok(http.get("/v1/namespaces/team/tables")),
    }


def _median_ms(run: Callable[[], object], count: int) -> float:
    """The median time of ``count`` runs, in milliseconds."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_authz_"))
    admin = client(f"sqlite:///{folder}/catalog.db", folder / "warehouse")
    ok(admin.post("/v1/namespaces", json={"namespace": ["team"]}))
    create_table(admin, "team", "t")
    for n in range(20):  # a catalog with a few principals, roles and grants, as a team's would have
        peer = f"peer{n}"
        new_principal(admin, peer, f"{peer}_role")
        grant(admin, f"{peer}_role", "read-data", {"type": "namespace", "name": [f"ns{n}"]})
    analyst = new_principal(admin, "analyst", "analysts")
    grant(admin, "analysts", "write", {"type": "namespace", "name": ["team"]})
    sides = {"admin": _requests(admin), "principal": _requests(analyst)}
    times: dict[str, dict[str, list[float]]] = {side: {name: [] for name in _requests(admin)} for side in sides}
    for _ in range(args.rounds * args.requests):  # alternated request by request: the machine's load hits both alike
        for name in times["admin"]:
            for side, requests in sides.items():
                start = time.perf_counter()
                requests[name]()
                times[side][name].append((time.perf_counter() - start) * 1000)
    print(
        f"{'request':<14} {'admin ms':>9} {'principal ms':>13} {'ratio':>6}   "
        f"(medians of {len(times['admin']['commit'])} each)"
    )
    ratios = []
    for name in times["admin"]:
        base, with_grants = statistics.median(times["admin"][name]), statistics.median(times["principal"][name])
        ratios.append(with_grants / base)
        print(f"{name:<14} {base:>9.3f} {with_grants:>13.3f} {with_grants / base:>6.3f}")
    print(f"geometric mean ratio {statistics.geometric_mean(ratios):.3f}")

    from mt_magic.catalog.server.authz import authenticate

    app_state = analyst.app.state  # type: ignore[attr-defined]

    class _Request:
        app = type("A", (), {"state": app_state})()
        headers = {"authorization": analyst.headers["Authorization"]}

    alone = _median_ms(lambda: authenticate(_Request()), 2000)  # type: ignore[arg-type]
    print(f"authenticating a principal alone (version read + token check): {alone * 1000:.0f} us per request")


if __name__ == "__main__":
    main()
