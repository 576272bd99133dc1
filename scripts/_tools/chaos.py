"""Kill brokers (and ZooKeeper servers) with SIGKILL while an idempotent producer writes, then
check that every acknowledged record is present exactly once, at its acknowledged offset.

    scripts/chaos [--dir .cluster] [--records 200000] [--rounds 3] [--interval-s 3]
                  [--zookeeper-too]

Run it against a cluster started with `scripts/cluster up` (a short
`zookeeper.session.timeout.ms`, e.g. `--set zookeeper.session.timeout.ms=6000`, makes
failover quick). Prints one JSON summary; exits 1 if a record is lost or duplicated.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 6
DELIVERY_TIMEOUT_MS = 180_000


def cluster(directory: str, *args: str) -> None:
    subprocess.run([str(ROOT / "scripts" / "cluster"), *args, "--dir", directory], check=True)


def read_spec(directory: str) -> dict[str, object]:
    spec = json.loads((Path(directory) / "cluster.json").read_text())["spec"]
    assert isinstance(spec, dict)
    return spec


def produce(bootstrap: str, topic: str, count: int, acked: dict[tuple[int, int], bytes]) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
        }
    )

    def report(error: object, message: Message) -> None:
        partition, offset = message.partition(), message.offset()
        if error is None and partition is not None and offset is not None:
            acked[(partition, offset)] = message.value() or b""

    for index in range(count):
        while True:
            try:
                producer.produce(
                    topic, str(index).encode(), key=str(index).encode(), on_delivery=report
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(DELIVERY_TIMEOUT_MS / 1000)


def read_all(bootstrap: str, topic: str) -> list[tuple[int, int, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    records: list[tuple[int, int, bytes]] = []
    finished: set[int] = set()
    deadline = time.monotonic() + 120
    while len(finished) < PARTITIONS and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=10_000, timeout=1.0):
            partition, error = message.partition(), message.error()
            if partition is None:
                continue
            if error is None:
                records.append((partition, message.offset() or 0, message.value() or b""))
            elif error.code() == KafkaError._PARTITION_EOF:
                finished.add(partition)
    consumer.close()
    return records


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=".cluster")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval-s", type=float, default=3.0)
    parser.add_argument("--zookeeper-too", action="store_true")
    args = parser.parse_args()
    spec = read_spec(args.dir)
    broker_ids = list(range(1, int(str(spec["broker_count"])) + 1))
    port_base = int(str(spec["port_base"]))
    bootstrap = ",".join(f"127.0.0.1:{port_base + i - 1}" for i in broker_ids)
    topic = f"chaos-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=60)

    acked: dict[tuple[int, int], bytes] = {}
    writer = threading.Thread(target=produce, args=(bootstrap, topic, args.records, acked))
    started = time.monotonic()
    writer.start()
    kills = []
    for _ in range(args.rounds):
        time.sleep(args.interval_s)
        victim = random.choice(broker_ids)
        cluster(args.dir, "kill", "--broker", str(victim), "--signal", "KILL")
        cluster(args.dir, "start", "--broker", str(victim))
        kills.append(f"broker {victim}")
        if args.zookeeper_too and int(str(spec["zookeeper_count"])) > 1:
            server = random.randrange(1, int(str(spec["zookeeper_count"])) + 1)
            cluster(args.dir, "kill", "--zookeeper", str(server), "--signal", "KILL")
            cluster(args.dir, "start", "--zookeeper", str(server))
            kills.append(f"zookeeper {server}")
    writer.join()
    produce_s = time.monotonic() - started

    records = read_all(bootstrap, topic)
    stored = {(p, o): v for p, o, v in records}
    values = [v for _, _, v in records]
    lost = [k for k, v in acked.items() if stored.get(k) != v]
    duplicates = len(values) - len(set(values))
    summary = {
        "topic": topic,
        "records": args.records,
        "acknowledged": len(acked),
        "stored": len(records),
        "lost_or_moved": len(lost),
        "duplicates": duplicates,
        "kills": kills,
        "produce_seconds": round(produce_s, 1),
    }
    print(json.dumps(summary, indent=2))
    return 1 if lost or duplicates else 0


if __name__ == "__main__":
    sys.exit(main())
