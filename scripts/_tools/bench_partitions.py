"""`scripts/bench partitions`: what a network cut costs a producer, ours and Kafka 3.9.

    scripts/bench partitions [--impl ours,kafka] [--cut-s 25] [--rate 100]
                             [--cuts leader,controller,follower]
                             [--replica-lag-time-max-ms 30000]

For each implementation in --impl (default both, ours first, one after the other so they never
share the CPUs) starts a fresh 3-broker cluster with `scripts/cluster up --network netns` (root
only: ZooKeeper and each broker in a network namespace of its own), with
`min.insync.replicas=2`, `zookeeper.session.timeout.ms=6000` and `replica.lag.time.max.ms`
from --replica-lag-time-max-ms (Kafka's default, 30 s, unless given: a follower cut from its
leader only leaves the ISR after it, so it bounds that cut's gap), and runs each cut on a topic
of its own (one partition, replication factor 3, its replica assignment chosen so that the
cut hits the role it names), with one idempotent acks=all producer (scripts/_tools/
chaos_produce.py) writing --rate records a second through it:

- `leader`: the partition's leader, not the controller, cut from ZooKeeper and every other
  broker (`scripts/cluster cut --from all`);
- `controller`: the controller, leading the partition, cut from ZooKeeper (`--from zookeeper`);
- `follower`: a follower, not the controller, cut from the partition's leader (`--from ID`);
- `isolated-follower` (only when named in --cuts): that follower cut from ZooKeeper and every
  other broker (`--from all`), so that its session expires.

Each cut lasts --cut-s seconds and is then healed. Per cut it reports:

- `lost`: acknowledged records not at their acknowledged offset when the topic is read back
  after the run (scripts/_tools/chaos_verify.py), and `duplicated` (a payload stored twice under
  one producer epoch; `resent_after_epoch_bump` separately, as the chaos checker does);
- `longest_gap_s`: the longest time without an acknowledgement from the cut until TAIL_S after
  the ISR is whole again; a gap already open when the cut starts counts from the last
  acknowledgement before it;
- `isr_whole_after_heal_s`: from the heal until the partition's state znode lists every
  replica in the ISR again (polled every 0.25 s);
- `divergent_replicas`: partitions whose replicas differ on disk once all of it settled.

Prints a table (ours and Kafka side by side) and then one line of JSON with every figure and
the machine's load average before and after each implementation's run.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from .bench_compare import running_cluster
from .chaos_cluster import Cluster, launcher, load_cluster
from .chaos_produce import ProducerFleet
from .chaos_replicas import batch_epochs, compare_topic, read_replica
from .chaos_verify import EpochAt, check_records, read_topic
from .chaos_zk import ClusterView, ZooKeeperView, healthy_with_full_isr

IMPLS = ("ours", "kafka")
IMPL_LABELS = {"ours": "ours", "kafka": "Kafka 3.9"}
DEFAULT_CUTS = ("leader", "controller", "follower")
CUTS = (*DEFAULT_CUTS, "isolated-follower")
CUT_LABELS = {
    "leader": "the leader, from ZooKeeper and its peers",
    "controller": "the controller (leading it), from ZooKeeper",
    "follower": "a follower, from its leader",
    "isolated-follower": "a follower, from ZooKeeper and its peers",
}
SETTINGS = {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "6000"}
REPLICATION_FACTOR = 3
READY_TIMEOUT_S = 120.0
FIRST_ACK_TIMEOUT_S = 60.0
WARM_UP_S = 3.0  # acknowledgements flowing steadily before the cut
ISR_TIMEOUT_S = 180.0
TAIL_S = 3.0  # producing after the ISR is whole, so a gap still open then shows
FLUSH_TIMEOUT_S = 60.0
READ_TIMEOUT_S = 120.0
SETTLE_TIMEOUT_S = 60.0
MAX_EPOCH = 0x7FFF  # producer epochs are int16


def _say(message: str) -> None:
    print(f"scripts/bench partitions: {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench partitions", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--impl", default="ours,kafka", help="ours, kafka or both in order (default ours,kafka)"
    )
    parser.add_argument("--cut-s", type=float, default=25.0, help="how long each cut lasts")
    parser.add_argument("--rate", type=float, default=100.0, help="records a second")
    parser.add_argument(
        "--replica-lag-time-max-ms",
        type=int,
        default=30000,
        help="the brokers' replica.lag.time.max.ms (default Kafka's 30000)",
    )
    parser.add_argument(
        "--cuts",
        default=",".join(DEFAULT_CUTS),
        help=f"which cuts, in order, of {', '.join(CUTS)} (default {','.join(DEFAULT_CUTS)})",
    )
    args = parser.parse_args(argv)
    args.impls = [part.strip() for part in args.impl.split(",") if part.strip()]
    args.cut_list = [part.strip() for part in args.cuts.split(",") if part.strip()]
    if not args.impls or any(impl not in IMPLS for impl in args.impls):
        parser.error(f"--impl: one or more of {', '.join(IMPLS)}")
    if not args.cut_list or any(cut not in CUTS for cut in args.cut_list):
        parser.error(f"--cuts: one or more of {', '.join(CUTS)}")
    if args.cut_s <= 0 or args.rate <= 0 or args.replica_lag_time_max_ms <= 0:
        parser.error("--cut-s, --rate and --replica-lag-time-max-ms must be positive")
    return args


def longest_gap_s(ack_times: list[float], since: float, until: float) -> float:
    """The longest time without an acknowledgement within [since, until], `ack_times`
    sorted. A gap open at `since` counts from the last acknowledgement before it (the producer
    was already waiting then), one still open at `until` up to `until`."""
    first = bisect.bisect_left(ack_times, since)
    last = bisect.bisect_right(ack_times, until)
    start = ack_times[first - 1] if first > 0 else since
    points = [start, *ack_times[first:last], until]
    return max(later - earlier for earlier, later in itertools.pairwise(points))


@dataclass(frozen=True, slots=True)
class Arrangement:
    """Who a cut hits: the topic's replica assignment (its first the leader), the broker cut
    and what from (`scripts/cluster cut --from`)."""

    replicas: list[int]
    victim: int
    cut_from: str
    controller: int


def arrange(cut: str, broker_ids: list[int], controller: int) -> Arrangement:
    """The assignment that puts `cut`'s victim in its role, given the current controller."""
    others = [broker for broker in broker_ids if broker != controller]
    if len(others) < REPLICATION_FACTOR - 1:
        raise ValueError(f"needs {REPLICATION_FACTOR} brokers, has {broker_ids}")
    if cut == "controller":
        return Arrangement([controller, *others[:2]], controller, "zookeeper", controller)
    replicas = [others[0], others[1], controller]
    if cut == "leader":
        return Arrangement(replicas, others[0], "all", controller)
    if cut == "follower":
        return Arrangement(replicas, others[1], str(others[0]), controller)
    if cut == "isolated-follower":
        return Arrangement(replicas, others[1], "all", controller)
    raise ValueError(f"unknown cut {cut!r}")


def _roles_hold(arrangement: Arrangement, view: ClusterView) -> bool:
    state = view.partitions.get(0)
    return (
        state is not None
        and state.leader == arrangement.replicas[0]
        and set(state.isr) == set(arrangement.replicas)
        and view.controller == arrangement.controller
    )


def _create_topic(cluster: Cluster, topic: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    config = {"min.insync.replicas": SETTINGS["min.insync.replicas"]}
    new = NewTopic(topic, 1, replica_assignment=[replicas], config=config)
    admin.create_topics([new])[topic].result(timeout=READY_TIMEOUT_S)


def _epoch_lookup(cluster: Cluster, topic: str, broker: int) -> EpochAt:
    """The producer epoch of the batch holding each offset, from `broker`'s replica."""
    _, data = read_replica(broker, cluster.log_dirs(broker), topic, 0)
    batches = batch_epochs(data)

    def epoch_at(partition: int, offset: int) -> int | None:
        index = bisect.bisect_right(batches, (offset, MAX_EPOCH)) - 1
        return batches[index][1] if partition == 0 and index >= 0 else None

    return epoch_at


def _controller_with_all_registered(zk: Any, brokers: list[int]) -> int:
    """The controller's id once every broker is registered and a controller elected."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            registered = {int(child) for child in zk.get_children("/brokers/ids")}
            data, _ = zk.get("/controller")
            if registered >= set(brokers):
                return int(json.loads(data)["brokerid"])
        except (KazooException, ValueError, KeyError):
            pass  # no controller yet, or ZooKeeper busy: poll again
        if time.monotonic() > deadline:
            raise SystemExit(f"no controller or not every broker registered in {READY_TIMEOUT_S} s")
        time.sleep(0.25)


def _wait_first_ack(fleet: ProducerFleet) -> bool:
    deadline = time.monotonic() + FIRST_ACK_TIMEOUT_S
    while not fleet.acks:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _settled_divergences(cluster: Cluster, topic: str, replicas: list[int]) -> int:
    """Partitions whose replicas still differ on disk after SETTLE_TIMEOUT_S (0 once equal)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        divergent = len(compare_topic({0: replicas}, cluster.log_dirs, topic))
        if divergent == 0 or time.monotonic() > deadline:
            return divergent
        time.sleep(0.5)


def run_cut(args: argparse.Namespace, cluster: Cluster, cut: str, zk: Any) -> dict[str, Any]:
    """One cut on a topic of its own: arrange the roles, produce through cut and heal, read
    everything back."""
    run_id = secrets.token_hex(4)
    topic = f"cut-{cut}-{run_id}"
    view = ZooKeeperView(cluster.zookeeper_connect, topic)
    view.connect()
    try:
        return _run_cut(args, cluster, cut, topic, run_id, view, zk)
    finally:
        view.close()


def _run_cut(
    args: argparse.Namespace,
    cluster: Cluster,
    cut: str,
    topic: str,
    run_id: str,
    view: ZooKeeperView,
    zk: Any,
) -> dict[str, Any]:
    brokers = cluster.broker_ids
    arrangement = arrange(cut, brokers, _controller_with_all_registered(zk, brokers))
    _create_topic(cluster, topic, arrangement.replicas)
    ready, view_now = view.wait_for(lambda v: _roles_hold(arrangement, v), READY_TIMEOUT_S)
    if not ready:
        raise SystemExit(f"{cut} cut: roles not in place ({view_now and view_now.describe()})")
    fleet = ProducerFleet(cluster.bootstrap, topic, 1, 1, args.rate, run_id)
    fleet.start()
    if not _wait_first_ack(fleet):
        fleet.stop(FLUSH_TIMEOUT_S)
        raise SystemExit(f"{cut} cut: no acknowledgement within {FIRST_ACK_TIMEOUT_S:.0f} s")
    time.sleep(WARM_UP_S)
    target = ["--broker", str(arrangement.victim)]
    _say(f"{cut} cut: broker {arrangement.victim} from {arrangement.cut_from}, {args.cut_s} s")
    cut_at = time.monotonic()
    try:
        launcher(cluster, "cut", *target, "--from", arrangement.cut_from)
        time.sleep(max(0.0, cut_at + args.cut_s - time.monotonic()))
    finally:
        launcher(cluster, "heal", *target)
    healed_at = time.monotonic()
    whole, after = view.wait_for(healthy_with_full_isr(brokers), ISR_TIMEOUT_S)
    whole_at = time.monotonic()
    time.sleep(TAIL_S)
    until = time.monotonic()
    result = fleet.stop(FLUSH_TIMEOUT_S)
    ack_times = [ack.at for ack in result.acks]
    stored, complete = read_topic(cluster.bootstrap, topic, 1, READ_TIMEOUT_S)
    leader_after = after.partitions[0].leader if after is not None else -1
    epoch_at = _epoch_lookup(cluster, topic, leader_after if leader_after > 0 else brokers[0])
    records = check_records(result.acks, stored, run_id, epoch_at)
    return {
        "cut": cut,
        "victim": arrangement.victim,
        "cut_from": arrangement.cut_from,
        "replicas": arrangement.replicas,
        "controller_before": arrangement.controller,
        "leader_after": leader_after,
        "controller_after": after.controller if after is not None else None,
        "acked": records.acked,
        "lost": records.lost,
        "duplicated": records.duplicated,
        "resent_after_epoch_bump": records.resent_after_epoch_bump,
        "reordered": records.reordered,
        "read_complete": complete,
        "failed_deliveries": result.failed,
        "unresolved": result.unresolved,
        "fatal_errors": result.fatal_errors,
        "longest_gap_s": round(longest_gap_s(ack_times, cut_at, until), 2),
        "isr_whole_after_heal_s": round(whole_at - healed_at, 2) if whole else None,
        "divergent_replicas": _settled_divergences(cluster, topic, arrangement.replicas),
        "samples": records.samples,
    }


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def settings(args: argparse.Namespace) -> dict[str, str]:
    return {**SETTINGS, "replica.lag.time.max.ms": str(args.replica_lag_time_max_ms)}


def measure(args: argparse.Namespace, impl: str) -> dict[str, Any]:
    _say(f"{impl}: starting 3 brokers in network namespaces")
    load_before = _load()
    with running_cluster(impl, settings(args), network="netns") as (_bootstrap, _meter, directory):
        cluster = load_cluster(directory)
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
        zk.start(timeout=30)
        try:
            cuts = {cut: run_cut(args, cluster, cut, zk) for cut in args.cut_list}
        finally:
            zk.stop()
            zk.close()
    return {"cuts": cuts, "load_before": load_before, "load_after": _load()}


def _cell(figures: dict[str, Any] | None, name: str) -> str:
    if figures is None:
        return "-"
    value = figures.get(name)
    if value is None:
        return "never" if name == "isr_whole_after_heal_s" else "-"
    if name == "duplicated" and figures.get("resent_after_epoch_bump"):
        return f"{value} (+{figures['resent_after_epoch_bump']} resent)"
    return f"{value:g}" if isinstance(value, float) else str(value)


TABLE_FIGURES = (
    ("lost", "acked records lost"),
    ("duplicated", "duplicates"),
    ("longest_gap_s", "longest ack gap s"),
    ("isr_whole_after_heal_s", "ISR whole after heal s"),
)


def table(by_impl: dict[str, dict[str, Any]], cuts: list[str]) -> str:
    """Per cut, each figure for every implementation measured, side by side."""
    impls = list(by_impl)
    header = f"{'cut':<44} {'figure':<24}" + "".join(f" {IMPL_LABELS.get(i, i):>12}" for i in impls)
    lines = [header]
    for cut in cuts:
        for index, (name, label) in enumerate(TABLE_FIGURES):
            shown = CUT_LABELS.get(cut, cut) if index == 0 else ""
            cells = [_cell(by_impl[i].get("cuts", {}).get(cut), name) for i in impls]
            lines.append(f"{shown:<44} {label:<24}" + "".join(f" {c:>12}" for c in cells))
    return "\n".join(lines)


def partitions_main(argv: list[str]) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("scripts/bench partitions needs root (scripts/cluster up --network netns)")
    by_impl = {impl: measure(args, impl) for impl in args.impls}
    print(table(by_impl, args.cut_list))
    summary = {
        "bench": "partitions",
        "cut_s": args.cut_s,
        "rate_per_s": args.rate,
        "settings": settings(args),
        **by_impl,
    }
    print(json.dumps(summary, sort_keys=True), flush=True)
    return 0
