"""``python -m mt_magic demo`` runs the quickstart notebook headless; ``python -m mt_magic run`` keeps tables fresh;
``python -m mt_magic refresh TABLE`` refreshes one table once, under its refresh lease (what an Airflow task runs)."""

from __future__ import annotations

import sys

from mt_magic.errors import CommandLineParser


def main(argv: list[str] | None = None) -> int:
    parser = CommandLineParser(prog="python -m mt_magic", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run examples/01_quickstart.ipynb headless on the embedded defaults")
    demo.add_argument(
        "--keep-catalog",
        action="store_true",
        help="leave the embedded catalog running when the demo started it (default: stop it)",
    )
    run = sub.add_parser("run", help="keep every materialized table of a catalog fresh, outside any notebook")
    run.add_argument("--catalog", default="mt", help="catalog name (pyiceberg configuration); default: embedded")
    run.add_argument("--namespace", default="default")
    run.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    run.add_argument("--max-concurrent", type=int, default=2)
    once = sub.add_parser("refresh", help="refresh one materialized table once, under its refresh lease, and exit")
    once.add_argument("table", help="the table: [catalog.]namespace.table, or a name in namespace default")
    once.add_argument("--catalog", default="mt", help="catalog name (pyiceberg configuration); default: embedded")
    once.add_argument("--partition", action="append", default=[], metavar="COLUMN=VALUE", help="backfill a partition")
    once.add_argument("--trigger", choices=["manual", "scheduled", "cascade"], default="manual")
    once.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    once.add_argument("--lease-wait", type=float, default=600.0, help="seconds to wait for the lease (default 600)")
    args = parser.parse_args(argv)
    if args.command == "refresh":
        from datetime import timedelta

        from mt_magic.oneshot import refresh_once
        from mt_magic.vocabulary import RefreshTrigger

        return refresh_once(
            args.table,
            args.catalog,
            args.partition,
            RefreshTrigger(args.trigger),
            args.master,
            timedelta(seconds=args.lease_wait),
        )
    if args.command == "demo":
        from mt_magic.demo import main as demo_main

        return demo_main(keep_catalog=args.keep_catalog)
    from mt_magic.headless import run_headless

    return run_headless(args.catalog, args.namespace, args.master, args.max_concurrent)


if __name__ == "__main__":
    sys.exit(main())
