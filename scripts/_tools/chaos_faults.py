"""Fault kinds, the order they are drawn in, whom they hit, and how they are injected.

A kind is `<role>-<signal>`: the role picks the victim at the moment of the fault (the leader
or a follower of a random partition, the controller, a ZooKeeper server) and the signal says
what happens to it: `kill` (SIGKILL, then restart), `term` (SIGTERM: clean shutdown, then
restart) or `stop` (SIGSTOP for a while, then SIGCONT: a process that looks dead and comes back
with stale state, which is what fencing is for).

On a `--network netns` cluster, `scripts/chaos --network-partitions` adds network cuts (made
and undone with `scripts/cluster cut` and `heal`; the process keeps running): `leader-cut` (the
leader cut off from every other node, ZooKeeper included), `controller-cut` (the controller
cut from ZooKeeper), `follower-cut` (a follower cut from the other brokers), `zookeeper-cut` (a
ZooKeeper server cut from every other node), `leader-oneway` and `controller-oneway` (what the
victim sends to every other node dropped, not what it receives) and `leader-flap` (the
leader's links cut and healed every FLAP_PERIOD_S). Each lasts as long as a pause would.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .chaos_cluster import (
    Cluster,
    LauncherError,
    describe_broker,
    launcher,
    send_signal,
    start,
    target_args,
)
from .chaos_zk import ClusterView

BROKER_ROLES = ("leader", "follower", "controller")
SIGNALS = ("kill", "term", "stop")
BROKER_KINDS = tuple(f"{role}-{signal}" for role in BROKER_ROLES for signal in SIGNALS)
ZOOKEEPER_KINDS = tuple(f"zookeeper-{signal}" for signal in SIGNALS)
PARTITION_KINDS = (
    "leader-cut",
    "controller-cut",
    "follower-cut",
    "zookeeper-cut",
    "leader-oneway",
    "controller-oneway",
    "leader-flap",
)
ALL_KINDS = BROKER_KINDS + ZOOKEEPER_KINDS + PARTITION_KINDS
PARTITION_SIGNALS = ("cut", "oneway", "flap")
# Whom each partition kind's victim is cut from (`scripts/cluster cut --from`).
CUT_FROM = {
    "leader": "all",
    "controller": "zookeeper",
    "follower": "brokers",
    "zookeeper": "all",
}
FLAP_PERIOD_S = 1.0
SIGNAL_NAMES = {"kill": "KILL", "term": "TERM", "stop": "STOP"}
MIN_PAUSE_S = 1.0


@dataclass(slots=True)
class Fault:
    kind: str
    target: str  # e.g. "broker 2 (leader of partition 3)"
    started_at: float  # time.monotonic()
    injected_at: float = 0.0  # when the victim was back (restarted or resumed)
    recovered_at: float | None = None  # when the cluster was healthy again
    error: str | None = None
    unavailability_ms: float = 0.0

    @property
    def recovery_ms(self) -> float | None:
        if self.recovered_at is None:
            return None
        return (self.recovered_at - self.started_at) * 1000


def kind_sequence(kinds: list[str], rng: random.Random) -> Iterator[str]:
    """Random kinds, drawn as shuffled rounds of the whole list: every kind comes up once per
    len(kinds) faults, so a short run still covers each kind and a long one stays balanced."""
    while True:
        round_kinds = list(kinds)
        rng.shuffle(round_kinds)
        yield from round_kinds


def choose_victim(
    role: str, view: ClusterView, cluster: Cluster, rng: random.Random
) -> tuple[int, str]:
    """(broker id or ZooKeeper server number, description) for a fault on `role` now."""
    if role == "zookeeper":
        server = rng.choice(cluster.zookeeper_ids)
        return server, f"zookeeper {server}"
    if role == "controller" and view.controller is not None:
        # The /controller znode's broker, whichever implementation it runs.
        return view.controller, describe_broker(cluster, view.controller, "controller")
    led = sorted(p for p, s in view.partitions.items() if s.leader >= 0)
    partition = rng.choice(led or sorted(view.partitions))
    state = view.partitions[partition]
    if role == "leader" and state.leader >= 0:
        role_text = f"leader of partition {partition}"
        return state.leader, describe_broker(cluster, state.leader, role_text)
    followers = [r for r in state.replicas if r != state.leader] or state.replicas
    victim = rng.choice(followers)
    return victim, describe_broker(cluster, victim, f"follower of partition {partition}")


def inject(cluster: Cluster, kind: str, victim: int, pause_s: float) -> str | None:
    """Apply `kind` to `victim` and bring it back: restarted (kill, term) or resumed (stop).
    Returns what went wrong on the way if the victim could still be brought back (a process
    that ignores SIGTERM is killed), and raises LauncherError if it could not."""
    role, signal = kind.split("-", 1)
    process_role = "zookeeper" if role == "zookeeper" else "broker"
    if signal in PARTITION_SIGNALS:
        partition(cluster, process_role, victim, CUT_FROM[role], signal, pause_s)
        return None
    send_signal(cluster, process_role, victim, SIGNAL_NAMES[signal])
    if signal == "stop":
        try:
            time.sleep(pause_s)
        finally:
            # Never leave a process frozen behind us, whatever interrupts the pause.
            send_signal(cluster, process_role, victim, "CONT")
        return None
    try:
        start(cluster, process_role, victim)
    except LauncherError as error:
        if signal != "term":
            raise
        # A process still alive after the launcher's grace period failed its clean shutdown:
        # that is the finding; kill it so the rest of the run goes on.
        send_signal(cluster, process_role, victim, "KILL")
        start(cluster, process_role, victim)
        return f"SIGTERM did not stop it ({error}); killed and restarted"
    return None


def partition(
    cluster: Cluster, process_role: str, victim: int, cut_from: str, signal: str, lasting_s: float
) -> None:
    """Cut `victim` off (`signal`: cut, oneway or flap) for `lasting_s`, then heal it; never
    leaves a cut behind, whatever interrupts the wait."""
    target = target_args(process_role, victim)
    cut = ["cut", *target, "--from", cut_from] + (["--one-way"] if signal == "oneway" else [])
    try:
        if signal != "flap":
            launcher(cluster, *cut)
            time.sleep(lasting_s)
            return
        deadline = time.monotonic() + lasting_s
        while time.monotonic() < deadline:
            launcher(cluster, *cut)
            time.sleep(FLAP_PERIOD_S)
            launcher(cluster, "heal", *target)
            time.sleep(FLAP_PERIOD_S)
    finally:
        launcher(cluster, "heal", *target)


def pause_seconds(rng: random.Random, max_pause_s: float) -> float:
    return rng.uniform(MIN_PAUSE_S, max(MIN_PAUSE_S, max_pause_s))
