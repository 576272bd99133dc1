"""Differential: ApiVersions. For every API our brokers implement, the advertised range must
be Apache Kafka 3.9's (ZooKeeper mode), and we must advertise no API that Kafka 3.9 lacks.

NOT_SERVED lists the APIs Kafka 3.9 serves that we do not (none now; exact: the test fails
when one is missing or served). Where our range still differs from Kafka 3.9's,
KNOWN_DIFFERENCES gives our range with the reason (DEVIATIONS.md, "Wire protocol"), and the
test fails when a listed difference is gone, so the list stays exact. The same two clusters
then answer DescribeCluster, UpdateFeatures, the KIP-848 group APIs and (byte for byte) the
delegation-token APIs on PLAINTEXT, compared field by field, and take the
same client quota alterations: the answers, the znodes written, the change notifications and
the DescribeClientQuotas answers must be Kafka's.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle
from tests.integration.quota_clients import PAYLOAD, Run, consume, produce
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
NOT_SERVED: dict[int, str] = {}  # none any more
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


# -- client quotas ----------------------------------------------------------------------------

DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49
QUOTA_ZNODE_ROOTS = ("/config/users", "/config/clients", "/config/ips")
QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
)


def _quota_entry(entity: list[tuple[str, str | None]], *ops: tuple[str, float | None]) -> Any:
    return {
        "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
        "ops": [
            {"key": key, "value": 0.0 if value is None else value, "remove": value is None}
            for key, value in ops
        ],
    }


QUOTA_ALTERATIONS = [
    _quota_entry(
        [("client-id", "app")], ("producer_byte_rate", 1048576.0), ("consumer_byte_rate", 2e6)
    ),
    _quota_entry([("user", "alice")], ("request_percentage", 50.5)),
    _quota_entry([("user", "alice"), ("client-id", None)], ("producer_byte_rate", 1000.0)),
    _quota_entry([("user", None)], ("controller_mutation_rate", 12.5)),
    _quota_entry([("user", "bob smith@x")], ("producer_byte_rate", 5.0)),
    _quota_entry([("client-id", None)], ("consumer_byte_rate", 3000.0)),
    _quota_entry([("ip", "10.0.0.1")], ("connection_creation_rate", 5.0)),
    _quota_entry([("user", None), ("client-id", None)], ("producer_byte_rate", 7e7)),
    _quota_entry([("client-id", "c")], ("request_percentage", 1e7)),
    # Refused, each with Kafka's error and message.
    _quota_entry([], ("producer_byte_rate", 1.0)),
    _quota_entry([("user", "")], ("producer_byte_rate", 1.0)),
    _quota_entry([("client-id", "x")], ("foo", 1.0)),
    _quota_entry([("client-id", "y")], ("producer_byte_rate", 1.5)),
    _quota_entry([("user", "carol"), ("ip", "10.0.0.2")], ("producer_byte_rate", 1.0)),
    _quota_entry([("user", "dave")], ("SCRAM-SHA-256", 1.0)),
    _quota_entry([("group", "g")], ("producer_byte_rate", 1.0)),
]
QUOTA_FOLLOW_UPS = [
    _quota_entry([("client-id", "app")], ("consumer_byte_rate", None)),
    _quota_entry([("user", "alice")], ("absent_key", None), ("producer_byte_rate", 9.0)),
]


def _component(kind: str, match_type: int, match: str | None = None) -> dict[str, Any]:
    return {"entity_type": kind, "match_type": match_type, "match": match}


EXACT, DEFAULT, SPECIFIED = 0, 1, 2
QUOTA_FILTERS = {
    "everything": ([], False),
    "users-only": ([_component("user", SPECIFIED)], True),
    "alice": ([_component("user", EXACT, "alice")], False),
    "default-client-only": ([_component("client-id", DEFAULT)], True),
    "defaults-pair": ([_component("user", DEFAULT), _component("client-id", DEFAULT)], True),
    "ips": ([_component("ip", SPECIFIED)], False),
    "client-app": ([_component("client-id", EXACT, "app")], True),
    "user-and-ip": ([_component("user", EXACT, "alice"), _component("ip", SPECIFIED)], False),
    "custom-type": ([_component("group", SPECIFIED)], False),
    "duplicate": ([_component("user", SPECIFIED), _component("user", DEFAULT)], False),
}


def _entity_key(entity: Any) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(((e.entity_type, e.entity_name) for e in entity), key=repr))


def _alter_view(response: Any) -> list[Any]:
    # Kafka answers in a hash map's order: compared as sorted.
    return sorted(
        ((_entity_key(e.entity), int(e.error_code), e.error_message) for e in response.entries),
        key=repr,
    )


def _describe_view(response: Any) -> Any:
    entries = None
    if response.entries is not None:
        entries = sorted(
            ((_entity_key(e.entity), sorted((v.key, float(v.value)) for v in e.values))
             for e in response.entries),
            key=repr,
        )  # fmt: skip
    return int(response.error_code), response.error_message, entries


def _config_changes(cluster: ClusterHandle) -> set[str]:
    client = KazooClient(hosts=cluster.zk_connect)
    client.start(timeout=30)
    try:
        return set(client.get_children("/config/changes"))
    finally:
        client.stop()
        client.close()


def _quota_znodes(cluster: ClusterHandle, earlier_changes: set[str]) -> dict[str, bytes]:
    """Every znode under the quota roots, and the data of the change notifications made
    since `earlier_changes`, in order (the clusters are shared with other modules)."""
    client = KazooClient(hosts=cluster.zk_connect)
    client.start(timeout=30)
    try:
        found: dict[str, bytes] = {}
        pending = [root for root in QUOTA_ZNODE_ROOTS if client.exists(root)]
        while pending:
            path = pending.pop()
            for child in client.get_children(path):
                child_path = f"{path}/{child}"
                found[child_path] = client.get(child_path)[0]
                pending.append(child_path)
        changes = sorted(set(client.get_children("/config/changes")) - earlier_changes)
        for index, name in enumerate(changes):
            found[f"/config/changes[{index}]"] = client.get(f"/config/changes/{name}")[0]
        return found
    finally:
        client.stop()
        client.close()


def _remove_quotas(clusters: dict[str, ClusterHandle]) -> None:
    """Every quota the test set, removed as a user would (so each broker drops it), then the
    emptied znodes Kafka keeps: the clusters are shared with other modules."""
    keys = [*QUOTA_KEYS, "connection_creation_rate"]
    entries = [
        {**entry, "ops": [{"key": key, "value": 0.0, "remove": True} for key in keys]}
        for entry in QUOTA_ALTERATIONS[:9]
    ]
    _answers(clusters, ALTER_CLIENT_QUOTAS, 1, {"entries": entries, "validate_only": False})
    _delete_quota_znodes(clusters)


def _delete_quota_znodes(clusters: dict[str, ClusterHandle]) -> None:
    for cluster in clusters.values():
        client = KazooClient(hosts=cluster.zk_connect)
        client.start(timeout=30)
        try:
            for root in QUOTA_ZNODE_ROOTS:
                for child in client.get_children(root) if client.exists(root) else []:
                    client.delete(f"{root}/{child}", recursive=True)
        finally:
            client.stop()
            client.close()


def test_client_quotas_are_stored_and_described_as_kafka_does(
    clusters: dict[str, ClusterHandle],
) -> None:
    try:
        _compare_client_quotas(clusters)
    finally:
        _remove_quotas(clusters)


def _compare_client_quotas(clusters: dict[str, ClusterHandle]) -> None:
    earlier = {impl: _config_changes(cluster) for impl, cluster in clusters.items()}
    altered = _answers(
        clusters, ALTER_CLIENT_QUOTAS, 1, {"entries": QUOTA_ALTERATIONS, "validate_only": False}
    )
    assert _alter_view(altered["ours"]) == _alter_view(altered["kafka"])
    assert sum(int(e.error_code) == 0 for e in altered["kafka"].entries) == 9
    validated = _answers(
        clusters,
        ALTER_CLIENT_QUOTAS,
        0,
        {"entries": [_quota_entry([("client-id", "z")], ("producer_byte_rate", 1.0))],
         "validate_only": True},
    )  # fmt: skip
    assert _alter_view(validated["ours"]) == _alter_view(validated["kafka"])
    followed = _answers(
        clusters, ALTER_CLIENT_QUOTAS, 1, {"entries": QUOTA_FOLLOW_UPS, "validate_only": False}
    )
    assert _alter_view(followed["ours"]) == _alter_view(followed["kafka"])
    znodes = {impl: _quota_znodes(cluster, earlier[impl]) for impl, cluster in clusters.items()}
    assert znodes["ours"] == znodes["kafka"]
    for name, (components, strict) in QUOTA_FILTERS.items():
        fields = {"components": components, "strict": strict}
        for version in (0, 1):
            described = _answers(clusters, DESCRIBE_CLIENT_QUOTAS, version, fields)
            views = {impl: _describe_view(answer) for impl, answer in described.items()}
            assert views["ours"] == views["kafka"], f"{name} v{version}"


QUOTA_TOPIC = "api-versions-quota"
QUOTA_CLIENT = "api-versions-quota-producer"
QUOTA_BYTES_PER_S = 1_048_576
QUOTA_PRODUCE_S = 4.0


def test_a_producer_is_held_to_its_quota_as_by_kafka(clusters: dict[str, ClusterHandle]) -> None:
    """The same 1 MiB/s producer_byte_rate on each: a producer running flat out for 4 s gets
    through about the same bytes (Kafka's window lets 10 s worth through at once, then holds
    it back) and is told to back off."""
    runs: dict[str, Run] = {}
    entity = [("client-id", QUOTA_CLIENT)]
    try:
        for impl, cluster in clusters.items():
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            for future in admin.create_topics([NewTopic(QUOTA_TOPIC, 1, 1)]).values():
                future.result(30)
            with WireClient.to(first_broker(cluster)) as client:
                answer = client.request(
                    ALTER_CLIENT_QUOTAS,
                    1,
                    {
                        "entries": [
                            _quota_entry(entity, ("producer_byte_rate", QUOTA_BYTES_PER_S))
                        ],
                        "validate_only": False,
                    },
                )
            assert int(answer.entries[0].error_code) == 0
            runs[impl] = Run()
            produce(cluster.bootstrap, QUOTA_TOPIC, QUOTA_CLIENT, QUOTA_PRODUCE_S, runs[impl])
    finally:
        removal = _quota_entry(entity, ("producer_byte_rate", None))
        _answers(clusters, ALTER_CLIENT_QUOTAS, 1, {"entries": [removal], "validate_only": False})
        _delete_quota_znodes(clusters)
    ours, kafka = runs["ours"], runs["kafka"]
    window_budget = QUOTA_BYTES_PER_S * 11
    for run in (ours, kafka):
        assert 0.5 * window_budget <= run.delivered_bytes <= window_budget + 1024 * 1024, run
        assert run.throttle_times_ms, run
    assert abs(ours.delivered_bytes - kafka.delivered_bytes) <= 0.2 * kafka.delivered_bytes, (
        ours.delivered_bytes,
        kafka.delivered_bytes,
    )


QUOTA_FETCH_TOPIC = "api-versions-quota-fetch"
QUOTA_CONSUMER = "api-versions-quota-consumer"
QUOTA_FILL_RECORDS = 2500  # 25 MB: well past what the quota's window lets through


def _fill(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "api-versions-fill"})
    for _ in range(QUOTA_FILL_RECORDS):
        while True:
            try:
                producer.produce(QUOTA_FETCH_TOPIC, PAYLOAD, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def test_a_consumer_is_held_to_its_quota_as_by_kafka(clusters: dict[str, ClusterHandle]) -> None:
    """The same 1 MiB/s consumer_byte_rate on each: a consumer reading a 25 MB backlog for 4 s
    gets about the same bytes, and is told to back off."""
    runs: dict[str, Run] = {}
    entity = [("client-id", QUOTA_CONSUMER)]
    try:
        for impl, cluster in clusters.items():
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            for future in admin.create_topics([NewTopic(QUOTA_FETCH_TOPIC, 1, 1)]).values():
                future.result(30)
            _fill(cluster.bootstrap)
            with WireClient.to(first_broker(cluster)) as client:
                answer = client.request(
                    ALTER_CLIENT_QUOTAS,
                    1,
                    {
                        "entries": [
                            _quota_entry(entity, ("consumer_byte_rate", QUOTA_BYTES_PER_S))
                        ],
                        "validate_only": False,
                    },
                )
            assert int(answer.entries[0].error_code) == 0
            runs[impl] = Run()
            consume(
                cluster.bootstrap, QUOTA_FETCH_TOPIC, QUOTA_CONSUMER, QUOTA_PRODUCE_S, runs[impl]
            )
    finally:
        removal = _quota_entry(entity, ("consumer_byte_rate", None))
        _answers(clusters, ALTER_CLIENT_QUOTAS, 1, {"entries": [removal], "validate_only": False})
        _delete_quota_znodes(clusters)
    ours, kafka = runs["ours"], runs["kafka"]
    window_budget = QUOTA_BYTES_PER_S * 11
    for run in (ours, kafka):
        assert 0.5 * window_budget <= run.delivered_bytes <= window_budget + 1024 * 1024, run
        assert run.throttle_times_ms, run
    assert abs(ours.delivered_bytes - kafka.delivered_bytes) <= 0.2 * kafka.delivered_bytes, (
        ours.delivered_bytes,
        kafka.delivered_bytes,
    )


TOKEN_REQUESTS: list[tuple[int, int, dict[str, Any]]] = [
    (38, 3, {"owner_principal_type": "User", "owner_principal_name": "bob", "renewers": [],
             "max_lifetime": -1}),
    (38, 0, {"renewers": [{"principal_type": "User", "principal_name": "r"}], "max_lifetime": -1}),
    (39, 2, {"hmac": b"\x01\x02", "renew_period": -1}),
    (39, 0, {"hmac": b"\x01\x02", "renew_period": -1}),
    (40, 2, {"hmac": b"\x01\x02", "expiry_time_period": -1}),
    (40, 0, {"hmac": b"\x01\x02", "expiry_time_period": -1}),
    (41, 3, {"owners": None}),
    (41, 0, {"owners": [{"principal_type": "User", "principal_name": "bob"}]}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("api_key", "version", "fields"),
    TOKEN_REQUESTS,
    ids=[f"{key}-v{version}" for key, version, _ in TOKEN_REQUESTS],
)
def test_delegation_token_apis_refuse_plaintext_as_kafka(
    clusters: dict[str, ClusterHandle], api_key: int, version: int, fields: dict[str, Any]
) -> None:
    """On a PLAINTEXT listener Kafka hands out no tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED):
    the answers, byte for byte (kio cannot read their -1 timestamps)."""
    frames = {}
    for impl, cluster in clusters.items():
        with WireClient.to(first_broker(cluster)) as client:
            client.send(api_key, version, fields)
            frames[impl] = client.read_frame()
    assert frames["ours"] is not None
    assert frames["ours"] == frames["kafka"]
