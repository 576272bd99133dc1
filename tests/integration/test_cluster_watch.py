"""`scripts/cluster status --watch` on a started cluster: plain snapshots when stdout is not a
terminal (bounded by --iterations) that agree with ZooKeeper and the brokers' metrics, a broken
replica shown as under-replicated partitions, and the live Rich view on a terminal that ends
cleanly on Ctrl-C. The plain `status` output stays as it was."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.integration.conftest import CLUSTER_SCRIPT, REPO_ROOT, ClusterHandle, wait_until
from tests.integration.metrics_scrape import produce_spread
from tests.integration.wire import controller_id, create_topic

TIMEOUT_S = 120
TOPIC = "watched"
PARTITIONS = 3
RECORDS = 200
ITERATIONS = 3
Block = dict[str, dict[str, str]]  # line key ("broker 1", "controller", ...) -> its fields


def _watch(cluster: ClusterHandle, iterations: int) -> list[Block]:
    result = cluster.run("status", "--watch", "--iterations", str(iterations), "--interval", "1")
    blocks = [b for b in result.stdout.split("\n\n") if b.strip()]
    assert len(blocks) == iterations, result.stdout
    return [_parse(block) for block in blocks]


def _parse(block: str) -> Block:
    lines = block.strip().splitlines()
    assert lines[0].startswith("snapshot "), block
    parsed: Block = {}
    for line in lines[1:]:
        words = [w for w in line.split() if "=" not in w]
        fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
        parsed[" ".join(words)] = fields
    return parsed


@contextmanager
def _producing(bootstrap: str) -> Iterator[None]:
    """Keeps producing in the background for the block, so a watch sees non-zero rates."""
    from confluent_kafka import Producer

    stop = threading.Event()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})

    def produce() -> None:
        index = 0
        while not stop.is_set():
            producer.produce(TOPIC, value=b"during-%d" % index, partition=index % PARTITIONS)
            producer.poll(0)
            index += 1
            stop.wait(0.01)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(TIMEOUT_S)
        assert producer.flush(TIMEOUT_S) == 0


def test_watch_snapshots_follow_the_cluster(make_cluster: Any) -> None:
    cluster: ClusterHandle = make_cluster(
        brokers=3, overrides={"zookeeper.session.timeout.ms": "6000"}
    )
    create_topic(cluster, TOPIC, PARTITIONS, 3)
    produce_spread(cluster.bootstrap, TOPIC, RECORDS, PARTITIONS, b"watched")
    status_before = cluster.run("status").stdout

    with _producing(cluster.bootstrap):
        snapshots = _watch(cluster, ITERATIONS)
    controller = controller_id(cluster)
    for snapshot in snapshots:
        assert snapshot["controller"]["id"] == str(controller), snapshot
        assert int(snapshot["controller"]["epoch"]) >= 1, snapshot
        for broker_id in cluster.broker_ids:
            broker = snapshot[f"broker {broker_id}"]
            assert broker["alive"] == broker["registered"] == "yes", broker
            assert broker["controller"] == ("yes" if broker_id == controller else "no"), broker
            assert int(broker["epoch"]) > 0, broker
            assert int(broker["partitions"]) >= PARTITIONS, broker
        assert snapshot["zookeeper 1"]["alive"] == "yes", snapshot
        assert int(snapshot["partitions"]["total"]) >= PARTITIONS, snapshot
        assert snapshot["partitions"]["under_replicated"] == "0", snapshot
        assert snapshot["partitions"]["offline"] == "0", snapshot
    rates = [  # a rate needs two readings
        float(snapshot[f"broker {broker_id}"]["messages_in_per_s"])
        for snapshot in snapshots[1:]
        for broker_id in cluster.broker_ids
    ]
    assert all(rate >= 0 for rate in rates), snapshots
    assert any(rate > 0 for rate in rates), snapshots  # records were produced during the watch
    assert cluster.run("status").stdout == status_before  # unchanged by the watch

    victim = next(b for b in cluster.broker_ids if b != controller)
    cluster.kill(victim, "KILL")
    seen: list[Block] = []

    def victim_shown_lost() -> bool:
        snapshot = _watch(cluster, 1)[0]
        seen[:] = [snapshot]
        broker = snapshot[f"broker {victim}"]
        listed = [key for key in snapshot if key.startswith("under_replicated ")]
        return (
            broker["alive"] == "no"
            and broker["registered"] == "no"
            and snapshot["partitions"]["under_replicated"] == str(PARTITIONS)
            and all(f"under_replicated {TOPIC}-{p}" in listed for p in range(PARTITIONS))
        )

    wait_until(
        victim_shown_lost,
        TIMEOUT_S,
        lambda: f"broker {victim} shown lost and {TOPIC}'s partitions under-replicated: {seen}",
    )
    for key, fields in seen[0].items():
        if key.startswith(f"under_replicated {TOPIC}-"):
            assert str(victim) not in fields["isr"].split(","), (key, fields)
            assert str(victim) in fields["replicas"].split(","), (key, fields)


def _read_until(fd: int, wanted: bytes, timeout_s: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout_s
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


def test_live_view_on_a_terminal_ends_on_ctrl_c(make_cluster: Any) -> None:
    cluster: ClusterHandle = make_cluster(brokers=1)
    controller_fd, terminal_fd = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, str(CLUSTER_SCRIPT), "status", "--watch", "--dir", str(cluster.dir)],
        cwd=REPO_ROOT,
        stdin=terminal_fd,
        stdout=terminal_fd,
        stderr=terminal_fd,
        env={**os.environ, "COLUMNS": "160", "LINES": "50", "TERM": "xterm-256color"},
    )
    os.close(terminal_fd)
    try:
        shown = _read_until(controller_fd, b"Brokers", TIMEOUT_S)
        assert b"Brokers" in shown, shown.decode(errors="replace")
        shown += _read_until(controller_fd, b"Partitions", TIMEOUT_S)
        assert b"Partitions" in shown, shown.decode(errors="replace")
        process.send_signal(signal.SIGINT)
        exit_code = process.wait(timeout=TIMEOUT_S)
        rest = _read_until(controller_fd, b"\0never", 1.0)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller_fd)
    output = (shown + rest).decode(errors="replace")
    assert exit_code == 0, output
    assert "Traceback" not in output, output
