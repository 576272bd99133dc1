"""Argument parsing for scripts/lab (the form is in CLUSTER_CONTRACT.md, "The lab")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn
from _cluster.layout import is_cluster_dir
from _cluster.zk_view import silence_kazoo

from .app import build_app
from .security import CsrfGuard, actions_allowed_on

DEFAULT_DIR = ".cluster"
DEFAULT_PORT = 8080
DEFAULT_HOST = "127.0.0.1"
GRACEFUL_SHUTDOWN_S = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/lab",
        description="A live web view of a cluster started by scripts/cluster.",
    )
    parser.add_argument("--dir", default=DEFAULT_DIR, help="cluster directory (default .cluster)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help="address to bind (default 127.0.0.1: loopback only)"
    )
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="let the page kill, pause, resume and start this cluster's processes and run "
        "guided scenarios",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    directory = Path(args.dir).absolute()
    if not is_cluster_dir(directory):
        print(
            f"scripts/lab: no cluster in {directory} (start one with scripts/cluster up)",
            file=sys.stderr,
        )
        return 1
    if args.allow_actions and not actions_allowed_on(args.host):
        print(
            f"scripts/lab: --allow-actions only on a loopback --host (not {args.host}): the "
            "page hands its action token to whoever loads it",
            file=sys.stderr,
        )
        return 2
    silence_kazoo()
    app = build_app(directory, args.allow_actions, args.host, CsrfGuard())
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"lab: http://{shown}:{args.port}/ (cluster {directory})", flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return 0
