"""Reading a broker's Prometheus endpoint in tests: its address from the broker's
server.properties (the launcher sets `metrics.prometheus.listener`), the samples parsed with
Prometheus' own text parser; plus the produce load the metrics tests count."""

from __future__ import annotations

import urllib.request

from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import ClusterHandle

# (sample name, sorted label pairs) -> value
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
FLUSH_TIMEOUT_S = 120


def metrics_address(cluster: ClusterHandle, broker_id: int) -> str:
    properties = (cluster.dir / f"broker-{broker_id}" / "server.properties").read_text()
    for line in properties.splitlines():
        if line.startswith("metrics.prometheus.listener="):
            return line.split("=", 1)[1]
    raise AssertionError(f"broker {broker_id} has no metrics.prometheus.listener:\n{properties}")


def scrape(cluster: ClusterHandle, broker_id: int) -> Samples:
    url = f"http://{metrics_address(cluster, broker_id)}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value; 0 when absent (a family with no sample yet)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def sample(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value; fails when absent, for asserting a bound (which 0 would pass)."""
    key = (name, tuple(sorted(labels.items())))
    if key not in samples:
        names = sorted(n for n, _ in samples)[:20]
        raise AssertionError(f"no sample {name}{labels}; have: {names}")
    return samples[key]


def total(cluster: ClusterHandle, name: str, **labels: str) -> float:
    """`name`{labels} summed over every broker."""
    return sum(value(scrape(cluster, b), name, **labels) for b in cluster.broker_ids)


def produce_spread(
    bootstrap: str, topic: str, records: int, partitions: int, prefix: bytes = b"record"
) -> None:
    """`records` values `<prefix>-<index>`, round-robin over the partitions so that every
    partition (and so every leader's counters) sees traffic; acks=all, all delivered."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for index in range(records):
        producer.produce(topic, value=b"%s-%d" % (prefix, index), partition=index % partitions)
    assert producer.flush(FLUSH_TIMEOUT_S) == 0
