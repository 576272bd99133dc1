"""Guided scenarios: a fault, then what classic Kafka does, step by step, each step marked done
only when the lab observes it (ZooKeeper, the processes and the brokers' metrics, through the
snapshots).

A scenario is data: steps with a title, what Kafka does and why, an optional act (what the lab
does when the step comes up: a signal, a produce burst, an election) and a pure check of a
snapshot that returns what was observed, or None while it has not happened yet. `ScenarioRun`
holds the progress the page shows; `drive` runs the acts and feeds it the collector's
snapshots. The scenarios themselves are in `scenarios`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .snapshot import JsonObject

if TYPE_CHECKING:
    from .operator import Operator

STEP_TIMEOUT_S = 150.0
# Kafka's defaults, for the narration when the cluster does not override them.
DEFAULT_SESSION_TIMEOUT_MS = 18_000
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000
INTERNAL_TOPIC_PREFIX = "__"
MOVES_SHOWN = 4


@dataclass
class Context:
    """What a run learnt before the fault, and what it records on the way."""

    victim: int
    epoch: int = 0  # the controller epoch before the fault
    victim_epoch: int | None = None  # the victim's broker epoch before the fault
    # "topic-partition" -> leader epoch, of every partition the victim led
    led: dict[str, int] = field(default_factory=dict)
    # "topic-partition" -> ISR, of every partition whose ISR held the victim
    in_isr: dict[str, list[int]] = field(default_factory=dict)
    partner: int | None = None  # a second broker, for scenarios that need two
    topic: str | None = None
    settings: dict[str, str] = field(default_factory=dict)  # the brokers' config overrides
    facts: dict[str, Any] = field(default_factory=dict)
    detail: list[str] = field(default_factory=list)  # shown under the steps (e.g. lost data)

    def setting_ms(self, key: str, default_ms: int) -> int:
        try:
            return int(self.settings.get(key, default_ms))
        except ValueError:
            return default_ms


Check = Callable[[JsonObject, Context], str | None]
Act = Callable[["Operator", Context, JsonObject], Awaitable[str | None]]  # None or an error


@dataclass(frozen=True)
class Step:
    title: str
    explanation: str
    check: Check
    act: Act | None = None


@dataclass(frozen=True)
class Scenario:
    slug: str
    name: str
    summary: str
    steps: list[Step]
    prepare: Callable[[JsonObject, dict[str, str]], Context | str]


@dataclass
class ScenarioRun:
    """Progress of one run, as sent to the page."""

    name: str
    steps: list[Step]
    context: Context | None = None
    slug: str = ""
    current: int = 0
    status: str = "running"  # running, done, failed
    observations: list[str | None] = field(default_factory=list)
    times: list[str | None] = field(default_factory=list)
    acted: list[bool] = field(default_factory=list)
    reason: str | None = None
    step_started_s: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.observations = [None] * len(self.steps)
        self.times = [None] * len(self.steps)
        self.acted = [False] * len(self.steps)

    def pending_act(self) -> Act | None:
        """The current step's act, if it has one that has not run yet."""
        if self.status != "running" or self.current >= len(self.steps):
            return None
        step = self.steps[self.current]
        return None if step.act is None or self.acted[self.current] else step.act

    def observe(self, view: JsonObject, now_s: float | None = None) -> bool:
        """Advance over every step the snapshot confirms (stopping at a step whose act has not
        run yet); True when something changed."""
        if self.status != "running" or self.context is None:
            return False
        now_s = time.monotonic() if now_s is None else now_s
        changed = False
        while self.current < len(self.steps) and self.pending_act() is None:
            observed = self.steps[self.current].check(view, self.context)
            if observed is None:
                break
            self.observations[self.current] = observed
            self.times[self.current] = view["time"]
            self.current += 1
            self.step_started_s = now_s
            changed = True
        if self.current == len(self.steps):
            self.status = "done"
            changed = True
        elif self.pending_act() is None and now_s - self.step_started_s > STEP_TIMEOUT_S:
            self.fail(f"step {self.current + 1} not observed within {STEP_TIMEOUT_S:.0f} s")
            changed = True
        return changed

    def fail(self, reason: str) -> None:
        self.status = "failed"
        self.reason = reason

    def _state(self, index: int) -> str:
        if index < self.current:
            return "done"
        if index == self.current and self.status == "running":
            return "acting" if self.acted[index] is False and self.steps[index].act else "waiting"
        if index == self.current and self.status == "failed":
            return "failed"
        return "pending"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "slug": self.slug,
            "status": self.status,
            "reason": self.reason,
            "victim": self.context.victim if self.context else None,
            "detail": list(self.context.detail) if self.context else [],
            "steps": [
                {
                    "title": step.title,
                    "explanation": step.explanation,
                    "state": self._state(index),
                    "observed": self.observations[index],
                    "time": self.times[index],
                }
                for index, step in enumerate(self.steps)
            ],
        }


class Snapshots(Protocol):
    latest: JsonObject | None

    async def wait_for_poll(self) -> None: ...


async def drive(
    run: ScenarioRun, operator: Operator, snapshots: Snapshots, publish: Callable[[], None]
) -> None:
    """Run each step's act when the step comes up, then let the snapshots confirm it."""
    publish()
    while run.status == "running" and run.context is not None:
        act = run.pending_act()
        if act is not None:
            run.acted[run.current] = True
            publish()
            view = snapshots.latest
            try:
                error = await act(operator, run.context, view or {})
            except Exception as failure:  # a scenario must end, not hang, on a broken act
                error = f"{type(failure).__name__}: {failure}"
            if error is not None:
                run.fail(f"step {run.current + 1}: {error}")
                break
            run.step_started_s = time.monotonic()
            publish()
        await snapshots.wait_for_poll()
        latest = snapshots.latest
        if latest is not None and run.observe(latest):
            publish()
    publish()


# Reading a snapshot (what the checks of every scenario share).


def broker(view: JsonObject, broker_id: int) -> JsonObject | None:
    found: JsonObject | None = None
    for candidate in view.get("brokers", []):
        if candidate["id"] == broker_id:
            found = candidate
    return found


def partitions(view: JsonObject) -> dict[str, JsonObject]:
    return {
        f"{t['name']}-{p['partition']}": p for t in view.get("topics", []) for p in t["partitions"]
    }


def user_partitions(view: JsonObject) -> dict[str, JsonObject]:
    """Partitions of the learner's topics (not __consumer_offsets and the like)."""
    return {
        f"{t['name']}-{p['partition']}": p
        for t in view.get("topics", [])
        if not t["name"].startswith(INTERNAL_TOPIC_PREFIX)
        for p in t["partitions"]
    }


def live(view: JsonObject, broker_id: int) -> bool:
    found = broker(view, broker_id)
    return bool(found and found["alive"] and not found["paused"] and found["registered"])


def names(keys: list[str], limit: int = 4) -> str:
    """A short list of partition names: `t-0, t-1, t-2 and 5 more`."""
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


# What several scenarios share: acts and checks.


def signal(target: str, verb: str, who: str = "victim") -> Act:
    async def act(operator: Operator, context: Context, view: JsonObject) -> str | None:
        broker_id = context.victim if who == "victim" else context.partner
        if broker_id is None:
            return "no broker to signal"
        if verb == "stop":
            context.facts["paused_at"] = time.monotonic()
        outcome = await operator.signal(target, broker_id, verb)
        return None if outcome.ok else outcome.output or "scripts/cluster failed"

    return act


# Checks shared by several scenarios.


def process_gone(view: JsonObject, context: Context) -> str | None:
    found = broker(view, context.victim)
    if found is not None and not found["alive"]:
        return f"broker {context.victim}'s process is gone"
    return None


def paused(view: JsonObject, context: Context) -> str | None:
    found = broker(view, context.victim)
    if found is not None and found["paused"]:
        return f"broker {context.victim} is stopped (process state T in /proc)"
    return None


def resumed(view: JsonObject, context: Context) -> str | None:
    found = broker(view, context.victim)
    if found is not None and found["alive"] and not found["paused"]:
        return f"broker {context.victim} runs again"
    return None


def registration_gone(view: JsonObject, context: Context) -> str | None:
    if not view["zookeeper"]["reachable"]:
        return None
    found = broker(view, context.victim)
    if found is None or found["registered"] is not False:
        return None
    paused_at = context.facts.get("paused_at")
    after = f", {time.monotonic() - paused_at:.1f} s after the pause" if paused_at else ""
    return f"/brokers/ids/{context.victim} no longer exists{after}"


def _user_first(name: str) -> tuple[bool, str]:
    return (name.startswith(INTERNAL_TOPIC_PREFIX), name)


def leaders_moved(view: JsonObject, context: Context) -> str | None:
    if not context.led:
        return f"broker {context.victim} led no partition: nothing to move"
    found = partitions(view)
    moves = []
    for name in sorted(context.led, key=_user_first):
        partition = found.get(name)
        if partition is None:
            continue
        if partition["leader"] == context.victim or partition["offline"]:
            return None
        moves.append(
            f"{name}: leader {context.victim} -> {partition['leader']} "
            f"(leader epoch {context.led[name]} -> {partition['leader_epoch']})"
        )
    more = f" and {len(moves) - MOVES_SHOWN} more" if len(moves) > MOVES_SHOWN else ""
    return "; ".join(moves[:MOVES_SHOWN]) + more


def out_of_isrs(view: JsonObject, context: Context) -> str | None:
    found = partitions(view)
    shrunk = []
    for name in sorted(context.in_isr, key=_user_first):
        partition = found.get(name)
        if partition is not None and context.victim in partition["isr"]:
            return None
        if partition is not None:
            shrunk.append(name)
    registered = (broker(view, context.victim) or {}).get("registered")
    still = " (it is still registered)" if registered else ""
    return f"broker {context.victim} left the ISR of {names(shrunk)}{still}"


def back_in_isrs(view: JsonObject, context: Context) -> str | None:
    found = partitions(view)
    back = []
    for name in sorted(context.in_isr, key=_user_first):
        partition = found.get(name)
        if partition is not None and context.victim not in partition["isr"]:
            return None
        if partition is not None:
            back.append(f"{name} ISR {partition['isr']}")
    return (
        f"broker {context.victim} caught up: "
        + "; ".join(back[:4])
        + (f" and {len(back) - 4} more" if len(back) > 4 else "")
    )


def registered_anew(view: JsonObject, context: Context) -> str | None:
    found = broker(view, context.victim)
    if found is None or not found["registered"] or not found["alive"] or found["paused"]:
        return None
    if found["epoch"] == context.victim_epoch:
        return None
    return (
        f"/brokers/ids/{context.victim} created again: broker epoch "
        f"{context.victim_epoch} -> {found['epoch']}"
    )


def all_led(view: JsonObject, context: Context) -> str | None:
    if not view["zookeeper"]["reachable"]:
        return None
    found = partitions(view)
    if any(p["offline"] for p in found.values()):
        return None
    return f"all {len(found)} partitions have a live leader"


def base_context(view: JsonObject, victim: int, settings: dict[str, str]) -> Context:
    every = partitions(view)
    return Context(
        victim=victim,
        epoch=view["controller"]["epoch"] or 0,
        victim_epoch=(broker(view, victim) or {}).get("epoch"),
        # Partitions only the victim holds stay offline: nothing to move, left out.
        led={
            n: p["leader_epoch"] or 0
            for n, p in every.items()
            if p["leader"] == victim and len(p["isr"]) > 1
        },
        in_isr={n: list(p["isr"]) for n, p in every.items() if victim in p["isr"]},
        settings=dict(settings),
    )


def cluster_ready(view: JsonObject) -> str | None:
    if not view["zookeeper"]["reachable"]:
        return "ZooKeeper is unreachable"
    if view["controller"]["id"] is None:
        return "there is no controller right now"
    return None


def non_controllers(view: JsonObject) -> list[int]:
    controller = view["controller"]["id"]
    return [b["id"] for b in view["brokers"] if live(view, b["id"]) and b["id"] != controller]
