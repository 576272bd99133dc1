"""A broker config with one SSL listener on the PEM material scripts/cluster makes."""

from __future__ import annotations

from pathlib import Path

from broker.config.kafka_config import KafkaConfig, build_config
from scripts._cluster import tls_material

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181"}


def ssl_config(material: Path, **extra: str) -> KafkaConfig:
    """Broker 1's key store and the cluster's trust store under `material`, plus `extra`."""
    settings = {
        **BASE,
        "listeners": "SSL://127.0.0.1:9093",
        "security.inter.broker.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls_material.broker_keystore(material, 1)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls_material.truststore(material)),
    }
    return build_config({**settings, **extra})
