"""Differential: ApiVersions. For every API our brokers implement, the advertised range must
be Apache Kafka 3.9's (ZooKeeper mode), and we must advertise no API that Kafka 3.9 lacks.

Kafka 3.9 serves a few APIs we do not yet (NOT_SERVED, exact: the test fails when one is
served). Where our range still differs from Kafka 3.9's, KNOWN_DIFFERENCES gives our range with
the reason (DEVIATIONS.md, "Wire protocol"), and the test fails when a listed difference is
gone, so the list stays exact. The same two clusters then answer DescribeCluster and the
KIP-848 group APIs, compared field by field.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import ClusterHandle
from tests.integration.wire import WireClient, first_broker
from tests.reference.conftest import OneBroker

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


# APIs Kafka 3.9 serves in ZooKeeper mode that we do not (issue 41; DEVIATIONS.md, "Wire
# protocol and APIs").
NOT_SERVED = {
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    41: "DescribeDelegationToken",
    48: "DescribeClientQuotas",
    49: "AlterClientQuotas",
}
UPDATE_FEATURES = 57
DESCRIBE_CLUSTER = 60
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69


@pytest.fixture(scope="module")
def clusters(one_broker: OneBroker) -> dict[str, ClusterHandle]:
    return {impl: one_broker(impl) for impl in ("kafka", "ours")}


@pytest.fixture(scope="module")
def ranges(clusters: dict[str, ClusterHandle]) -> dict[str, Ranges]:
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


def test_kafka_serves_nothing_we_do_not_but_the_listed_apis(ranges: dict[str, Ranges]) -> None:
    missing = set(ranges["kafka"]) - set(ranges["ours"])
    assert {key: NOT_SERVED.get(key, "?") for key in sorted(missing)} == NOT_SERVED


def _answers(
    clusters: dict[str, ClusterHandle], api_key: int, version: int, fields: dict[str, Any]
) -> dict[str, Any]:
    answers = {}
    for impl, cluster in clusters.items():
        with WireClient.to(first_broker(cluster)) as client:
            answers[impl] = client.request(api_key, version, fields)
    return answers


def _cluster_view(response: Any, cluster: ClusterHandle) -> dict[str, Any]:
    """A DescribeCluster answer with this cluster's own id and addresses named."""
    ports = {cluster.broker_port(b): b for b in cluster.broker_ids}
    return {
        "error": (int(response.error_code), response.error_message),
        "endpoint_type": getattr(response, "endpoint_type", None),
        "cluster_id": "<22-character id>"
        if len(response.cluster_id) == 22
        else response.cluster_id,
        "controller_id": int(response.controller_id),
        "brokers": [
            (int(b.broker_id), f"<port of {ports.get(int(b.port))}>", b.rack)
            for b in response.brokers
        ],
        "cluster_authorized_operations": int(response.cluster_authorized_operations),
    }


@pytest.mark.parametrize(
    ("version", "fields"),
    [
        (0, {"include_cluster_authorized_operations": False}),
        (1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}),
        (1, {"include_cluster_authorized_operations": True, "endpoint_type": 2}),
        (1, {"include_cluster_authorized_operations": False, "endpoint_type": 9}),
        (0, {"include_cluster_authorized_operations": True, "endpoint_type": 2}),
    ],
    ids=["v0", "v1-with-operations", "v1-controllers", "v1-unknown-type", "v0-controllers"],
)
def test_describe_cluster_is_kafkas(
    clusters: dict[str, ClusterHandle], version: int, fields: dict[str, Any]
) -> None:
    answers = _answers(clusters, DESCRIBE_CLUSTER, version, fields)
    views = {impl: _cluster_view(answers[impl], clusters[impl]) for impl in clusters}
    assert views["ours"] == views["kafka"]


def test_kip_848_group_apis_are_unsupported_as_in_kafka(
    clusters: dict[str, ClusterHandle],
) -> None:
    heartbeat = _answers(
        clusters,
        CONSUMER_GROUP_HEARTBEAT,
        0,
        {
            "group_id": "g848",
            "member_id": "",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": ["t"],
            "server_assignor": None,
            "topic_partitions": [],
        },
    )
    describe = _answers(
        clusters,
        CONSUMER_GROUP_DESCRIBE,
        0,
        {"group_ids": ["g848", "other"], "include_authorized_operations": True},
    )
    assert heartbeat["ours"] == heartbeat["kafka"]
    assert describe["ours"] == describe["kafka"]


def _feature_update(version: int, feature: str, level: int, upgrade_type: int) -> dict[str, Any]:
    if version == 0:
        return {"feature": feature, "max_version_level": level, "allow_downgrade": upgrade_type > 1}
    return {"feature": feature, "max_version_level": level, "upgrade_type": upgrade_type}


@pytest.mark.parametrize(
    ("version", "update"),
    [
        (1, ("test.feature", 1, 1)),  # upgrade: no feature is supported in ZooKeeper mode
        (1, ("test.feature", 0, 2)),  # delete a feature not finalized
        (1, ("", 1, 1)),
        (1, ("test.feature", 1, 0)),  # unknown upgrade type
        (1, ("test.feature", 0, 1)),  # level 0 without a downgrade
        (0, ("metadata.version", 3, 1)),
        (0, ("test.feature", 0, 2)),
    ],
    ids=["upgrade", "delete-absent", "no-name", "unknown-type", "zero-upgrade", "v0", "v0-delete"],
)
def test_update_features_is_kafkas(
    clusters: dict[str, ClusterHandle], version: int, update: tuple[str, int, int]
) -> None:
    fields = {
        "timeout": 10000,
        "feature_updates": [_feature_update(version, *update)],
        "validate_only": False,
    }
    answers = _answers(clusters, UPDATE_FEATURES, version, fields)
    assert answers["ours"] == answers["kafka"]
    assert answers["kafka"].results[0].error_code != 0


def test_finalized_features_and_their_epoch_are_kafkas(clusters: dict[str, ClusterHandle]) -> None:
    """ApiVersions v3 reports /feature: no finalized feature, at its znode's version."""
    answers = _answers(
        clusters,
        API_VERSIONS,
        3,
        {"client_software_name": "diff", "client_software_version": "1"},
    )
    seen = {
        impl: (
            int(a.finalized_features_epoch),
            list(a.finalized_features),
            list(a.supported_features),
        )
        for impl, a in answers.items()
    }
    assert seen["ours"] == seen["kafka"]
