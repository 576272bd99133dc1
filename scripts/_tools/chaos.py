"""The replication checker: inject faults into a running cluster while idempotent acks=all
producers write to a topic with replication factor 3 and min.insync.replicas=2, then check that
nothing acknowledged was lost, duplicated or reordered and that all replicas are byte-identical.

    scripts/chaos [--dir .cluster] [--faults 10] [--seconds 3600] [--seed S] [--kinds K,...]
                  [--zookeeper-too] [--topic T] [--partitions 6] [--producers 2] [--rate 500]
                  [--interval-s 3] [--max-pause-s S] [--wait-full-isr]
                  [--recovery-timeout-s 120] [--settle-timeout-s 120] [--report-json FILE]
                  [--transactional] [--network-partitions]

--transactional checks exactly-once instead (chaos_txn.py, chaos_txn_check.py): transactional
writers (some transactions aborted on purpose) and a consume-transform-produce copier into
`<topic>-copies`; read committed, every committed record once, no aborted one, each
transaction all or nothing, and every readable record copied exactly once.

Fault kinds are `<role>-<signal>`: roles leader, follower (of a random partition), controller
and, with --zookeeper-too, zookeeper (a random server); signals kill (SIGKILL, restart), term
(SIGTERM, restart) and stop (SIGSTOP for 1 s to --max-pause-s, default 1.5 session timeouts,
then SIGCONT). --kinds picks a subset; kinds are drawn in shuffled rounds so each comes up once
per round; --seed replays the kinds and pause lengths (victims follow the cluster's state at
each fault). After each fault the checker waits until every broker is registered, a controller is
elected and every partition has a live leader (--wait-full-isr: and a full ISR), then lets the
producers run --interval-s more. --seconds bounds the fault phase: no fault starts after it.

At the end producing stops; once every ISR is full and the replicas' segment files agree (or
--settle-timeout-s passes) the topic is read back and the replicas compared byte for byte.

Prints one line per fault, a table (faults and longest unavailability and recovery per kind;
acked, lost, duplicated, reordered, divergent partitions) and a one-line JSON summary (also
written to --report-json). Exits 1 on a lost, duplicated or reordered record, a divergent
partition, a cluster that did not recover after a fault, settle at the end or take writes, or a
fault gone wrong (e.g. a process that outlived SIGTERM's grace period; it is then killed so the
run goes on). A second copy written under a later producer epoch is reported apart ("re-sent
after a client epoch bump") and does not fail the run: librdkafka bumps its epoch after an
OUT_OF_ORDER_SEQUENCE on any partition and re-sends records it judged unpersisted, with fresh
sequence numbers no broker can match (librdkafka#4953). Run it against
`scripts/cluster up --set min.insync.replicas=2 --set zookeeper.session.timeout.ms=6000
--set replica.lag.time.max.ms=5000` (short timeouts make failover, and so each fault, quick).
It runs as well on a mixed cluster (`up --impl kafka,kafka,ours`, Apache Kafka 3.9 beside
ours): restarts keep each broker's implementation, the controller fault hits the broker in the
/controller znode whichever implementation it runs, and the fault lines and the table name
what each broker runs.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from .chaos_cluster import Cluster, LauncherError, load_cluster
from .chaos_faults import (
    ALL_KINDS,
    BROKER_KINDS,
    PARTITION_KINDS,
    ZOOKEEPER_KINDS,
    Fault,
    choose_victim,
    inject,
    kind_sequence,
    pause_seconds,
)
from .chaos_produce import FleetResult, ProducerFleet
from .chaos_replicas import Divergence, batch_epochs, compare_topic, read_replica
from .chaos_report import (
    ack_times,
    measure_unavailability,
    summary,
    table,
    txn_summary,
    txn_table,
)
from .chaos_txn import ABANDONED_CLIENTS, Copier, TxnFleet
from .chaos_txn_check import (
    check_copies,
    check_writers,
    copy_targets,
    read_committed,
    table_rows,
    wait_stable,
)
from .chaos_verify import EpochAt, check_records, read_topic
from .chaos_zk import ClusterView, ZooKeeperView, healthy, healthy_with_full_isr

REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
TOPIC_READY_TIMEOUT_S = 60.0
FIRST_ACKS_TIMEOUT_S = 60.0
FLUSH_TIMEOUT_S = 120.0
READ_TIMEOUT_S = 120.0
MAX_EPOCH = 0x7FFF  # producer epochs are int16


def _say(message: str) -> None:
    print(f"chaos: {message}", file=sys.stderr, flush=True)


def _kinds(
    text: str | None, zookeeper_too: bool, cuts: bool, parser: argparse.ArgumentParser
) -> list[str]:
    if text is None:
        kinds = list(BROKER_KINDS + (ZOOKEEPER_KINDS if zookeeper_too else ()))
        return kinds + list(PARTITION_KINDS if cuts else ())
    kinds = [kind.strip() for kind in text.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in ALL_KINDS]
    if unknown or not kinds:
        parser.error(f"unknown fault kinds {unknown}; known: {', '.join(ALL_KINDS)}")
    if not zookeeper_too and any(kind in ZOOKEEPER_KINDS for kind in kinds):
        parser.error("zookeeper-* kinds need --zookeeper-too")
    if not cuts and any(kind in PARTITION_KINDS for kind in kinds):
        parser.error(f"{', '.join(PARTITION_KINDS)} need --network-partitions")
    return kinds


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dir", type=Path, default=Path(".cluster"))
    parser.add_argument("--faults", "--rounds", type=int, default=10, dest="faults")
    parser.add_argument("--seconds", type=float, default=3600.0, help="bounds the fault phase")
    parser.add_argument("--seed", type=int, help="default: random (printed)")
    parser.add_argument("--kinds", help=f"comma-separated subset of {', '.join(ALL_KINDS)}")
    parser.add_argument("--zookeeper-too", action="store_true")
    parser.add_argument("--topic", help="default: chaos-<run id>")
    parser.add_argument(
        "--partitions",
        type=int,
        nargs="?",
        default=6,
        const=None,
        metavar="N",
        help="the topic's partition count (default 6); without N, --network-partitions",
    )
    parser.add_argument(
        "--network-partitions",
        action="store_true",
        help="add network cuts to the fault kinds (a cluster started with `scripts/cluster up "
        "--network netns`, as root): " + ", ".join(PARTITION_KINDS),
    )
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=500.0, help="records/s, all producers")
    parser.add_argument("--interval-s", type=float, default=3.0)
    parser.add_argument("--max-pause-s", type=float, help="longest SIGSTOP")
    parser.add_argument("--wait-full-isr", action="store_true")
    parser.add_argument("--recovery-timeout-s", type=float, default=120.0)
    parser.add_argument("--settle-timeout-s", type=float, default=120.0)
    parser.add_argument("--report-json", type=Path)
    parser.add_argument("--transactional", action="store_true")
    parser.add_argument(
        "--client-log", type=Path, help="--transactional: the copier's librdkafka debug log"
    )
    args = parser.parse_args(argv)
    if args.partitions is None:  # a bare --partitions, as issue 40 wrote it
        args.partitions = 6
        args.network_partitions = True
    if args.faults < 0 or args.partitions < 1 or args.producers < 1 or args.rate <= 0:
        parser.error("--faults must be >= 0; --partitions, --producers and --rate positive")
    args.kinds = _kinds(args.kinds, args.zookeeper_too, args.network_partitions, parser)
    return args


def _create_topic(cluster: Cluster, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    config = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS)}
    new = NewTopic(topic, partitions, REPLICATION_FACTOR, config=config)
    try:
        admin.create_topics([new])[topic].result(timeout=TOPIC_READY_TIMEOUT_S)
    except KafkaException as error:
        # A reused --topic: the checks only look at this run's records.
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def _wait_for_first_acks(fleet: ProducerFleet | TxnFleet, partitions: int) -> bool:
    deadline = time.monotonic() + FIRST_ACKS_TIMEOUT_S
    while time.monotonic() < deadline:
        if len({ack.partition for ack in list(fleet.acks)}) == partitions:
            return True
        time.sleep(0.1)
    return False


class Run:
    """One checker run: the cluster, its ZooKeeper view and the choices made so far."""

    def __init__(self, args: argparse.Namespace, cluster: Cluster, view: ZooKeeperView) -> None:
        self.args, self.cluster, self.zookeeper = args, cluster, view
        self.seed: int = args.seed if args.seed is not None else random.randrange(2**32)
        self.rng = random.Random(self.seed)
        self.max_pause_s: float = args.max_pause_s or 1.5 * cluster.session_timeout_s
        wait = healthy_with_full_isr if args.wait_full_isr else healthy
        self.recovered = wait(cluster.broker_ids)

    def fault(self, number: int, kind: str) -> Fault:
        """Inject one fault of `kind`, then wait (bounded) until the cluster is healthy."""
        fault = self._strike(number, kind)
        ok, last = self.zookeeper.wait_for(self.recovered, self.args.recovery_timeout_s)
        if ok:
            fault.recovered_at = time.monotonic()
            _say(f"fault {number}: recovered in {fault.recovery_ms:.0f} ms")
            return fault
        state = last.describe() if last is not None else "ZooKeeper unreadable"
        problem = f"not healthy after the fault: {state}"
        fault.error = problem if fault.error is None else f"{fault.error}; {problem}"
        _say(f"fault {number}: NOT recovered: {fault.error}")
        return fault

    def _strike(self, number: int, kind: str) -> Fault:
        view = self.zookeeper.wait_for(lambda _: True, self.args.recovery_timeout_s)[1]
        if view is None:
            return Fault(kind, "nobody", time.monotonic(), error="ZooKeeper unreadable")
        victim, target = choose_victim(kind.split("-")[0], view, self.cluster, self.rng)
        pause_s = pause_seconds(self.rng, self.max_pause_s)
        if kind.endswith("-stop"):
            target += f", stopped {pause_s:.1f} s"
        _say(f"fault {number}: {kind} on {target}")
        fault = Fault(kind, target, time.monotonic())
        try:
            fault.error = inject(self.cluster, kind, victim, pause_s)
        except LauncherError as error:
            fault.error = str(error)
        if fault.error is not None:
            _say(f"fault {number}: {fault.error}")
        fault.injected_at = time.monotonic()
        return fault

    def faults(self) -> list[Fault]:
        deadline = time.monotonic() + self.args.seconds
        kinds = kind_sequence(self.args.kinds, self.rng)
        done: list[Fault] = []
        while len(done) < self.args.faults and time.monotonic() < deadline:
            fault = self.fault(len(done) + 1, next(kinds))
            done.append(fault)
            if fault.recovered_at is None:
                break  # more faults on a broken cluster would only blur the report
            time.sleep(self.args.interval_s)
        return done

    def settle(self, topic: str) -> bool:
        """Wait (bounded) until every ISR is full and every replica identical on disk."""
        full_isr = healthy_with_full_isr(self.cluster.broker_ids)

        def converged(view: ClusterView) -> bool:
            if not full_isr(view):
                return False
            assignment = {p: state.replicas for p, state in view.partitions.items()}
            return not compare_topic(assignment, self.cluster.log_dirs, topic)

        ok, last = self.zookeeper.wait_for(converged, self.args.settle_timeout_s)
        if not ok:
            _say("not settled: " + (last.describe() if last else "ZooKeeper unreadable"))
        return ok


def _final_divergences(run: Run, topic: str) -> list[Divergence]:
    view = run.zookeeper.wait_for(lambda _: True, READ_TIMEOUT_S)[1]
    if view is None:
        return []
    assignment = {p: state.replicas for p, state in view.partitions.items()}
    return compare_topic(assignment, run.cluster.log_dirs, topic)


def _epoch_lookup(run: Run, topic: str) -> EpochAt:
    """The producer epoch of the batch holding each offset, read from each partition's first
    replica (the replicas are compared byte for byte separately)."""
    view = run.zookeeper.wait_for(lambda _: True, READ_TIMEOUT_S)[1]
    batches: dict[int, list[tuple[int, int]]] = {}
    for partition, state in (view.partitions if view is not None else {}).items():
        broker = state.replicas[0]
        _, data = read_replica(broker, run.cluster.log_dirs(broker), topic, partition)
        batches[partition] = batch_epochs(data)

    def epoch_at(partition: int, offset: int) -> int | None:
        found = batches.get(partition, [])
        index = bisect.bisect_right(found, (offset, MAX_EPOCH)) - 1
        return found[index][1] if index >= 0 else None

    return epoch_at


def _settings(run: Run, topic: str, run_id: str) -> dict[str, Any]:
    args = run.args
    return {
        "seed": run.seed,
        "run": run_id,
        "topic": topic,
        "partitions": args.partitions,
        "replication_factor": REPLICATION_FACTOR,
        "min_insync_replicas": MIN_INSYNC_REPLICAS,
        "faults_requested": args.faults,
        "kinds": args.kinds,
        # What each broker runs, broker 1 first: "ours" or "kafka" (Apache Kafka 3.9).
        "impls": [run.cluster.impls[i] for i in run.cluster.broker_ids],
    }


def _produce_through_faults(
    run: Run, topic: str, run_id: str
) -> tuple[list[Fault], FleetResult, bool]:
    """Faults while the producers write; (faults, what the producers saw, whether every
    partition took writes before the first fault)."""
    args, cluster = run.args, run.cluster
    fleet = ProducerFleet(
        cluster.bootstrap, topic, args.partitions, args.producers, args.rate, run_id
    )
    fleet.start()
    writable = _wait_for_first_acks(fleet, args.partitions)
    faults: list[Fault] = run.faults() if writable else []
    if not writable:
        _say(f"not every partition acknowledged a record within {FIRST_ACKS_TIMEOUT_S} s")
    finish = time.monotonic()
    _say("stopping the producers")
    result = fleet.stop(FLUSH_TIMEOUT_S)
    measure_unavailability(faults, ack_times(result.acks), args.partitions, finish)
    return faults, result, writable


def _execute(run: Run, topic: str, run_id: str) -> dict[str, Any]:
    cluster, partitions = run.cluster, run.args.partitions
    _create_topic(cluster, topic, partitions)
    ready, _ = run.zookeeper.wait_for(run.recovered, TOPIC_READY_TIMEOUT_S)
    if not ready:
        raise SystemExit(f"chaos: topic {topic} has no leaders after {TOPIC_READY_TIMEOUT_S} s")
    faults, fleet_result, writable = _produce_through_faults(run, topic, run_id)
    _say("waiting for full ISRs and identical replicas")
    settled = run.settle(topic)
    stored, complete = read_topic(cluster.bootstrap, topic, partitions, READ_TIMEOUT_S)
    records = check_records(fleet_result.acks, stored, run_id, _epoch_lookup(run, topic))
    records.read_complete = complete
    divergences = _final_divergences(run, topic)
    settings = {**_settings(run, topic, run_id), "writable": writable}
    return summary(settings, faults, fleet_result, records, divergences, settled)


def _copied_to(copier: Copier, targets: dict[int, int], timeout_s: float) -> bool:
    """Until the copier's committed input offsets reach `targets` (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        committed = copier.committed_offsets()
        if committed is not None and all(committed.get(p, 0) >= o for p, o in targets.items()):
            return True
        time.sleep(0.5)
    return False


def _execute_transactional(run: Run, topic: str, run_id: str) -> dict[str, Any]:
    """--transactional: transactional writers and a copier through the faults."""
    cluster, args, bootstrap = run.cluster, run.args, run.cluster.bootstrap
    copies = f"{topic}-copies"
    for name in (topic, copies):
        _create_topic(cluster, name, args.partitions)
    if not run.zookeeper.wait_for(run.recovered, TOPIC_READY_TIMEOUT_S)[0]:
        raise SystemExit(f"chaos: topic {topic} has no leaders after {TOPIC_READY_TIMEOUT_S} s")
    fleet = TxnFleet(bootstrap, topic, args.partitions, args.producers, args.rate, run_id)
    copier = Copier(bootstrap, topic, copies, args.partitions, run_id, args.client_log)
    fleet.start()
    copier.start()
    writable = _wait_for_first_acks(fleet, args.partitions)
    faults = run.faults() if writable else []
    finish = time.monotonic()
    _say("stopping the writers")
    txns = fleet.stop(FLUSH_TIMEOUT_S)
    measure_unavailability(faults, ack_times(fleet.acks), args.partitions, finish)
    _say("waiting for full ISRs and identical replicas")
    settled = run.settle(topic)
    stable = wait_stable(bootstrap, topic, args.partitions, READ_TIMEOUT_S)
    source, complete = read_committed(bootstrap, topic, args.partitions, READ_TIMEOUT_S)
    _say("waiting for the copier to copy everything")
    caught_up = _copied_to(copier, copy_targets(source), READ_TIMEOUT_S)
    if not caught_up:
        copier.log.error(f"copier did not catch up: {copier.progress()}")
    copier.stop(FLUSH_TIMEOUT_S)
    copies_stable = wait_stable(bootstrap, copies, args.partitions, READ_TIMEOUT_S)
    copied, copies_complete = read_committed(bootstrap, copies, args.partitions, READ_TIMEOUT_S)
    check = check_writers(txns, source, run_id)
    check_copies(check, source, copied)
    check.read_complete = all((stable, complete, caught_up, copies_stable, copies_complete))
    settings = {**_settings(run, topic, run_id), "writable": writable, "transactional": True}
    errors = fleet.log.errors + copier.log.errors
    return txn_summary(settings, faults, check, errors, _final_divergences(run, topic), settled)


def _fault_lines(result: dict[str, Any]) -> str:
    lines = []
    for number, entry in enumerate(result["fault_log"], start=1):
        recovery = "never" if entry["recovery_ms"] is None else f"{entry['recovery_ms']} ms"
        lines.append(
            f"fault {number:>3} {entry['kind']:<16} {entry['target']:<52} "
            f"unavailable {entry['unavailability_ms']} ms, recovered {recovery}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    cluster = load_cluster(args.dir)
    if len(cluster.broker_ids) < REPLICATION_FACTOR:
        raise SystemExit(f"chaos: needs at least {REPLICATION_FACTOR} brokers")
    if any(kind in PARTITION_KINDS for kind in args.kinds) and cluster.network != "netns":
        raise SystemExit(
            "chaos: network cuts need a cluster started with `scripts/cluster up --network netns`"
            f" (as root); {args.dir} runs on {cluster.network}"
        )
    run_id = secrets.token_hex(4)
    topic = args.topic or f"chaos-{run_id}"
    view = ZooKeeperView(cluster.zookeeper_connect, topic)
    view.connect()
    try:
        run = Run(args, cluster, view)
        impls = ",".join(cluster.impls[i] for i in cluster.broker_ids)
        _say(f"seed {run.seed}, topic {topic}, kinds {','.join(args.kinds)}, brokers {impls}")
        execute = _execute_transactional if args.transactional else _execute
        result = execute(run, topic, run_id)
    finally:
        view.close()
    if result["fault_log"]:
        print(_fault_lines(result))
    print(txn_table(result, table_rows(result)) if args.transactional else table(result))
    print(json.dumps(result, sort_keys=True), flush=True)
    if args.report_json is not None:
        args.report_json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    code = 0 if result["ok"] else 1
    if ABANDONED_CLIENTS:
        # Destroying a hung librdkafka client blocks: leave without finalising them.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
