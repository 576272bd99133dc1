"""Write each broker's server.properties (base keys plus every --set override).

A broker's file is the same whichever implementation runs it (ours or Apache Kafka 3.9), so
that a broker restarted as the other implementation (`start --broker N --impl ...`) runs on
the config and data directory it had. The one difference is a key only ours knows:
`metrics.prometheus.listener` (our Prometheus endpoint; Kafka's brokers have JMX instead, and
would log the key as an unknown config). How the process is started differs beyond the file:
ours is `python -m broker server.properties`, Kafka's is `java ... kafka.Kafka
server.properties` with a log4j.properties beside it, and with a SASL-secured ZooKeeper ours
takes the JAAS file from its environment where Kafka takes it as a JVM option.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import kafka_reference, sasl_material, tls_material, zk_sasl_material
from .layout import ClusterSpec, broker_dir

# Kafka defaults these internal topics to replication factor 3 (and the transaction log
# to min ISR 2), which a 1- or 2-broker cluster cannot satisfy; Kafka's sample
# server.properties lowers them the same way.
INTERNAL_TOPIC_KEYS = (
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
)


def base_properties(spec: ClusterSpec, broker_id: int, impl: str | None = None) -> dict[str, str]:
    directory = broker_dir(Path(spec.directory), broker_id)
    impl = impl or spec.initial_impl(broker_id)
    # Only what differs from Kafka's defaults: advertised.listeners falls back to listeners.
    properties = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://{spec.broker_host(broker_id)}:{spec.broker_port(broker_id)}",
        "log.dirs": str(directory / "data"),
        "zookeeper.connect": spec.zookeeper_connect,
    }
    if impl == "ours":  # Kafka's brokers have JMX instead
        properties["metrics.prometheus.listener"] = (
            f"{spec.broker_host(broker_id)}:{spec.metrics_port(broker_id)}"
        )
    if spec.security in ("ssl", "sasl_ssl"):
        properties.update(ssl_properties(spec, broker_id))
    if spec.security in sasl_material.PROTOCOLS:
        properties.update(
            sasl_material.broker_properties(spec.security, spec.broker_port(broker_id))
        )
    if spec.broker_count < 3:
        for key in INTERNAL_TOPIC_KEYS:
            properties[key] = str(spec.broker_count)
        properties["transaction.state.log.min.isr"] = "1"
    return properties


def ssl_properties(spec: ClusterSpec, broker_id: int) -> dict[str, str]:
    """One SSL listener on the broker's port, for clients and the other brokers alike."""
    directory = Path(spec.directory)
    return {
        "listeners": f"SSL://127.0.0.1:{spec.broker_port(broker_id)}",
        "security.inter.broker.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls_material.broker_keystore(directory, broker_id)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls_material.truststore(directory)),
    }


# A --set value may name the broker's own directory, id or rack, so that one override gives
# every broker its own value (--set log.dirs={broker_dir}/disk-a,{broker_dir}/disk-b,
# --set broker.rack=az-{broker_id}; {rack} is what --racks gives the broker).
BROKER_DIR_PLACEHOLDER = "{broker_dir}"
BROKER_ID_PLACEHOLDER = "{broker_id}"
RACK_PLACEHOLDER = "{rack}"


def broker_properties(spec: ClusterSpec, broker_id: int, impl: str | None = None) -> dict[str, str]:
    """Base keys, broker.rack from --racks, and every --set override, placeholders expanded."""
    directory = str(broker_dir(Path(spec.directory), broker_id))
    merged = base_properties(spec, broker_id, impl)
    rack = spec.rack(broker_id)
    if rack is not None:
        merged["broker.rack"] = rack
    for key, value in spec.overrides.items():
        value = value.replace(BROKER_DIR_PLACEHOLDER, directory)
        value = value.replace(BROKER_ID_PLACEHOLDER, str(broker_id))
        merged[key] = value.replace(RACK_PLACEHOLDER, rack or "")
    return merged


def render_properties(spec: ClusterSpec, broker_id: int, impl: str | None = None) -> str:
    merged = broker_properties(spec, broker_id, impl)
    lines = [f"# Written by scripts/cluster for broker {broker_id}; --set overrides included."]
    lines += [f"{key}={value}" for key, value in merged.items()]
    return "\n".join(lines) + "\n"


def prepare_broker(
    spec: ClusterSpec, broker_id: int, java: str, impl: str | None = None
) -> list[str]:
    """Write server.properties for `broker_id`; return the command that runs the broker as
    `impl` (ours, or Apache Kafka's; by default what `up` started it as)."""
    impl = impl or spec.initial_impl(broker_id)
    directory = broker_dir(Path(spec.directory), broker_id)
    directory.mkdir(parents=True, exist_ok=True)
    for log_dir in broker_properties(spec, broker_id, impl)["log.dirs"].split(","):
        Path(log_dir.strip()).mkdir(parents=True, exist_ok=True)
    properties_path = directory / "server.properties"
    properties_path.write_text(render_properties(spec, broker_id, impl))
    if impl == "kafka":
        jvm_options = (
            zk_sasl_material.broker_jvm_options(Path(spec.directory))
            if zk_sasl_material.enabled(spec.overrides)
            else []
        )
        return kafka_reference.kafka_command(java, directory, properties_path, jvm_options)
    return [sys.executable, "-m", "broker", str(properties_path)]


def broker_env(spec: ClusterSpec, impl: str) -> dict[str, str]:
    """What our broker's environment adds (Kafka's brokers take it on their command line)."""
    if impl == "ours" and zk_sasl_material.enabled(spec.overrides):
        return zk_sasl_material.broker_env(Path(spec.directory))
    return {}


def session_timeout_ms(spec: ClusterSpec) -> int:
    """The broker's ZooKeeper session timeout: how long a dead broker stays registered."""
    return int(spec.overrides.get("zookeeper.session.timeout.ms", "18000"))
