"""Argument parsing for scripts/cluster (the form is fixed by CLUSTER_CONTRACT.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import commands, events, partitions, restart, up, zk_view
from .errors import ClusterError, NeedsRoot
from .layout import IMPLEMENTATIONS, ClusterSpec, parse_impls
from .processes import SIGNALS_BY_NAME

SECURITY_CHOICES = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
NETWORKS = ("loopback", "netns")

DEFAULT_DIR = ".cluster"
WATCH_INTERVAL_S = 1.0
MIN_WATCH_INTERVAL_S = 0.2
MAX_PORT = 65535
if TYPE_CHECKING:  # generic only in typeshed
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _interval(text: str) -> float:
    value = float(text)
    if value < MIN_WATCH_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_WATCH_INTERVAL_S}, got {value}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"not a port: {value}")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _add_target(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--broker", type=_positive, metavar="ID")
    target.add_argument("--zookeeper", type=_positive, metavar="N")


USAGE = """\
commands (each takes --dir DIR, default .cluster; `COMMAND --help` for more):
  up [--zookeepers N] [--brokers N] [--port-base P] [--zk-port-base Z] [--set KEY=VALUE ...]
     [--security plaintext|ssl|sasl_plaintext|sasl_ssl] [--impl ours|kafka|IMPL,IMPL,...]
     [--network loopback|netns]
  down [--wipe]
  status [--watch [--interval S] [--iterations N]]
  kill (--broker ID | --zookeeper N) [--signal TERM|KILL|STOP|CONT]
  start (--broker ID | --zookeeper N) [--impl ours|kafka]
  events [--since 90s|5m|'YYYY-MM-DD HH:MM:SS']
  cut (--broker ID | --zookeeper N) [--from zookeeper|brokers|all|ID,...] [--one-way]
  heal [--broker ID | --zookeeper N]

--impl kafka,ours,ours makes one mixed cluster: broker 1 Apache Kafka 3.9 (`make reference`),
brokers 2 and 3 ours, on one ZooKeeper; `start --broker 1 --impl ours` then restarts broker 1
as ours on its own config and data directory.

--network netns (root) runs ZooKeeper and each broker in a network namespace of its own, with
its own address on a bridge the host reaches; `cut` then makes a network partition with
blackhole routes and `heal` undoes it (docs/operating.md, "Network partitions").
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/cluster",
        description="Run a local ZooKeeper + broker cluster on 127.0.0.1 (or in network "
        "namespaces: up --network netns).",
        epilog=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = _add_up_parser(sub)
    down = sub.add_parser("down", help="stop every process (TERM, then KILL)")
    down.add_argument("--wipe", action="store_true", help="also remove DIR")
    status = _add_status_parser(sub)
    kill = sub.add_parser("kill", help="send a signal to one process and return")
    _add_target(kill)
    kill.add_argument("--signal", choices=sorted(SIGNALS_BY_NAME), default="TERM")
    start = sub.add_parser("start", help="restart one process and wait until it is up")
    _add_target(start)
    start.add_argument(
        "--impl",
        choices=IMPLEMENTATIONS,
        help="a broker only: restart it as this implementation, on its own server.properties "
        "and data directory (default: what it ran before)",
    )
    timeline = sub.add_parser(
        "events", help="merge the brokers' state-change.log files into one timeline"
    )
    timeline.add_argument(
        "--since", metavar="WHEN", help="only later events: 90s, 5m, 1h or YYYY-MM-DD HH:MM:SS"
    )
    cut, heal = _add_partition_parsers(sub)
    for command_parser in (up, down, status, kill, start, timeline, cut, heal):
        command_parser.add_argument("--dir", default=DEFAULT_DIR, help="cluster directory")
    return parser


def _add_up_parser(sub: Subcommands) -> argparse.ArgumentParser:
    up = sub.add_parser("up", help="start ZooKeeper and brokers, wait until healthy")
    up.add_argument("--zookeepers", type=_positive, default=1)
    up.add_argument("--brokers", type=_positive, default=3)
    up.add_argument("--port-base", type=_port, default=9092)
    up.add_argument("--zk-port-base", type=_port, default=2181)
    up.add_argument(
        "--set",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties override; {broker_dir}, {broker_id} and {rack} become "
        "each broker's directory, id and --racks rack",
    )
    up.add_argument(
        "--racks",
        type=_positive,
        default=None,
        metavar="N",
        help="spread the brokers over N racks: broker i gets broker.rack=rack-((i-1) mod N)",
    )
    up.add_argument(
        "--impl",
        default="ours",
        metavar="ours|kafka|IMPL,IMPL,...",
        help="whose brokers: ours (default) or Apache Kafka 3.9 (after `make reference`) for "
        "all, or one per broker, broker 1 first (kafka,ours,ours: one mixed cluster, whose "
        "first controller is broker 1)",
    )
    up.add_argument(
        "--security",
        choices=SECURITY_CHOICES,
        default="plaintext",
        help="the brokers' listeners: plaintext (default), ssl (a CA and certificates are "
        "made under DIR/tls), sasl_plaintext or sasl_ssl (PLAIN and SCRAM, user admin / "
        "admin-secret); clients use DIR/client.properties",
    )
    up.add_argument(
        "--network",
        choices=NETWORKS,
        default="loopback",
        help="loopback (default: every process on 127.0.0.1) or netns (root only: ZooKeeper "
        "and each broker in a network namespace of its own, with its own address on a bridge "
        "that the host reaches; needed by cut and heal)",
    )
    return up


CUT_DESCRIPTION = """\
Cut one node of a `--network netns` cluster off from others, with blackhole routes.

Two-way (the default): packets from the node to each peer and from each peer to the node are
dropped (a blackhole route in the node's namespace for each peer's address, and one in each
peer's namespace for the node's address). --one-way: only the packets the node SENDS to the
peers are dropped (routes in the node's own namespace only); packets from the peers still reach
it, but its answers do not get back, so a TCP connection in either direction does not
complete, while a UDP datagram from a peer still arrives. The host (clients, status) always
reaches the node. Cuts add up; `heal` undoes them.
"""


def _add_partition_parsers(sub: Subcommands) -> tuple[argparse.ArgumentParser, ...]:
    cut = sub.add_parser(
        "cut",
        help="cut a node off from others (--network netns clusters)",
        description=CUT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_target(cut)
    cut.add_argument(
        "--from",
        dest="from_spec",
        default="all",
        metavar="zookeeper|brokers|all|ID,...",
        help="whom to cut it from: zookeeper (every ZooKeeper server; for a ZooKeeper server, "
        "the other servers), brokers (every other broker), all (default: every other node) or "
        "broker ids (1,3)",
    )
    cut.add_argument(
        "--one-way",
        action="store_true",
        help="drop only what the node sends to them (not what they send to it)",
    )
    heal = sub.add_parser(
        "heal",
        help="undo cuts: every link of one node, or all of them",
        description="Remove the blackhole routes `cut` made: those with the named node at "
        "either end, or every one when no node is named.",
    )
    target = heal.add_mutually_exclusive_group()
    target.add_argument("--broker", type=_positive, metavar="ID")
    target.add_argument("--zookeeper", type=_positive, metavar="N")
    return cut, heal


def _add_status_parser(sub: Subcommands) -> argparse.ArgumentParser:
    status = sub.add_parser(
        "status", help="one line per broker, ZooKeeper server and the controller"
    )
    status.add_argument(
        "--watch",
        action="store_true",
        help="keep watching: a live view on a terminal, plain snapshots otherwise; Ctrl-C ends",
    )
    status.add_argument(
        "--interval",
        type=_interval,
        default=WATCH_INTERVAL_S,
        metavar="S",
        help=f"seconds between refreshes with --watch (default {WATCH_INTERVAL_S:g})",
    )
    status.add_argument(
        "--iterations",
        type=_positive,
        metavar="N",
        help="with --watch: stop after N refreshes (default: until Ctrl-C)",
    )
    return status


def _validate_ports(parser: argparse.ArgumentParser, spec: ClusterSpec) -> None:
    if max(spec.all_ports()) > MAX_PORT:
        parser.error("port bases too high for this many brokers / ZooKeeper servers")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    directory = Path(args.dir).absolute()
    if args.command == "up":
        try:
            impls = parse_impls(args.impl, args.brokers)
        except ClusterError as error:
            parser.error(str(error))
        spec = ClusterSpec(
            directory=str(directory),
            broker_count=args.brokers,
            zookeeper_count=args.zookeepers,
            port_base=args.port_base,
            zk_port_base=args.zk_port_base,
            overrides=dict(args.set),
            # A list whose brokers all run one implementation is that shorthand.
            impl=impls[0] if len(set(impls)) == 1 else ",".join(impls),
            security=args.security,
            network=args.network,
            racks=args.racks or 0,
        )
        if not spec.racks and any("{rack}" in value for value in spec.overrides.values()):
            parser.error("{rack} in --set needs --racks")
        _validate_ports(parser, spec)
        up.up(spec)
    elif args.command == "down":
        commands.down(directory, args.wipe)
    elif args.command == "status":
        if args.watch:
            from . import watch  # Rich, only for the live view

            watch.watch(directory, args.interval, args.iterations)
        elif args.iterations is not None:
            parser.error("--iterations needs --watch")
        else:
            commands.status(directory)
    elif args.command == "kill":
        commands.kill(directory, args.broker, args.zookeeper, args.signal)
    elif args.command == "start":
        if args.impl is not None and args.broker is None:
            parser.error("--impl applies to --broker only")
        restart.start(directory, args.broker, args.zookeeper, args.impl)
    elif args.command == "events":
        events.events(directory, args.since)
    elif args.command == "cut":
        partitions.cut(directory, args.broker, args.zookeeper, args.from_spec, args.one_way)
    elif args.command == "heal":
        partitions.heal(directory, args.broker, args.zookeeper)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    zk_view.silence_kazoo()
    try:
        run(args, parser)
    except NeedsRoot as error:
        print(f"scripts/cluster {args.command}: {error}", file=sys.stderr)
        return 2
    except ClusterError as error:
        print(f"scripts/cluster {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"scripts/cluster {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0
