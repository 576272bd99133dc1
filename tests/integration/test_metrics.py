"""Every broker's Prometheus endpoint (`metrics.prometheus.listener`, which the launcher sets),
read with Prometheus' own text parser while producing and through a broker's SIGKILL: the
message counters grow by what was produced, exactly one broker is the active controller,
under-replicated partitions go up while a replica is down and back to 0 after it returns, and
the controller's election timer counts the broker change."""

from __future__ import annotations

import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics

TIMEOUT_S = 60
TOPIC = "metrics-topic"
PARTITIONS = 3
RECORDS = 600
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"
ACTIVE_CONTROLLER = "kafka_controller_kafkacontroller_activecontrollercount"
ELECTIONS = "kafka_controller_controllerstats_leaderelectionrateandtimems_count"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _metrics_address(cluster: ClusterHandle, broker_id: int) -> str:
    properties = (cluster.dir / f"broker-{broker_id}" / "server.properties").read_text()
    for line in properties.splitlines():
        if line.startswith("metrics.prometheus.listener="):
            return line.split("=", 1)[1]
    raise AssertionError(f"broker {broker_id} has no metrics.prometheus.listener:\n{properties}")


def _scrape(cluster: ClusterHandle, broker_id: int) -> Samples:
    url = f"http://{_metrics_address(cluster, broker_id)}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _produce(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for index in range(RECORDS):
        producer.produce(TOPIC, value=b"record-%d" % index, partition=index % PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0


def test_metrics_follow_production_and_a_broker_failure(make_cluster: Any) -> None:
    cluster: ClusterHandle = make_cluster(
        brokers=3, overrides={"zookeeper.session.timeout.ms": "6000"}
    )
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(TOPIC, PARTITIONS, 3)])
    assert all(int(t.error_code) == 0 for t in created.topics), created

    _produce(cluster.bootstrap)

    def produced_counted() -> bool:
        scraped = [_scrape(cluster, b) for b in cluster.broker_ids]
        return sum(_value(s, MESSAGES_IN, topic=TOPIC) for s in scraped) == RECORDS

    wait_until(produced_counted, TIMEOUT_S, f"{RECORDS} messages in, summed over the brokers")
    scraped = {b: _scrape(cluster, b) for b in cluster.broker_ids}
    controllers = [b for b, s in scraped.items() if _value(s, ACTIVE_CONTROLLER) == 1]
    assert len(controllers) == 1, {b: _value(s, ACTIVE_CONTROLLER) for b, s in scraped.items()}
    controller = controllers[0]
    assert _value(scraped[controller], MESSAGES_IN) >= _value(
        scraped[controller], MESSAGES_IN, topic=TOPIC
    )
    elections_before = _value(scraped[controller], ELECTIONS)
    victim = next(b for b in cluster.broker_ids if b != controller)
    survivors = [b for b in cluster.broker_ids if b != victim]

    def under_replicated() -> float:
        return sum(_value(_scrape(cluster, b), UNDER_REPLICATED) for b in survivors)

    cluster.kill(victim, "KILL")
    wait_until(
        lambda: under_replicated() > 0,
        TIMEOUT_S,
        f"under-replicated partitions on brokers {survivors} after broker {victim}'s SIGKILL",
    )
    wait_until(
        lambda: _value(_scrape(cluster, controller), ELECTIONS) > elections_before,
        TIMEOUT_S,
        f"the controller's election timer counting broker {victim}'s loss",
    )
    cluster.start(victim)
    wait_until(
        lambda: under_replicated() == 0 and _value(_scrape(cluster, victim), UNDER_REPLICATED) == 0,
        TIMEOUT_S,
        f"no under-replicated partition once broker {victim} is back",
    )
