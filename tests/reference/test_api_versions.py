"""Differential: ApiVersions. For every API our brokers implement, the advertised range must
be Apache Kafka 3.9's (ZooKeeper mode), and we must advertise no API that Kafka 3.9 lacks.

Kafka 3.9 has APIs we do not implement (transactions, ACLs, SASL, quotas ...); those are
listed by the issues that build them, not here. Where our range still differs from Kafka
3.9's, KNOWN_DIFFERENCES gives our range with the reason (DEVIATIONS.md, "Wire protocol"),
and the test fails when a listed difference is gone, so the list stays exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import ClusterFactory, ClusterHandle
from tests.integration.wire import WireClient, first_broker

API_VERSIONS = 18
Ranges = dict[int, tuple[int, int]]

# api key -> our advertised range, where it differs from Kafka 3.9's (each with its reason in
# DEVIATIONS.md). None does today: every range we advertise is Kafka 3.9's.
KNOWN_DIFFERENCES: Ranges = {}

# What brokers send one another in a ZooKeeper-mode cluster (the controller's requests, the
# requests to the controller, transaction markers, forwarding): all served, so that a Kafka
# 3.9 broker can join a cluster of ours (issue 39).
INTER_BROKER_APIS = {
    4: "LeaderAndIsr",
    5: "StopReplica",
    6: "UpdateMetadata",
    7: "ControlledShutdown",
    27: "WriteTxnMarkers",
    56: "AlterPartition",
    58: "Envelope",
    67: "AllocateProducerIds",
}


@pytest.fixture(scope="module")
def ranges(reference_lib: Path, make_cluster_module: ClusterFactory) -> dict[str, Ranges]:
    clusters: dict[str, ClusterHandle] = {
        "kafka": make_cluster_module(brokers=1, impl="kafka"),
        "ours": make_cluster_module(brokers=1),
    }
    return {impl: _advertised(cluster) for impl, cluster in clusters.items()}


def _advertised(cluster: ClusterHandle) -> Ranges:
    with WireClient.to(first_broker(cluster)) as client:
        response = client.request(
            API_VERSIONS, 3, {"client_software_name": "diff", "client_software_version": "1"}
        )
    assert int(response.error_code) == 0
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def test_we_advertise_no_api_kafka_lacks(ranges: dict[str, Ranges]) -> None:
    assert sorted(set(ranges["ours"]) - set(ranges["kafka"])) == []


def test_every_range_we_advertise_is_kafkas_or_a_listed_difference(
    ranges: dict[str, Ranges],
) -> None:
    ours, kafka = ranges["ours"], ranges["kafka"]
    unexpected = {
        key: {"ours": ours[key], "kafka": kafka.get(key)}
        for key in ours
        if ours[key] != kafka.get(key) and KNOWN_DIFFERENCES.get(key) != ours[key]
    }
    assert unexpected == {}, "\n".join(f"{k}: {v}" for k, v in sorted(unexpected.items()))


def test_every_listed_difference_still_differs(ranges: dict[str, Ranges]) -> None:
    ours, kafka = ranges["ours"], ranges["kafka"]
    gone = {
        key: listed
        for key, listed in KNOWN_DIFFERENCES.items()
        if ours.get(key) != listed or ours.get(key) == kafka.get(key)
    }
    assert gone == {}


def test_every_inter_broker_api_kafka_serves_we_serve_with_its_range(
    ranges: dict[str, Ranges],
) -> None:
    ours, kafka = ranges["ours"], ranges["kafka"]
    assert set(INTER_BROKER_APIS) <= set(kafka)
    differing = {
        name: {"ours": ours.get(key), "kafka": kafka[key]}
        for key, name in INTER_BROKER_APIS.items()
        if ours.get(key) != kafka[key]
    }
    assert differing == {}
