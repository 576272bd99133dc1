"""The guided scenarios (see `scenario` for how they run): kill the controller, pause a follower
past replica.lag.time.max.ms, controlled shutdown, and expire a broker's ZooKeeper session;
"lose the ISR and elect uncleanly" is in `scenario_unclean`. Each check reads only the
snapshot and the run's context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .scenario import (
    DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    DEFAULT_SESSION_TIMEOUT_MS,
    Context,
    Scenario,
    Step,
    all_led,
    back_in_isrs,
    base_context,
    broker,
    cluster_ready,
    leaders_moved,
    live,
    non_controllers,
    out_of_isrs,
    partitions,
    paused,
    process_gone,
    registered_anew,
    registration_gone,
    resumed,
    signal,
    user_partitions,
)
from .scenario_unclean import UNCLEAN
from .snapshot import JsonObject

if TYPE_CHECKING:
    from .operator import Operator

FOLLOWER_BURST_RECORDS = 20


# Kill the controller.


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
    found = broker(view, controller)
    if found is None or not found["alive"]:
        return None
    return f"broker {controller} won the election: /controller = {controller}"


def _epoch_bumped(view: JsonObject, context: Context) -> str | None:
    epoch = view["controller"]["epoch"]
    if epoch is None or epoch <= context.epoch or view["controller"]["id"] == context.victim:
        return None
    return f"/controller_epoch {context.epoch} -> {epoch}"


def prepare_kill_the_controller(view: JsonObject, settings: dict[str, str]) -> Context | str:
    not_ready = cluster_ready(view)
    if not_ready:
        return not_ready
    controller = view["controller"]["id"]
    found = broker(view, controller)
    if found is None or not found["alive"]:
        return f"controller {controller} is not a live broker of this cluster"
    return base_context(view, controller, settings)


KILL_THE_CONTROLLER = Scenario(
    "kill-the-controller",
    "kill the controller",
    "SIGKILL the controller broker and watch ZooKeeper elect another.",
    [
        Step(
            "kill -9 the controller",
            "The lab sends SIGKILL to the controller broker: no controlled shutdown, no goodbye "
            "to ZooKeeper. Its sockets close, but its ZooKeeper session lives on for now.",
            process_gone,
            signal("broker", "kill"),
        ),
        Step(
            "its ZooKeeper session expires",
            "ZooKeeper hears nothing from the session for zookeeper.session.timeout.ms and "
            "expires it, deleting every ephemeral znode the session owned, starting with the "
            "broker's registration /brokers/ids/<id>.",
            registration_gone,
        ),
        Step(
            "/controller is deleted",
            "/controller is ephemeral too, owned by the same session, so it goes at the same "
            "moment. Every broker watches it.",
            _controller_znode_gone,
        ),
        Step(
            "another broker wins the election",
            "Each surviving broker's watch fires and it tries to create /controller; ZooKeeper "
            "lets exactly one create succeed. That broker is the new controller.",
            _new_controller,
        ),
        Step(
            "the controller epoch goes up",
            "The winner sets /controller_epoch to epoch+1 in the same multi-op as its create; "
            "every later controller write checks that version, so a zombie controller is fenced.",
            _epoch_bumped,
        ),
        Step(
            "leaders of the dead broker's partitions move",
            "The new controller reads the cluster, sees the broker gone (BrokerChange) and, for "
            "every partition it led, elects the first live ISR replica, bumping the leader epoch "
            "and shrinking the ISR in the partition state znode.",
            leaders_moved,
        ),
        Step(
            "every partition has a live leader",
            "LeaderAndIsr and UpdateMetadata requests tell the brokers; clients refresh metadata "
            "and carry on with the new leaders.",
            all_led,
        ),
    ],
    prepare_kill_the_controller,
)


# Pause a follower past replica.lag.time.max.ms.


def prepare_pause_a_follower(view: JsonObject, settings: dict[str, str]) -> Context | str:
    not_ready = cluster_ready(view)
    if not_ready:
        return not_ready
    for candidate in non_controllers(view):
        followed = {
            name: p
            for name, p in user_partitions(view).items()
            if candidate in p["isr"] and p["leader"] != candidate and live(view, p["leader"])
        }
        if followed:
            context = base_context(view, candidate, settings)
            context.in_isr = {name: list(p["isr"]) for name, p in followed.items()}
            context.facts["log_ends"] = {
                name: p["log_end"].get(str(candidate)) for name, p in followed.items()
            }
            return context
    return "no live broker other than the controller follows a partition of a topic: create one"


async def _burst_to_followed(operator: Operator, context: Context, view: JsonObject) -> str | None:
    for name in sorted(context.in_isr):
        topic, _, number = name.rpartition("-")
        values = [f"while-{context.victim}-paused-{i}" for i in range(FOLLOWER_BURST_RECORDS)]
        delivered = await operator.produce(topic, values, int(number), acks="1")
        if delivered.errors and not delivered.records:
            return f"produce to {name} failed: {delivered.errors[0]}"
    return None


def _follower_behind(view: JsonObject, context: Context) -> str | None:
    found = partitions(view)
    before = context.facts.get("log_ends", {})
    for name in sorted(context.in_isr):
        partition = found.get(name)
        if partition is None:
            continue
        leader_end = partition["log_end"].get(str(partition["leader"]))
        victim_end = before.get(name)
        if leader_end is not None and victim_end is not None and leader_end > victim_end:
            return (
                f"{name}: leader {partition['leader']} at log end {leader_end}, broker "
                f"{context.victim} stuck at {victim_end} (paused: its /metrics does not answer)"
            )
    return None


def _follower_dropped(view: JsonObject, context: Context) -> str | None:
    observed = out_of_isrs(view, context)
    if observed is None:
        return None
    registered = (broker(view, context.victim) or {}).get("registered")
    lag_ms = context.setting_ms("replica.lag.time.max.ms", DEFAULT_REPLICA_LAG_TIME_MAX_MS)
    session_ms = context.setting_ms("zookeeper.session.timeout.ms", DEFAULT_SESSION_TIMEOUT_MS)
    if registered:
        who = (
            f"the leaders shrank the ISR: no fetch caught up for replica.lag.time.max.ms="
            f"{lag_ms} while its ZooKeeper session (timeout {session_ms} ms) was still alive"
        )
    else:
        who = (
            f"its ZooKeeper session expired first (zookeeper.session.timeout.ms={session_ms} < "
            f"replica.lag.time.max.ms={lag_ms}): the controller removed it as a dead broker"
        )
    return f"{observed}; {who}"


PAUSE_A_FOLLOWER = Scenario(
    "pause-a-follower",
    "pause a follower past replica.lag.time.max.ms",
    "SIGSTOP a follower, keep producing, and watch its leaders drop it from the ISR.",
    [
        Step(
            "pause a follower (SIGSTOP)",
            "The lab stops a broker that follows partitions of your topics. A stopped process "
            "keeps its sockets and its ZooKeeper session, but fetches nothing and sends no "
            "heartbeat.",
            paused,
            signal("broker", "stop"),
        ),
        Step(
            "the leaders move on without it",
            "The lab produces a few records to each partition it follows, with acks=1 so the "
            "producer does not wait for the paused follower: the leaders' log ends move, the "
            "follower's does not. With acks=all the producer would wait, and the high watermark "
            "would not move, until the follower leaves the ISR.",
            _follower_behind,
            _burst_to_followed,
        ),
        Step(
            "the follower leaves the ISR",
            "Every replica.lag.time.max.ms / 2 each leader checks its followers: one that has "
            "not caught up to the log end within replica.lag.time.max.ms is dropped; the leader "
            "asks the controller (AlterPartition), which writes the smaller ISR to the partition "
            "state znode. If zookeeper.session.timeout.ms is shorter, the session expires first "
            "and the controller drops the broker everywhere.",
            _follower_dropped,
        ),
        Step(
            "resume it (SIGCONT)",
            "The process carries on where it stopped; if its session expired meanwhile, it "
            "learns so from ZooKeeper and registers again.",
            resumed,
            signal("broker", "cont"),
        ),
        Step(
            "it catches up and rejoins the ISR",
            "It fetches what it missed; once its fetch offset reaches the leader's high "
            "watermark the leader adds it back to the ISR (an ISR expansion).",
            back_in_isrs,
        ),
    ],
    prepare_pause_a_follower,
)


# Expire a broker's ZooKeeper session.


def _leading_non_controller(view: JsonObject, settings: dict[str, str]) -> Context | str:
    """A context on a live broker other than the controller, preferring one that leads a
    partition (so the scenario shows leaders moving); or why there is none."""
    not_ready = cluster_ready(view)
    if not_ready:
        return not_ready
    candidates = non_controllers(view)
    if not candidates:
        return "no live broker other than the controller"
    leading = [c for c in candidates if any(p["leader"] == c for p in partitions(view).values())]
    return base_context(view, (leading or candidates)[0], settings)


def prepare_expire_session(view: JsonObject, settings: dict[str, str]) -> Context | str:
    return _leading_non_controller(view, settings)


def _expiry_counted(view: JsonObject, context: Context) -> str | None:
    observed = registered_anew(view, context)
    if observed is None:
        return None
    expires = (broker(view, context.victim) or {}).get("zookeeper_expires")
    counted = f"; its zookeeperexpires counter reads {expires:g}" if expires is not None else ""
    return observed + counted


EXPIRE_SESSION = Scenario(
    "expire-session",
    "expire a broker's ZooKeeper session",
    "Pause a broker past zookeeper.session.timeout.ms, then let it find its session gone.",
    [
        Step(
            "pause the broker (SIGSTOP)",
            "The lab stops a broker that is not the controller. It sends ZooKeeper no "
            "heartbeats from now on, yet believes it still leads its partitions.",
            paused,
            signal("broker", "stop"),
        ),
        Step(
            "ZooKeeper expires its session",
            "After zookeeper.session.timeout.ms without a heartbeat ZooKeeper expires the "
            "session and deletes its ephemeral registration, /brokers/ids/<id>.",
            registration_gone,
        ),
        Step(
            "the controller moves its leaders",
            "The controller's watch on /brokers/ids fires (BrokerChange): it elects new leaders "
            "for the partitions the broker led, from their ISRs, and bumps their leader epochs. "
            "The paused broker is now a zombie leader, fenced by those epochs.",
            leaders_moved,
        ),
        Step(
            "and takes it out of every ISR",
            "The dead replica is removed from the ISR of every partition it was in.",
            out_of_isrs,
        ),
        Step(
            "resume it: it registers with a new session",
            "On SIGCONT the broker's ZooKeeper client reconnects, is told the session expired, "
            "opens a new one and registers again: a new czxid, so a new broker epoch. The "
            "controller sees it come back and sends it LeaderAndIsr.",
            _expiry_counted,
            signal("broker", "cont"),
        ),
        Step(
            "it catches up and rejoins the ISR",
            "As a follower it truncates to what the leaders agree on and fetches; caught up, "
            "it is added back to each ISR.",
            back_in_isrs,
        ),
    ],
    prepare_expire_session,
)


# Controlled shutdown.


def prepare_controlled_shutdown(view: JsonObject, settings: dict[str, str]) -> Context | str:
    context = _leading_non_controller(view, settings)
    if isinstance(context, str):
        return context
    context.facts["preferred"] = {
        n: p["replicas"][0] for n, p in partitions(view).items() if n in context.led
    }
    return context


def _moved_first(view: JsonObject, context: Context) -> str | None:
    observed = leaders_moved(view, context)
    if observed is None:
        return None
    found = broker(view, context.victim) or {}
    when = (
        f"while broker {context.victim} was still registered"
        if found.get("registered")
        else f"(broker {context.victim} had left by the time the lab looked)"
    )
    return f"{observed} {when}"


def _left_cleanly(view: JsonObject, context: Context) -> str | None:
    found = broker(view, context.victim)
    if found is None or found["alive"] or found["registered"] is not False:
        return None
    return (
        f"broker {context.victim} exited and closed its ZooKeeper session: "
        f"/brokers/ids/{context.victim} went at once, no session timeout to wait"
    )


async def _elect_preferred(operator: Operator, context: Context, view: JsonObject) -> str | None:
    outcome = await operator.elect("preferred", None, None)
    return None if outcome.ok else outcome.output or "kafka-leader-election failed"


def _preferred_again(view: JsonObject, context: Context) -> str | None:
    found = partitions(view)
    moves = []
    for name, preferred in sorted(context.facts.get("preferred", {}).items()):
        partition = found.get(name)
        if partition is None:
            continue
        if partition["leader"] != preferred:
            return None
        moves.append(f"{name}: leader {preferred}")
    if not moves:
        return "no partition to move back"
    return "preferred replicas lead again: " + "; ".join(moves[:4])


CONTROLLED_SHUTDOWN = Scenario(
    "controlled-shutdown",
    "controlled shutdown",
    "SIGTERM a broker: it hands its leaderships over before it leaves.",
    [
        Step(
            "SIGTERM a broker",
            "The lab sends SIGTERM (what `kafka-server-stop` does). With "
            "controlled.shutdown.enable=true the broker asks the controller to move everything "
            "off it before it stops (ControlledShutdown).",
            _moved_first,
            signal("broker", "term"),
        ),
        Step(
            "it leaves every ISR",
            "For partitions it only follows, the controller removes it from the ISR, so "
            "producers with acks=all do not wait for a broker that is going away.",
            out_of_isrs,
        ),
        Step(
            "it exits and its registration goes at once",
            "Only then does the broker stop, closing its ZooKeeper session itself: the "
            "ephemeral /brokers/ids/<id> is deleted at once, no session timeout.",
            _left_cleanly,
        ),
        Step(
            "start it again",
            "The broker registers with a new session (a new broker epoch) and the controller "
            "makes it a follower of its partitions.",
            registered_anew,
            signal("broker", "start"),
        ),
        Step(
            "it catches up and rejoins the ISR",
            "It fetches what it missed and the leaders add it back to the ISR.",
            back_in_isrs,
        ),
        Step(
            "a preferred election gives it its leaderships back",
            "Leadership does not move back by itself until auto.leader.rebalance.enable's next "
            "check (leader.imbalance.check.interval.seconds); the lab runs "
            "`kafka-leader-election --election-type preferred --all-topic-partitions`.",
            _preferred_again,
            _elect_preferred,
        ),
    ],
    prepare_controlled_shutdown,
)


SCENARIOS: dict[str, Scenario] = {
    s.slug: s
    for s in (KILL_THE_CONTROLLER, PAUSE_A_FOLLOWER, UNCLEAN, CONTROLLED_SHUTDOWN, EXPIRE_SESSION)
}
