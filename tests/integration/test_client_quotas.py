"""Client quotas on the shared cluster: a producer with a 1 MiB/s `producer_byte_rate` is held
to it while an unthrottled producer beside it is not, sees throttle time, and runs freely once
the quota is removed; a consumer with a `consumer_byte_rate` likewise; and Kafka 3.9's own
kafka-configs manages quotas on our brokers.

The brokers run Kafka's default windows (11 samples of 1 s): a rate is measured over at least
10 s, so a fresh client may send 10 s worth of its quota at once and is then held back until
its average over the window falls to the quota. Each phase is checked against that budget.
The quotas are removed at the end and their znodes deleted, leaving the cluster as found.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle
from tests.integration.jvm_tools import run_jvm_tool
from tests.integration.metrics_scrape import scrape, value
from tests.integration.quota_clients import PAYLOAD, Run, consume, produce
from tests.integration.tool_cli import ok, run_tool
from tests.reference.conftest import reference_lib as reference_lib

TOPIC = "client-quotas"
LIMITED = "client-quotas-limited"
FREE = "client-quotas-free"
CONSUMER = "client-quotas-consumer"
QUOTA_BYTES_PER_S = 1_048_576
# Kafka's default quota windows: the rate is measured over at least (11 - 1) windows of 1 s.
BUDGET_WINDOW_S = 10
PRODUCE_S = 4.0


def _side_by_side(bootstrap: str, seconds: float) -> tuple[Run, Run]:
    limited, free = Run(), Run()
    threads = [
        threading.Thread(target=produce, args=(bootstrap, TOPIC, LIMITED, seconds, limited)),
        threading.Thread(target=produce, args=(bootstrap, TOPIC, FREE, seconds, free)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    return limited, free


def _configs(cluster: ClusterHandle, *args: str) -> str:
    return ok(run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap, *args))


@pytest.fixture(scope="module")
def topic(cluster: ClusterHandle, zk: KazooClient) -> Iterator[str]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        future.result(30)
    try:
        yield TOPIC
    finally:
        for client_id in (LIMITED, CONSUMER):
            _configs_quietly(cluster, client_id)
        # Kafka keeps an entity's emptied config znode; the shared cluster must not.
        for client_id in (LIMITED, CONSUMER):
            if zk.exists(f"/config/clients/{client_id}") is not None:
                zk.delete(f"/config/clients/{client_id}")
        if zk.exists("/config/users/quota-user") is not None:
            zk.delete("/config/users/quota-user", recursive=True)
        for future in admin.delete_topics([TOPIC]).values():
            future.result(30)


def _configs_quietly(cluster: ClusterHandle, client_id: str) -> None:
    run_tool(
        "kafka-configs",
        "--bootstrap-server",
        cluster.bootstrap,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        client_id,
        "--delete-config",
        "producer_byte_rate,consumer_byte_rate",
    )


def test_a_producer_is_held_to_its_quota_beside_an_unthrottled_one(
    cluster: ClusterHandle, topic: str
) -> None:
    entity = ("--entity-type", "clients", "--entity-name", LIMITED)
    out = _configs(
        cluster, "--alter", *entity, "--add-config", f"producer_byte_rate={QUOTA_BYTES_PER_S}"
    )
    assert out == f"Completed updating config for client {LIMITED}.\n"
    described = _configs(cluster, "--describe", *entity)
    assert described == (
        f"Quota configs for client-id '{LIMITED}' are producer_byte_rate={QUOTA_BYTES_PER_S}.0\n"
    )
    limited, free = _side_by_side(cluster.bootstrap, PRODUCE_S)
    budget = QUOTA_BYTES_PER_S * BUDGET_WINDOW_S
    # Held to its quota over the window: Kafka's window grows by up to one sample before the
    # oldest is dropped, and the requests in flight when it went over are let through.
    assert limited.delivered_bytes <= budget + QUOTA_BYTES_PER_S + 1024 * 1024, limited
    assert limited.delivered_bytes >= 0.5 * budget, limited
    # Told so, and once throttled it runs at about its quota.
    assert limited.throttle_times_ms, limited
    assert limited.rate_after_first_throttle() <= 2 * QUOTA_BYTES_PER_S, limited
    # The unthrottled producer beside it is not slowed to the quota.
    assert not free.throttle_times_ms
    assert free.delivered_bytes > 2 * limited.delivered_bytes, (free, limited)
    # The leader's metrics show the throttling under Kafka's names (no user: client-id quota).
    labels = {"resource": "Produce", "user": "", "clientId": LIMITED}
    quota_samples = [scrape(cluster, broker_id) for broker_id in cluster.broker_ids]
    throttles = [value(s, "kafka_server_quota_throttle_time", **labels) for s in quota_samples]
    rates = [value(s, "kafka_server_quota_byte_rate", **labels) for s in quota_samples]
    assert max(throttles) > 0, throttles
    assert 0 < max(rates) <= 2 * QUOTA_BYTES_PER_S, rates

    _configs(cluster, "--alter", *entity, "--delete-config", "producer_byte_rate")
    assert _configs(cluster, "--describe", *entity) == ""
    # Lifted within seconds: a new producer of the same client id is not throttled.
    lifted = Run()
    produce(cluster.bootstrap, TOPIC, LIMITED, 2.0, lifted)
    assert not lifted.throttle_times_ms, lifted
    assert lifted.delivered_bytes > 3 * QUOTA_BYTES_PER_S * 2.0, lifted


def test_a_consumer_is_held_to_its_quota_beside_an_unthrottled_one(
    cluster: ClusterHandle, topic: str
) -> None:
    # Enough data that an unthrottled consumer reads well past the quota's window budget.
    topped_up = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": FREE})
    for _ in range(3000):
        while True:
            try:
                topped_up.produce(TOPIC, PAYLOAD, partition=0)
                break
            except BufferError:
                topped_up.poll(0.05)
    assert topped_up.flush(60) == 0
    entity = ("--entity-type", "clients", "--entity-name", CONSUMER)
    _configs(cluster, "--alter", *entity, "--add-config", f"consumer_byte_rate={QUOTA_BYTES_PER_S}")
    limited, free = Run(), Run()
    threads = [
        threading.Thread(
            target=consume, args=(cluster.bootstrap, TOPIC, CONSUMER, PRODUCE_S, limited)
        ),
        threading.Thread(target=consume, args=(cluster.bootstrap, TOPIC, FREE, PRODUCE_S, free)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PRODUCE_S + 30)
    budget = QUOTA_BYTES_PER_S * BUDGET_WINDOW_S
    # One fetch (up to max.partition.fetch.bytes, 1 MiB) may take it over, as in Kafka.
    assert limited.delivered_bytes <= budget + QUOTA_BYTES_PER_S + 1024 * 1024, limited
    assert limited.delivered_bytes >= 0.5 * budget, limited
    assert limited.throttle_times_ms, limited
    assert not free.throttle_times_ms
    assert free.delivered_bytes > 2 * limited.delivered_bytes, (free, limited)

    _configs(cluster, "--alter", *entity, "--delete-config", "consumer_byte_rate")
    lifted = Run()
    consume(cluster.bootstrap, TOPIC, CONSUMER, 2.0, lifted)
    assert not lifted.throttle_times_ms, lifted
    assert lifted.delivered_bytes > 3 * QUOTA_BYTES_PER_S * 2.0, lifted


def test_kafkas_own_kafka_configs_manages_quotas_on_our_brokers(
    cluster: ClusterHandle, topic: str, reference_lib: Path
) -> None:
    """Kafka 3.9's ConfigCommand sets and describes a (user, client id) quota on our brokers,
    and ours reads back what it wrote."""
    entity = ("--entity-type", "users", "--entity-name", "quota-user")
    entity += ("--entity-type", "clients", "--entity-name", LIMITED)
    bootstrap = ("--bootstrap-server", cluster.bootstrap)
    added = run_jvm_tool(
        "kafka-configs", *bootstrap, "--alter", *entity, "--add-config", "request_percentage=12.5"
    )
    assert added.returncode == 0, added
    assert added.stdout == "Completed updating config for user quota-user.\n"
    described = run_jvm_tool("kafka-configs", *bootstrap, "--describe", *entity)
    ours = _configs(cluster, "--describe", *entity)
    expected = (
        f"Quota configs for user-principal 'quota-user', client-id '{LIMITED}' are"
        " request_percentage=12.5\n"
    )
    assert (described.stdout, ours) == (expected, expected), described
    _configs(cluster, "--alter", *entity, "--delete-config", "request_percentage")
    assert run_jvm_tool("kafka-configs", *bootstrap, "--describe", *entity).stdout == ""
