"""What a table create costs the embedded REST catalog as the catalog grows (a statement's cost must not follow it).

A create checks that the new table's folders are its own (no other table's, view's or namespace's folder), which
needs every table's folders; a catalog of a few thousand tables (a team's, or a test session's) once made each create
read every table's metadata file again. This fills one in-process app (the ASGI app ``serve`` runs, SQLite, a local
warehouse, no network) to each size in turn and times creates there, then a commit and a load, and prints the
medians and their ratio to the smallest size, measured in one run.

    .venv/bin/python benchmarks/bench_catalog_scale.py [--sizes 100,1000,3000] [--creates 30]
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

from access_app import client, create_table, ok  # noqa: E402


def _median_ms(run: Callable[[int], object], count: int) -> float:
    times = []
    for index in range(count):
        start = time.perf_counter()
        run(index)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,3000", help="catalog sizes (tables), ascending")
    parser.add_argument("--creates", type=int, default=30, help="creates timed at each size")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="bench_catalog_scale_"))
    admin = client(f"sqlite:///{folder}/catalog.db", folder / "warehouse")
    ok(admin.post("/v1/namespaces", json={"namespace": ["fill"]}))
    ok(admin.post("/v1/namespaces", json={"namespace": ["timed"]}))
    commit = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    filled, rows = 0, []
    for size in sizes:
        while filled < size:
            create_table(admin, "fill", f"t{filled}")
            filled += 1
        create = _median_ms(lambda i, size=size: create_table(admin, "timed", f"s{size}_{i}"), args.creates)  # type: ignore[misc]
        moved = _median_ms(
            lambda i, size=size: ok(  # type: ignore[misc]
                admin.post(f"/v1/namespaces/timed/tables/s{size}_{i}", json=commit)
            ),
            args.creates,
        )
        load = _median_ms(lambda i, size=size: ok(admin.get(f"/v1/namespaces/timed/tables/s{size}_{i}")), args.creates)  # type: ignore[misc]
        rows.append((size, create, moved, load))
        filled += args.creates
    print(f"{'tables':>8} {'create ms':>10} {'commit ms':>10} {'load ms':>8}   ratio to {sizes[0]} tables")
    base = rows[0]
    for size, create, moved, load in rows:
        print(
            f"{size:>8} {create:>10.2f} {moved:>10.2f} {load:>8.2f}   "
            f"create {create / base[1]:.2f}x, commit {moved / base[2]:.2f}x, load {load / base[3]:.2f}x"
        )


if __name__ == "__main__":
    main()
