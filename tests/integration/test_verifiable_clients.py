"""Kafka's own system-test clients against our brokers, through the faults of Kafka's
replication and rolling-upgrade system tests.

A 3-broker cluster holds a topic of 3 partitions, replication factor 3 and
min.insync.replicas=2. Kafka 3.9's VerifiableProducer (`kafka-verifiable-producer`:
idempotent, acks=all, a bounded rate) writes to it while two groups of three
VerifiableConsumers (`kafka-verifiable-consumer`: classic protocol, a synchronous commit after
every poll) read it, one group with the cooperative-sticky assignor, one with range: both go
through the same faults in one run. Meanwhile, one after another: the leader of
partition 0 is SIGKILLed, then the controller's broker, then every broker is restarted in turn
with SIGTERM (each back and in every ISR before the next); after each fault the test waits
until the producer has acknowledgements on every partition again, and restarts what it killed.

Then the producer stops, the consumers read up to the last acknowledged offset of each
partition and stop, and, as Kafka's ProduceConsumeValidateTest does, the test checks that every
acknowledged value was consumed, that no value sits at two offsets (the producer is idempotent)
and that it was read where the producer was told it was written (each group on its own);
and, as Kafka's verifiable_consumer.py does, that no consumer's successful commits ever moved
a partition's offset backwards and that each consumer read every partition it owned without a
gap or a step back. A record read again after a rebalance (from the last commit) is allowed.

Every event the clients print, their log4j output, what the test did when (`timeline.txt`) and
the brokers' logs end up in the test's tmp_path.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until, zk_session
from tests.integration.jvm_tools import run_jvm_tool
from tests.integration.verifiable_clients import (
    ConsumerProgress,
    ProducerProgress,
    VerifiableClient,
    commit_regressions,
)

# The fixture that runs `make reference` (shared with tests/reference/).
from tests.reference.conftest import reference_lib as reference_lib

pytestmark = pytest.mark.reference

TOPIC = "verifiable"
PARTITIONS = 3
REPLICATION = 3
CONSUMERS = 3
# Low enough that the clients, three brokers and ZooKeeper share two cores with a busy
# neighbour; high enough that every partition gets records every second (about 33).
THROUGHPUT = 100
# Bounds the producer if the test dies without stopping it: far more than the run needs.
MAX_MESSAGES = THROUGHPUT * 600
OVERRIDES = {
    # Quick failure detection keeps each fault short: a SIGKILLed broker's session expires,
    # and a dead follower leaves the ISR, within seconds rather than half a minute.
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "10000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
}
PRODUCER_CONFIG = {
    "enable.idempotence": "true",
    # VerifiableProducer sets retries=0 before reading this file, and an idempotent producer
    # refuses that; Kafka's system tests give it unbounded retries as well.
    "retries": "2147483647",
    "max.in.flight.requests.per.connection": "5",
}
COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"
# Closing the producer races with its main thread's next send; that send fails in the
# client, before it reaches a broker.
CLOSED_PRODUCER_ERROR = "after producer has been closed"

# Every wait is bounded; the bounds allow for JVMs starting on two loaded cores.
CLIENT_START_TIMEOUT_S = 150.0
FAULT_TIMEOUT_S = 120.0
RECOVERY_TIMEOUT_S = 120.0
DRAIN_TIMEOUT_S = 120.0
# The producer's close waits for its outstanding sends (at most delivery.timeout.ms, 120 s).
STOP_TIMEOUT_S = 150.0
TEST_TIMEOUT_S = 900


@dataclass
class Group:
    assignor: str
    consumers: list[VerifiableClient]
    consumed: list[ConsumerProgress]

    @property
    def name(self) -> str:
        return self.assignor.rsplit(".", 1)[-1]


@dataclass
class Clients:
    producer: VerifiableClient
    produced: ProducerProgress
    groups: list[Group]
    timeline: Path  # what the test did when, beside the clients' own output

    @property
    def consumers(self) -> list[VerifiableClient]:
        return [consumer for group in self.groups for consumer in group.consumers]

    def note(self, what: str) -> None:
        with open(self.timeline, "a") as timeline:
            timeline.write(f"{datetime.now().isoformat(sep=' ', timespec='milliseconds')} {what}\n")

    @property
    def all(self) -> list[VerifiableClient]:
        return [self.producer, *self.consumers]

    def diagnostics(self) -> str:
        return "\n".join(client.diagnostics() for client in self.all)


def _create_topic(cluster: ClusterHandle) -> None:
    run = run_jvm_tool(
        "kafka-topics",
        *("--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC),
        *("--partitions", str(PARTITIONS), "--replication-factor", str(REPLICATION)),
        *("--config", "min.insync.replicas=2"),
    )
    assert run.returncode == 0, f"{run.command} exited {run.returncode}\n{run.stderr}"


def _json(zk: KazooClient, path: str) -> Any:
    return json.loads(zk.get(path)[0])


def _partition_states(zk: KazooClient) -> dict[int, dict[str, Any]]:
    try:
        return {
            p: _json(zk, f"/brokers/topics/{TOPIC}/partitions/{p}/state") for p in range(PARTITIONS)
        }
    except NoNodeError:
        return {}


def _controller(zk: KazooClient) -> int | None:
    try:
        return int(_json(zk, "/controller")["brokerid"])
    except NoNodeError:  # between the old controller's session expiry and the next election
        return None


def _isr_full(zk: KazooClient) -> bool:
    states = _partition_states(zk)
    return len(states) == PARTITIONS and all(
        len(state["isr"]) == REPLICATION and state["leader"] >= 0 for state in states.values()
    )


def _start_group(cluster: ClusterHandle, log_dir: Path, assignor: str) -> Group:
    consumed = [ConsumerProgress() for _ in range(CONSUMERS)]
    name = assignor.rsplit(".", 1)[-1]
    consumers = [
        VerifiableClient(
            f"{name}-consumer-{n}",
            "kafka-verifiable-consumer",
            [
                *("--bootstrap-server", cluster.bootstrap, "--topic", TOPIC),
                *("--group-id", f"verifiable-{name}", "--group-protocol", "classic"),
                *("--assignment-strategy", assignor, "--verbose"),
            ],
            log_dir,
            on_event=consumed[n].record,
        )
        for n in range(CONSUMERS)
    ]
    return Group(assignor, consumers, consumed)


def _start_clients(cluster: ClusterHandle, log_dir: Path) -> Clients:
    config = log_dir / "producer.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in PRODUCER_CONFIG.items()))
    groups = [_start_group(cluster, log_dir, assignor) for assignor in (COOPERATIVE, RANGE)]
    produced = ProducerProgress()
    producer = VerifiableClient(
        "producer",
        "kafka-verifiable-producer",
        [
            *("--bootstrap-server", cluster.bootstrap, "--topic", TOPIC, "--acks", "-1"),
            *("--throughput", str(THROUGHPUT), "--max-messages", str(MAX_MESSAGES)),
            *("--producer.config", str(config)),
        ],
        log_dir,
        on_event=produced.record,
    )
    return Clients(producer, produced, groups, log_dir / "timeline.txt")


def _acks_per_partition(clients: Clients) -> Counter[int]:
    with clients.producer.locked():
        return Counter(clients.produced.acked_per_partition)


def _wait_for_new_acks(clients: Clients, what: str) -> None:
    """Until every partition has an acknowledgement it did not have when this was called."""
    before = _acks_per_partition(clients)

    def acknowledged() -> bool:
        _check_running(clients)
        now = _acks_per_partition(clients)
        return all(now[p] > before[p] for p in range(PARTITIONS))

    wait_until(acknowledged, FAULT_TIMEOUT_S, f"new acknowledgements on every partition {what}")
    clients.note(f"new acknowledgements on every partition {what}")


def _check_running(clients: Clients, producing: bool = True) -> None:
    for client in clients.all if producing else clients.consumers:
        if not client.alive:
            pytest.fail(f"{client.name} exited early\n{clients.diagnostics()}")


def _groups_stable(clients: Clients) -> bool:
    """In each group, each consumer owns one partition (3 partitions, 3 members: both
    assignors do that)."""
    _check_running(clients)
    for group in clients.groups:
        owned = []
        for client, progress in zip(group.consumers, group.consumed, strict=True):
            with client.locked():
                owned.append(set(progress.assigned))
        if any(len(partitions) != 1 for partitions in owned):
            return False
        if set().union(*owned) != set(range(PARTITIONS)):
            return False
    return True


def _restart(cluster: ClusterHandle, zk: KazooClient, clients: Clients, broker_id: int) -> None:
    clients.note(f"start broker {broker_id}")
    cluster.start(broker_id)  # returns once the broker is registered again
    clients.note(f"broker {broker_id} registered")
    wait_until(lambda: _isr_full(zk), RECOVERY_TIMEOUT_S, f"broker {broker_id} back in every ISR")
    clients.note(f"broker {broker_id} back in every ISR")


def _wait_stopped(cluster: ClusterHandle, broker_id: int) -> None:
    wait_until(
        lambda: not cluster.broker_alive(broker_id),
        RECOVERY_TIMEOUT_S,
        f"broker {broker_id} to finish its controlled shutdown",
    )


def _kill_partition_leader(cluster: ClusterHandle, zk: KazooClient, clients: Clients) -> int:
    leader = int(_partition_states(zk)[0]["leader"])
    clients.note(f"SIGKILL broker {leader}, the leader of partition 0")
    cluster.kill(leader, "KILL")

    def moved() -> bool:
        state = _partition_states(zk).get(0)
        return state is not None and state["leader"] not in (-1, leader)

    wait_until(moved, FAULT_TIMEOUT_S, f"a new leader of partition 0 after killing {leader}")
    _wait_for_new_acks(clients, f"after SIGKILL of partition 0's leader {leader}")
    return leader


def _kill_controller(cluster: ClusterHandle, zk: KazooClient, clients: Clients) -> int:
    controller = _controller(zk)
    assert controller is not None, "no controller before the controller fault"
    clients.note(f"SIGKILL broker {controller}, the controller")
    cluster.kill(controller, "KILL")
    wait_until(
        lambda: _controller(zk) not in (None, controller),
        FAULT_TIMEOUT_S,
        f"a new controller after killing broker {controller}",
    )
    _wait_for_new_acks(clients, f"after SIGKILL of the controller {controller}")
    return controller


def _rolling_restart(cluster: ClusterHandle, zk: KazooClient, clients: Clients) -> None:
    for broker_id in cluster.broker_ids:
        clients.note(f"SIGTERM broker {broker_id}")
        cluster.kill(broker_id, "TERM")
        _wait_stopped(cluster, broker_id)
        _restart(cluster, zk, clients, broker_id)
    _wait_for_new_acks(clients, "after a rolling restart of every broker")


def _stop(client: VerifiableClient, clients: Clients) -> None:
    client.terminate()
    wait_until(client.finished, STOP_TIMEOUT_S, f"{client.name} to exit after SIGTERM")
    assert client.has_event("shutdown_complete"), (
        f"{client.name} exited without shutdown_complete\n{clients.diagnostics()}"
    )


def _drained(clients: Clients, last_offsets: dict[int, int]) -> Callable[[], bool]:
    def group_drained(group: Group) -> bool:
        for partition, last in last_offsets.items():
            consumed = -1
            for client, progress in zip(group.consumers, group.consumed, strict=True):
                with client.locked():
                    consumed = max(consumed, progress.max_offset.get(partition, -1))
            if consumed < last:
                return False
        return True

    def drained() -> bool:
        _check_running(clients, producing=False)
        return all(group_drained(group) for group in clients.groups)

    return drained


@dataclass(frozen=True)
class Verdict:
    acked: int
    consumed: int  # distinct (partition, offset) read
    deliveries: int  # records read, re-deliveries after a rebalance included
    lost: list[str]  # acknowledged values never read
    duplicates: dict[str, list[tuple[int, int]]]  # values read at more than one offset
    misplaced: list[str]  # acknowledged values read at another offset than acknowledged
    commit_regressions: dict[str, list[str]]
    out_of_order: dict[str, list[str]]  # polls that skipped records or went back
    commits: int
    failed_commits: Counter[str]  # error message -> how many commits failed with it
    send_errors: list[dict[str, Any]]  # besides sends after the producer was closed

    def counts(self) -> str:
        return (
            f"acked={self.acked} consumed={self.consumed} deliveries={self.deliveries} "
            f"redelivered={self.deliveries - self.consumed} lost={len(self.lost)} "
            f"duplicates={len(self.duplicates)} misplaced={len(self.misplaced)} "
            f"send_errors={len(self.send_errors)} commits={self.commits} "
            f"failed_commits={sum(self.failed_commits.values())} "
            f"commit_regressions={sum(map(len, self.commit_regressions.values()))} "
            f"out_of_order={sum(map(len, self.out_of_order.values()))}"
        )


def _verdict(produced: ProducerProgress, group: Group) -> Verdict:
    """Read once every client has exited, so the progress objects no longer change."""
    at_offset: dict[tuple[int, int], set[str]] = {}
    deliveries = 0
    for progress in group.consumed:
        for place, values in progress.records.items():
            at_offset.setdefault(place, set()).update(values)
            deliveries += len(values)
    offsets_of: dict[str, list[tuple[int, int]]] = {}
    for place, read in sorted(at_offset.items()):
        for value in read:
            offsets_of.setdefault(value, []).append(place)
    lost = sorted((v for v in produced.acked if v not in offsets_of), key=int)
    misplaced = [
        f"{value}: acknowledged at {place}, read at {offsets_of[value]}"
        for value, place in produced.acked.items()
        if value in offsets_of and place not in offsets_of[value]
    ]
    return Verdict(
        acked=len(produced.acked),
        consumed=len(at_offset),
        deliveries=deliveries,
        lost=lost,
        duplicates={v: places for v, places in offsets_of.items() if len(places) > 1},
        misplaced=misplaced,
        commit_regressions={
            client.name: regressions
            for client, progress in zip(group.consumers, group.consumed, strict=True)
            if (regressions := commit_regressions(progress.commits))
        },
        out_of_order={
            client.name: progress.out_of_order
            for client, progress in zip(group.consumers, group.consumed, strict=True)
            if progress.out_of_order
        },
        commits=sum(len(progress.commits) for progress in group.consumed),
        failed_commits=Counter(
            str(event.get("error"))
            for progress in group.consumed
            for event in progress.failed_commits
        ),
        send_errors=[
            error
            for error in produced.errors
            if CLOSED_PRODUCER_ERROR not in str(error.get("message"))
        ],
    )


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_acknowledged_records_survive_leader_controller_and_rolling_restarts(
    reference_lib: Path, make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    started = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str) -> None:
        phases[name] = round(time.monotonic() - started - sum(phases.values()), 1)

    cluster = make_cluster(overrides=OVERRIDES)
    _create_topic(cluster)
    with zk_session(cluster) as zk:
        wait_until(lambda: _isr_full(zk), RECOVERY_TIMEOUT_S, f"{TOPIC}'s replicas in sync")
        phase("cluster")
        clients = _start_clients(cluster, tmp_path)
        try:
            wait_until(lambda: _groups_stable(clients), CLIENT_START_TIMEOUT_S, "groups of 3")
            _wait_for_new_acks(clients, "at start")
            phase("clients")
            leader = _kill_partition_leader(cluster, zk, clients)
            _restart(cluster, zk, clients, leader)
            phase("leader-kill")
            controller = _kill_controller(cluster, zk, clients)
            _restart(cluster, zk, clients, controller)
            phase("controller-kill")
            _rolling_restart(cluster, zk, clients)
            phase("rolling-restart")
            _stop(clients.producer, clients)
            last_offsets = dict(clients.produced.last_offset)
            wait_until(
                _drained(clients, last_offsets),
                DRAIN_TIMEOUT_S,
                f"the consumers to reach the last acknowledged offsets {last_offsets}",
            )
            for consumer in clients.consumers:
                _stop(consumer, clients)
            phase("drain")
        finally:
            for client in clients.all:
                client.kill()
            # The cluster's directory goes at teardown; its logs explain the clients' output.
            for broker_id in cluster.broker_ids:
                if cluster.broker_log(broker_id).exists():
                    shutil.copy(cluster.broker_log(broker_id), tmp_path / f"broker-{broker_id}.log")

    for group in clients.groups:
        _check_group(clients, group, phases)


def _check_group(clients: Clients, group: Group, phases: dict[str, float]) -> None:
    verdict = _verdict(clients.produced, group)
    summary = (
        f"{group.name}: {verdict.counts()}; seconds per phase {phases}; "
        f"tool_data {clients.producer.events('tool_data')}; "
        f"failed commits {dict(verdict.failed_commits)}"
    )
    print(f"\nverifiable clients, {summary}")
    assert verdict.acked > 0, f"nothing acknowledged: {summary}\n{clients.diagnostics()}"
    assert not verdict.send_errors, f"sends failed: {verdict.send_errors[:5]}\n{summary}"
    assert not verdict.lost, f"acknowledged but never consumed: {verdict.lost[:20]}\n{summary}"
    duplicates = list(verdict.duplicates.items())[:20]
    assert not verdict.duplicates, f"values at two offsets: {duplicates}\n{summary}"
    assert not verdict.misplaced, f"read elsewhere than acked: {verdict.misplaced[:20]}\n{summary}"
    assert not verdict.commit_regressions, (
        f"committed offsets went backwards: {verdict.commit_regressions}\n{summary}"
    )
    assert not verdict.out_of_order, (
        f"a consumer skipped records or went back: {verdict.out_of_order}\n{summary}"
    )
