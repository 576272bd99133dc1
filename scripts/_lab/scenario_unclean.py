"""The guided scenario "lose the ISR and elect uncleanly": a partition's ISR shrinks to its
leader, the leader dies, the stale follower is elected uncleanly, and the acknowledged
records only the old leader had are shown lost."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .scenario import (
    Act,
    Context,
    Scenario,
    Step,
    base_context,
    broker,
    cluster_ready,
    live,
    non_controllers,
    partitions,
    signal,
)
from .snapshot import JsonObject

if TYPE_CHECKING:
    from .operator import Operator

UNCLEAN_SAFE_RECORDS = 10
UNCLEAN_LOST_RECORDS = 20
UNCLEAN_AFTER_RECORDS = 5


# Lose the ISR and elect uncleanly.


def prepare_unclean(view: JsonObject, settings: dict[str, str]) -> Context | str:
    not_ready = cluster_ready(view)
    if not_ready:
        return not_ready
    controller = view["controller"]["id"]
    candidates = non_controllers(view)
    if len(candidates) < 2:
        candidates += [controller] if live(view, controller) else []
    if len(candidates) < 2:
        return "two live brokers are needed"
    leader, follower = candidates[0], candidates[1]
    context = base_context(view, leader, settings)
    context.partner = follower
    context.topic = f"lab-unclean-{time.strftime('%H%M%S')}"
    return context


def _partition(view: JsonObject, context: Context) -> JsonObject | None:
    return partitions(view).get(f"{context.topic}-0")


def _log_end(partition: JsonObject, broker_id: int | None) -> int | None:
    value = partition["log_end"].get(str(broker_id))
    return None if value is None else int(value)


async def _create_topic(operator: Operator, context: Context, view: JsonObject) -> str | None:
    if context.topic is None or context.partner is None:
        return "no topic chosen"
    outcome = await operator.create_topic(context.topic, [[context.victim, context.partner]])
    return None if outcome.ok else outcome.output or "kafka-topics failed"


def _created(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    if partition is None or partition["leader"] != context.victim:
        return None
    if context.partner is None or sorted(partition["isr"]) != sorted(
        [context.victim, context.partner]
    ):
        return None
    return (
        f"{context.topic}-0: replicas {partition['replicas']}, leader {context.victim}, "
        f"ISR {partition['isr']}"
    )


def _producer(prefix: str, first: int, count: int, key: str) -> Act:
    async def act(operator: Operator, context: Context, view: JsonObject) -> str | None:
        if context.topic is None:
            return "no topic"
        values = [f"{prefix}-{i}" for i in range(first, first + count)]
        delivered = await operator.produce(context.topic, values, 0, acks="all")
        if delivered.errors:
            return f"produce failed: {delivered.errors[0]}"
        context.facts[key] = [(offset, value) for _, offset, value in delivered.records]
        return None

    return act


def _replicated(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    written = context.facts.get("safe", [])
    if partition is None or not written:
        return None
    end = written[-1][0] + 1
    follower_end = _log_end(partition, context.partner)
    if follower_end is None or follower_end < end:
        return None
    return f"offsets 0-{end - 1} acknowledged (acks=all) and on both replicas: log ends {end}"


def _follower_out(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    partner = broker(view, context.partner or -1)
    if partition is None or partner is None or partner["alive"]:
        return None
    if partition["isr"] != [context.victim]:
        return None
    return f"broker {context.partner} stopped; {context.topic}-0 ISR is now [{context.victim}]"


def _only_on_leader(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    written = context.facts.get("exposed", [])
    if partition is None or not written:
        return None
    first, last = written[0][0], written[-1][0]
    leader_end = _log_end(partition, context.victim)
    if leader_end is None or leader_end <= last:
        return None
    return (
        f"offsets {first}-{last} acknowledged with acks=all (the ISR was just "
        f"[{context.victim}], min.insync.replicas allowed it) and stored only on broker "
        f"{context.victim}"
    )


def _offline(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    victim = broker(view, context.victim)
    if partition is None or victim is None or victim["alive"] or victim["registered"]:
        return None
    if partition["leader"] != -1:
        return None
    return (
        f"{context.topic}-0 is offline: leader -1, ISR {partition['isr']} (the controller keeps "
        "the last ISR member: only it could be elected cleanly)"
    )


def _still_offline(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    if partition is None or not live(view, context.partner or -1):
        return None
    if partition["leader"] == context.partner:
        return (
            f"broker {context.partner} is back and was elected at once: "
            "unclean.leader.election.enable is true on this cluster"
        )
    if partition["leader"] != -1:
        return None
    return (
        f"broker {context.partner} is back but not in the ISR: with "
        f"unclean.leader.election.enable=false {context.topic}-0 stays offline"
    )


async def _elect_unclean(operator: Operator, context: Context, view: JsonObject) -> str | None:
    partition = _partition(view, context)
    if partition is not None and partition["leader"] == context.partner:
        return None  # already elected (unclean elections enabled on the cluster)
    outcome = await operator.elect("unclean", context.topic, 0)
    return None if outcome.ok else outcome.output or "kafka-leader-election failed"


def _unclean_leader(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    if partition is None or partition["leader"] != context.partner:
        return None
    end = _log_end(partition, context.partner)
    return (
        f"broker {context.partner} leads {context.topic}-0 (leader epoch "
        f"{partition['leader_epoch']}) with its log ending at {end}"
    )


def _truncated(view: JsonObject, context: Context) -> str | None:
    partition = _partition(view, context)
    if partition is None or not live(view, context.victim):
        return None
    victim_end = _log_end(partition, context.victim)
    leader_end = _log_end(partition, context.partner)
    exposed = context.facts.get("exposed", [])
    if victim_end is None or leader_end is None or victim_end != leader_end or not exposed:
        return None
    return (
        f"broker {context.victim} truncated its log from {exposed[-1][0] + 1} to {victim_end} "
        f"and follows broker {context.partner}"
    )


async def _show_lost(operator: Operator, context: Context, view: JsonObject) -> str | None:
    if context.topic is None:
        return "no topic"
    exposed = context.facts.get("exposed", [])
    error = await _producer("after-unclean", 0, UNCLEAN_AFTER_RECORDS, "after")(
        operator, context, view
    )
    if error is not None:
        return error
    now = dict(await operator.read_partition(context.topic, 0))
    lost = [(offset, value) for offset, value in exposed if now.get(offset) != value]
    context.facts["lost"] = lost
    context.detail[:] = [
        f"offset {offset}: acknowledged {value!r}, now "
        + (repr(now[offset]) if offset in now else "nothing")
        for offset, value in lost
    ]
    return None


def _lost_shown(view: JsonObject, context: Context) -> str | None:
    lost = context.facts.get("lost")
    if lost is None:
        return None
    if not lost:
        return "no acknowledged record was lost"
    return (
        f"{len(lost)} acknowledged records are gone for good (offsets {lost[0][0]}-"
        f"{lost[-1][0]}); records produced since reuse their offsets, listed below"
    )


UNCLEAN = Scenario(
    "unclean-election",
    "lose the ISR and elect uncleanly",
    "Shrink a partition's ISR to its leader, lose the leader, elect the stale replica.",
    [
        Step(
            "create a topic on two brokers",
            "The lab creates a one-partition topic with two replicas; the first is the leader.",
            _created,
            _create_topic,
        ),
        Step(
            "produce while both replicas are in sync",
            f"{UNCLEAN_SAFE_RECORDS} records with acks=all: the leader answers once the "
            "follower has them too.",
            _replicated,
            _producer("in-sync", 0, UNCLEAN_SAFE_RECORDS, "safe"),
        ),
        Step(
            "stop the follower",
            "SIGTERM: the follower shuts down cleanly and the controller drops it from the ISR, "
            "which is now the leader alone.",
            _follower_out,
            signal("broker", "term", who="partner"),
        ),
        Step(
            "produce to the lone leader",
            f"{UNCLEAN_LOST_RECORDS} more records with acks=all. acks=all means 'every ISR "
            "member', and the ISR is one broker: with min.insync.replicas=1 (the default) they "
            "are acknowledged, held by a single copy.",
            _only_on_leader,
            _producer("only-on-leader", UNCLEAN_SAFE_RECORDS, UNCLEAN_LOST_RECORDS, "exposed"),
        ),
        Step(
            "kill -9 the leader",
            "Its session expires; no other replica is in the ISR, so the controller cannot "
            "elect anyone cleanly: leader -1, partition offline.",
            _offline,
            signal("broker", "kill"),
        ),
        Step(
            "start the stale follower",
            "It registers, but it is not in the ISR: it may lack acknowledged records. Kafka "
            "prefers unavailability to data loss unless told otherwise.",
            _still_offline,
            signal("broker", "start", who="partner"),
        ),
        Step(
            "elect it uncleanly",
            "`kafka-leader-election --election-type unclean` (or "
            "unclean.leader.election.enable=true) lets the controller pick a live replica outside "
            "the ISR. The partition is available again, at the stale replica's log end.",
            _unclean_leader,
            _elect_unclean,
        ),
        Step(
            "start the old leader: it truncates",
            "It comes back as a follower, asks the new leader where its leader epoch ended "
            "(OffsetsForLeaderEpoch) and truncates everything after that point.",
            _truncated,
            signal("broker", "start"),
        ),
        Step(
            "the acknowledged records are lost",
            "The lab produces a few new records and reads the partition from the start: the "
            "offsets of the lost records now hold different data.",
            _lost_shown,
            _show_lost,
        ),
    ],
    prepare_unclean,
)
