"""Fault kinds, the order they are drawn in, whom they hit, and how they are injected.

A kind is `<role>-<signal>`: the role picks the victim at the moment of the fault (the leader
or a follower of a random partition, the controller, a ZooKeeper server) and the signal says
what happens to it: `kill` (SIGKILL, then restart), `term` (SIGTERM: clean shutdown, then
restart) or `stop` (SIGSTOP for a while, then SIGCONT: a process that looks dead and comes back
with stale state, which is what fencing is for).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .chaos_cluster import Cluster, LauncherError, describe_broker, send_signal, start
from .chaos_zk import ClusterView

BROKER_ROLES = ("leader", "follower", "controller")
SIGNALS = ("kill", "term", "stop")
BROKER_KINDS = tuple(f"{role}-{signal}" for role in BROKER_ROLES for signal in SIGNALS)
ZOOKEEPER_KINDS = tuple(f"zookeeper-{signal}" for signal in SIGNALS)
ALL_KINDS = BROKER_KINDS + ZOOKEEPER_KINDS
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


def pause_seconds(rng: random.Random, max_pause_s: float) -> float:
    return rng.uniform(MIN_PAUSE_S, max(MIN_PAUSE_S, max_pause_s))
