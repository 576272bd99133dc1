"""Every broker's Prometheus endpoint (`metrics.prometheus.listener`, which the launcher sets),
read with Prometheus' own text parser while producing and through a broker's SIGKILL: the
message counters grow by what was produced, exactly one broker is the active controller,
under-replicated partitions go up while a replica is down and back to 0 after it returns, and
the controller's election timer counts the broker change."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.metrics_scrape import produce_spread, sample, scrape, value
from tests.integration.wire import create_topic

TIMEOUT_S = 60
TOPIC = "metrics-topic"
PARTITIONS = 3
RECORDS = 600
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"
ACTIVE_CONTROLLER = "kafka_controller_kafkacontroller_activecontrollercount"
ELECTIONS = "kafka_controller_controllerstats_leaderelectionrateandtimems_count"


def test_metrics_follow_production_and_a_broker_failure(make_cluster: Any) -> None:
    cluster: ClusterHandle = make_cluster(
        brokers=3, overrides={"zookeeper.session.timeout.ms": "6000"}
    )
    create_topic(cluster, TOPIC, PARTITIONS, 3)

    produce_spread(cluster.bootstrap, TOPIC, RECORDS, PARTITIONS)

    def produced_counted() -> bool:
        scraped = [scrape(cluster, b) for b in cluster.broker_ids]
        return sum(value(s, MESSAGES_IN, topic=TOPIC) for s in scraped) == RECORDS

    wait_until(produced_counted, TIMEOUT_S, f"{RECORDS} messages in, summed over the brokers")
    scraped = {b: scrape(cluster, b) for b in cluster.broker_ids}
    controllers = [b for b, s in scraped.items() if value(s, ACTIVE_CONTROLLER) == 1]
    assert len(controllers) == 1, {b: value(s, ACTIVE_CONTROLLER) for b, s in scraped.items()}
    controller = controllers[0]
    assert value(scraped[controller], MESSAGES_IN) >= value(
        scraped[controller], MESSAGES_IN, topic=TOPIC
    )
    elections_before = value(scraped[controller], ELECTIONS)
    victim = next(b for b in cluster.broker_ids if b != controller)
    survivors = [b for b in cluster.broker_ids if b != victim]

    def under_replicated() -> float:
        return sum(sample(scrape(cluster, b), UNDER_REPLICATED) for b in survivors)

    cluster.kill(victim, "KILL")
    wait_until(
        lambda: under_replicated() > 0,
        TIMEOUT_S,
        f"under-replicated partitions on brokers {survivors} after broker {victim}'s SIGKILL",
    )
    wait_until(
        lambda: value(scrape(cluster, controller), ELECTIONS) > elections_before,
        TIMEOUT_S,
        f"the controller's election timer counting broker {victim}'s loss",
    )
    cluster.start(victim)
    wait_until(
        lambda: under_replicated() == 0 and sample(scrape(cluster, victim), UNDER_REPLICATED) == 0,
        TIMEOUT_S,
        f"no under-replicated partition once broker {victim} is back",
    )
