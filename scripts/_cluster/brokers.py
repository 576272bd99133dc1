"""Write each broker's server.properties (base keys plus every --set override)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import kafka_reference
from .layout import ClusterSpec, broker_dir

# Kafka defaults these internal topics to replication factor 3 (and the transaction log
# to min ISR 2), which a 1- or 2-broker cluster cannot satisfy; Kafka's sample
# server.properties lowers them the same way.
INTERNAL_TOPIC_KEYS = (
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
)


def base_properties(spec: ClusterSpec, broker_id: int) -> dict[str, str]:
    directory = broker_dir(Path(spec.directory), broker_id)
    # Only what differs from Kafka's defaults: advertised.listeners falls back to listeners.
    properties = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://127.0.0.1:{spec.broker_port(broker_id)}",
        "log.dirs": str(directory / "data"),
        "zookeeper.connect": spec.zookeeper_connect,
    }
    if spec.broker_count < 3:
        for key in INTERNAL_TOPIC_KEYS:
            properties[key] = str(spec.broker_count)
        properties["transaction.state.log.min.isr"] = "1"
    return properties


def render_properties(spec: ClusterSpec, broker_id: int) -> str:
    merged = base_properties(spec, broker_id)
    merged.update(spec.overrides)
    lines = [f"# Written by scripts/cluster for broker {broker_id}; --set overrides included."]
    lines += [f"{key}={value}" for key, value in merged.items()]
    return "\n".join(lines) + "\n"


def prepare_broker(spec: ClusterSpec, broker_id: int, java: str) -> list[str]:
    """Write server.properties for `broker_id`; return the command that runs the broker
    (ours, or Apache Kafka's with `--impl kafka`)."""
    directory = broker_dir(Path(spec.directory), broker_id)
    (directory / "data").mkdir(parents=True, exist_ok=True)
    properties_path = directory / "server.properties"
    properties_path.write_text(render_properties(spec, broker_id))
    if spec.impl == "kafka":
        return kafka_reference.kafka_command(java, directory, properties_path)
    return [sys.executable, "-m", "broker", str(properties_path)]


def session_timeout_ms(spec: ClusterSpec) -> int:
    """The broker's ZooKeeper session timeout: how long a dead broker stays registered."""
    return int(spec.overrides.get("zookeeper.session.timeout.ms", "18000"))
