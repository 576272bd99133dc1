"""Guided scenario "kill the controller": the fault, then what classic Kafka does, step by step,
each step marked done only when the lab observes it (ZooKeeper, through the snapshots).

The steps are data: a title, what Kafka does and why, and a pure check of a snapshot that
returns what was observed (or None while it has not happened yet). `ScenarioRun` holds the
progress the page shows; the app drives it with the collector's snapshots.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .snapshot import JsonObject

STEP_TIMEOUT_S = 120.0


@dataclass
class Context:
    """What the scenario learnt before the fault."""

    victim: int
    epoch: int
    # "topic-partition" -> (leader epoch) of every partition the victim led
    led: dict[str, int] = field(default_factory=dict)


Check = Callable[[JsonObject, Context], str | None]


@dataclass(frozen=True)
class Step:
    title: str
    explanation: str
    check: Check


def _broker(view: JsonObject, broker_id: int) -> JsonObject | None:
    found: JsonObject | None = None
    for broker in view["brokers"]:
        if broker["id"] == broker_id:
            found = broker
    return found


def _partitions(view: JsonObject) -> dict[str, JsonObject]:
    return {f"{t['name']}-{p['partition']}": p for t in view["topics"] for p in t["partitions"]}


def _process_gone(view: JsonObject, context: Context) -> str | None:
    broker = _broker(view, context.victim)
    if broker is not None and not broker["alive"]:
        return f"broker {context.victim}'s process is gone"
    return None


def _registration_gone(view: JsonObject, context: Context) -> str | None:
    if not view["zookeeper"]["reachable"]:
        return None
    broker = _broker(view, context.victim)
    if broker is not None and broker["registered"] is False:
        return f"/brokers/ids/{context.victim} no longer exists"
    return None


def _controller_znode_gone(view: JsonObject, context: Context) -> str | None:
    if not view["zookeeper"]["reachable"]:
        return None
    controller = view["controller"]["id"]
    if controller != context.victim:
        now = "absent" if controller is None else f"says broker {controller}"
        return f"/controller no longer names broker {context.victim} (now {now})"
    return None


def _new_controller(view: JsonObject, context: Context) -> str | None:
    controller = view["controller"]["id"]
    if controller is None or controller == context.victim:
        return None
    broker = _broker(view, controller)
    if broker is None or not broker["alive"]:
        return None
    return f"broker {controller} won the election: /controller = {controller}"


def _epoch_bumped(view: JsonObject, context: Context) -> str | None:
    epoch = view["controller"]["epoch"]
    if epoch is None or epoch <= context.epoch or view["controller"]["id"] == context.victim:
        return None
    return f"/controller_epoch {context.epoch} -> {epoch}"


def _leaders_moved(view: JsonObject, context: Context) -> str | None:
    if not context.led:
        return f"broker {context.victim} led no partition: nothing to move"
    partitions = _partitions(view)
    moves = []
    for name, old_epoch in sorted(context.led.items()):
        partition = partitions.get(name)
        if partition is None:
            continue
        if partition["leader"] == context.victim:
            return None
        moves.append(
            f"{name}: leader {context.victim} -> {partition['leader']} "
            f"(leader epoch {old_epoch} -> {partition['leader_epoch']})"
        )
    return "; ".join(moves)


def _all_led(view: JsonObject, context: Context) -> str | None:
    if not view["zookeeper"]["reachable"]:
        return None
    partitions = _partitions(view)
    if any(p["offline"] for p in partitions.values()):
        return None
    return f"all {len(partitions)} partitions have a live leader"


KILL_THE_CONTROLLER: list[Step] = [
    Step(
        "kill -9 the controller",
        "The lab sends SIGKILL to the controller broker: no controlled shutdown, no goodbye "
        "to ZooKeeper. Its sockets close, but its ZooKeeper session lives on for now.",
        _process_gone,
    ),
    Step(
        "its ZooKeeper session expires",
        "ZooKeeper hears nothing from the session for zookeeper.session.timeout.ms and expires "
        "it, deleting every ephemeral znode the session owned, starting with the broker's "
        "registration /brokers/ids/<id>.",
        _registration_gone,
    ),
    Step(
        "/controller is deleted",
        "/controller is ephemeral too, owned by the same session, so it goes at the same "
        "moment. Every broker watches it.",
        _controller_znode_gone,
    ),
    Step(
        "another broker wins the election",
        "Each surviving broker's watch fires and it tries to create /controller; ZooKeeper lets "
        "exactly one create succeed. That broker is the new controller.",
        _new_controller,
    ),
    Step(
        "the controller epoch goes up",
        "The winner sets /controller_epoch to epoch+1 in the same multi-op as its create; every "
        "later controller write checks that version, so a zombie controller is fenced.",
        _epoch_bumped,
    ),
    Step(
        "leaders of the dead broker's partitions move",
        "The new controller reads the cluster, sees the broker gone (BrokerChange) and, for "
        "every partition it led, elects the first live ISR replica, bumping the leader epoch "
        "and shrinking the ISR in the partition state znode.",
        _leaders_moved,
    ),
    Step(
        "every partition has a live leader",
        "LeaderAndIsr and UpdateMetadata requests tell the brokers; clients refresh metadata "
        "and carry on with the new leaders.",
        _all_led,
    ),
]


@dataclass
class ScenarioRun:
    """Progress of one run, as sent to the page."""

    name: str
    steps: list[Step]
    context: Context | None = None
    current: int = 0
    status: str = "running"  # running, done, failed
    observations: list[str | None] = field(default_factory=list)
    times: list[str | None] = field(default_factory=list)
    reason: str | None = None
    step_started_s: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.observations = [None] * len(self.steps)
        self.times = [None] * len(self.steps)

    def observe(self, view: JsonObject, now_s: float | None = None) -> bool:
        """Advance over every step the snapshot confirms; True when something changed."""
        if self.status != "running" or self.context is None:
            return False
        changed = False
        while self.current < len(self.steps):
            observed = self.steps[self.current].check(view, self.context)
            if observed is None:
                break
            self.observations[self.current] = observed
            self.times[self.current] = view["time"]
            self.current += 1
            self.step_started_s = time.monotonic() if now_s is None else now_s
            changed = True
        if self.current == len(self.steps):
            self.status = "done"
            changed = True
        elif (time.monotonic() if now_s is None else now_s) - self.step_started_s > STEP_TIMEOUT_S:
            self.fail(f"step {self.current + 1} not observed within {STEP_TIMEOUT_S:.0f} s")
            changed = True
        return changed

    def fail(self, reason: str) -> None:
        self.status = "failed"
        self.reason = reason

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "victim": self.context.victim if self.context else None,
            "steps": [
                {
                    "title": step.title,
                    "explanation": step.explanation,
                    "state": "done"
                    if index < self.current
                    else (
                        "waiting"
                        if index == self.current and self.status == "running"
                        else "pending"
                    ),
                    "observed": self.observations[index],
                    "time": self.times[index],
                }
                for index, step in enumerate(self.steps)
            ],
        }


def prepare(view: JsonObject) -> Context | str:
    """The context of a run from the snapshot before the fault, or why it cannot start."""
    if not view["zookeeper"]["reachable"]:
        return "ZooKeeper is unreachable"
    controller = view["controller"]["id"]
    epoch = view["controller"]["epoch"]
    if controller is None or epoch is None:
        return "there is no controller right now"
    broker = _broker(view, controller)
    if broker is None or not broker["alive"]:
        return f"controller {controller} is not a live broker of this cluster"
    led = {
        name: partition["leader_epoch"] or 0
        for name, partition in _partitions(view).items()
        if partition["leader"] == controller
    }
    return Context(victim=controller, epoch=epoch, led=led)
