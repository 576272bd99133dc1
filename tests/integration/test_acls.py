"""The authorizer on a SASL_SSL cluster (`scripts/cluster up --security sasl_ssl --set
authorizer.class.name=kafka.security.authorizer.AclAuthorizer`): the launcher's admin is a
super user; a user without ACLs is refused (TOPIC_AUTHORIZATION_FAILED producing, the topic
hidden from Metadata, GROUP_AUTHORIZATION_FAILED joining a group) until kafka-acls grants
her; a removed ACL is out of force on every broker within seconds; DENY beats ALLOW; a
prefixed ACL applies to the topics it prefixes; kafka-python lists ACLs."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.network.broker_client import BrokerClient
from broker.network.sasl import SaslClientConfig
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.tool_cli import add_scram_user, run_cluster_tool

TIMEOUT_S = 30
PROPAGATION_S = 10  # "within seconds" on a loaded machine
ADMIN = ("admin", "admin-secret")
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


@pytest.fixture(scope="module")
def cluster(make_cluster_module: Any) -> ClusterHandle:
    handle: ClusterHandle = make_cluster_module(
        security="sasl_ssl", overrides={"authorizer.class.name": AUTHORIZER}
    )
    return handle


@pytest.fixture(scope="module")
def alice(cluster: ClusterHandle) -> tuple[str, str]:
    """A SCRAM user with no ACLs (each test grants what it needs on its own topics)."""
    return _new_user(cluster, "alice")


def _new_user(cluster: ClusterHandle, name: str) -> tuple[str, str]:
    return add_scram_user(cluster, f"{name}-{uuid.uuid4().hex[:6]}")


def _config(
    cluster: ClusterHandle, user: tuple[str, str], bootstrap: str | None = None
) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap or cluster.bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(cluster.dir / "tls" / "ca.pem"),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user[0],
        "sasl.password": user[1],
    }


def _acls(cluster: ClusterHandle, *args: str) -> str:
    result = run_cluster_tool(cluster, "kafka-acls", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _new_topic(cluster: ClusterHandle, prefix: str = "acl-") -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"{prefix}{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_config(cluster, ADMIN))
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(TIMEOUT_S)
    return topic


def _produce(cluster: ClusterHandle, user: tuple[str, str], topic: str) -> int:
    """The error code of producing one record as `user` (0: delivered)."""
    from confluent_kafka import Producer

    errors: list[int] = []
    producer = Producer({**_config(cluster, user), "message.timeout.ms": "10000"})
    producer.produce(
        topic,
        b"v",
        on_delivery=lambda error, _m: errors.append(0 if error is None else error.code()),
    )
    producer.flush(TIMEOUT_S)
    assert errors, "no delivery report"
    return errors[0]


def _consume_one(cluster: ClusterHandle, user: tuple[str, str], topic: str, group: str) -> Any:
    """The first message or error the consumer sees."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {**_config(cluster, user), "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    try:
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None:
                return message
        return None
    finally:
        consumer.close()


def _ask(cluster: ClusterHandle, user: tuple[str, str], broker_id: int, request: Any) -> Any:
    """One broker's response to `request`, sent as `user`."""

    async def ask() -> Any:
        context = ssl.create_default_context(cafile=str(cluster.dir / "tls" / "ca.pem"))
        async with BrokerClient(
            "127.0.0.1",
            cluster.broker_port(broker_id),
            "test-acls",
            ssl_context=context,
            sasl=SaslClientConfig("SCRAM-SHA-512", user[0], user[1]),
        ) as client:
            return await client.send(request)

    return asyncio.run(ask())


def _request(api_key: ApiKey, version: int, **values: Any) -> Any:
    """A request of `values` (nested entries as dicts), every other field empty."""
    return adapter.filled(request_class(api_key, version), values, ErrorCode.none)


def _metadata_topics(cluster: ClusterHandle, user: tuple[str, str], broker_id: int) -> set[str]:
    """The topics one broker's Metadata (all topics) answers `user` with."""
    request = request_class(ApiKey.METADATA, 9)(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    response = _ask(cluster, user, broker_id, request)
    return {t.name for t in response.topics if t.error_code == ErrorCode.none}


def test_admin_is_a_super_user(cluster: ClusterHandle) -> None:
    topic = _new_topic(cluster)
    assert _produce(cluster, ADMIN, topic) == 0
    message = _consume_one(cluster, ADMIN, topic, f"g-{uuid.uuid4().hex[:6]}")
    assert message is not None and message.error() is None and message.value() == b"v"


def test_a_user_without_acls_is_refused_until_granted(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    from confluent_kafka import KafkaError

    topic = _new_topic(cluster)
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert _produce(cluster, alice, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert topic not in _metadata_topics(cluster, alice, 1)
    assert topic in _metadata_topics(cluster, ADMIN, 1)
    # A Read ACL on the topic only: joining the group is refused.
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Read",
          "--topic", topic)  # fmt: skip
    message = _consume_one(cluster, alice, topic, group)
    assert message is not None and message.error() is not None
    assert message.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED

    added = _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}",
                  "--operation", "Write", "--operation", "Describe", "--topic", topic)  # fmt: skip
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=" in added
    assert f"(principal=User:{alice[0]}, host=*, operation=WRITE, permissionType=ALLOW)" in added
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Read",
          "--group", group)  # fmt: skip
    wait_until(lambda: _produce(cluster, alice, topic) == 0, TIMEOUT_S, "alice produces")
    message = _consume_one(cluster, alice, topic, group)
    assert message is not None and message.error() is None and message.value() == b"v"
    listed = _acls(cluster, "--list", "--topic", topic)
    assert listed.count(f"principal=User:{alice[0]}") == 3


def test_a_removed_acl_is_out_of_force_on_every_broker_within_seconds(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    topic = _new_topic(cluster)
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Describe",
          "--topic", topic)  # fmt: skip
    for broker_id in cluster.broker_ids:
        wait_until(
            lambda b=broker_id: topic in _metadata_topics(cluster, alice, b),
            PROPAGATION_S,
            f"broker {broker_id} shows {topic} to alice",
        )
    _acls(cluster, "--remove", "--force", "--allow-principal", f"User:{alice[0]}",
          "--operation", "Describe", "--topic", topic)  # fmt: skip
    for broker_id in cluster.broker_ids:
        wait_until(
            lambda b=broker_id: topic not in _metadata_topics(cluster, alice, b),
            PROPAGATION_S,
            f"broker {broker_id} hides {topic} from alice",
        )


def test_deny_beats_allow(cluster: ClusterHandle, alice: tuple[str, str]) -> None:
    from confluent_kafka import KafkaError

    topic = _new_topic(cluster)
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Write",
          "--topic", topic)  # fmt: skip
    wait_until(lambda: _produce(cluster, alice, topic) == 0, TIMEOUT_S, "the ALLOW in force")
    _acls(cluster, "--add", "--deny-principal", f"User:{alice[0]}", "--operation", "Write",
          "--topic", topic)  # fmt: skip
    wait_until(
        lambda: _produce(cluster, alice, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED,
        TIMEOUT_S,
        "the DENY beside the ALLOW refuses alice",
    )
    listed = _acls(cluster, "--list", "--topic", topic)
    assert "permissionType=ALLOW" in listed and "permissionType=DENY" in listed


def test_a_prefixed_acl_applies_to_the_topics_it_prefixes(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    prefix = f"pre-{uuid.uuid4().hex[:6]}-"
    topic = _new_topic(cluster, prefix)
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Write",
          "--topic", prefix, "--resource-pattern-type", "prefixed")  # fmt: skip
    wait_until(lambda: _produce(cluster, alice, topic) == 0, TIMEOUT_S, "alice produces")
    listed = _acls(cluster, "--list", "--topic", prefix, "--resource-pattern-type", "prefixed")
    assert f"name={prefix}, patternType=PREFIXED" in listed


def test_kafka_python_describes_acls(cluster: ClusterHandle, alice: tuple[str, str]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    topic = _new_topic(cluster)
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Read",
          "--topic", topic)  # fmt: skip
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap,
        security_protocol="SASL_SSL",
        ssl_cafile=str(cluster.dir / "tls" / "ca.pem"),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=ADMIN[0],
        sasl_plain_password=ADMIN[1],
    )
    acl_filter = ACLFilter(
        principal=None,
        host="*",
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(
            ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL
        ),
    )
    found: list[Any] = []

    def described() -> bool:
        # The broker kafka-python asks may not have read the change notification yet.
        found[:] = admin.describe_acls(acl_filter)[0]
        return bool(found)

    try:
        wait_until(described, PROPAGATION_S, f"kafka-python describes the ACL of {topic}")
    finally:
        admin.close()
    assert [(a.principal, a.operation) for a in found] == [(f"User:{alice[0]}", ACLOperation.READ)]


def test_a_consumer_without_read_on_the_topic_is_refused_its_partitions(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    from confluent_kafka import KafkaError

    topic = _new_topic(cluster)
    group = f"g-{uuid.uuid4().hex[:6]}"
    assert _produce(cluster, ADMIN, topic) == 0
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Describe",
          "--topic", topic)  # fmt: skip
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Read",
          "--group", group)  # fmt: skip
    message = _consume_one(cluster, alice, topic, group)
    assert message is not None and message.error() is not None
    assert message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_admin_requests_are_answered_per_resource(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    mine, other = _new_topic(cluster), _new_topic(cluster)
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Delete",
          "--topic", mine)  # fmt: skip
    admin = AdminClient(_config(cluster, alice))

    codes: dict[str, int] = {}
    futures = admin.delete_topics([mine, other], operation_timeout=TIMEOUT_S)
    for topic, future in futures.items():
        try:
            future.result(TIMEOUT_S)
            codes[topic] = 0
        except KafkaException as error:
            codes[topic] = error.args[0].code()
    assert codes == {mine: 0, other: KafkaError.TOPIC_AUTHORIZATION_FAILED}


def test_topic_configs_need_describe_configs_on_the_topic(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource

    mine, other = _new_topic(cluster), _new_topic(cluster)
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation",
          "DescribeConfigs", "--topic", mine)  # fmt: skip
    admin = AdminClient(_config(cluster, alice))
    resources = [ConfigResource("topic", mine), ConfigResource("topic", other)]
    codes: dict[str, int] = {}

    def describe() -> bool:
        for resource, future in admin.describe_configs(resources).items():
            try:
                future.result(TIMEOUT_S)
                codes[resource.name] = 0
            except KafkaException as error:
                codes[resource.name] = error.args[0].code()
        return codes[mine] == 0  # the broker asked may not have read the ACL yet

    wait_until(describe, PROPAGATION_S, f"alice describes the configs of {mine}")
    assert codes[other] == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_transactional_producer_needs_write_on_its_transactional_id(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer

    topic = _new_topic(cluster)
    transactional_id = f"tx-{uuid.uuid4().hex[:6]}"
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Write",
          "--topic", topic)  # fmt: skip
    config = {**_config(cluster, alice), "transactional.id": transactional_id}
    with pytest.raises(KafkaException) as refused:
        Producer(config).init_transactions(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _acls(cluster, "--add", "--allow-principal", f"User:{alice[0]}", "--operation", "Write",
          "--transactional-id", transactional_id)  # fmt: skip

    def committed() -> bool:
        producer = Producer(config)
        try:
            producer.init_transactions(TIMEOUT_S)
        except KafkaException:
            return False  # a broker that has not read the new ACL yet
        producer.begin_transaction()
        producer.produce(topic, b"tx")
        producer.commit_transaction(TIMEOUT_S)
        return True

    wait_until(committed, TIMEOUT_S, f"alice commits a transaction as {transactional_id}")


def _grant(cluster: ClusterHandle, user: tuple[str, str], operation: str, *resource: str) -> None:
    _acls(cluster, "--add", "--allow-principal", f"User:{user[0]}", "--operation", operation,
          *resource)  # fmt: skip


def _partition_errors(topics: Any, name_field: str = "name") -> dict[str, set[ErrorCode]]:
    return {getattr(t, name_field): {p.error_code for p in t.partitions} for t in topics}


def test_refused_topics_are_answered_each_and_the_rest_served(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    """ListOffsets, OffsetForLeaderEpoch, DeleteRecords, CreatePartitions and
    DescribeProducers answer each topic the principal may not act on with
    TOPIC_AUTHORIZATION_FAILED (Kafka's getErrorResponse shape), and serve the others."""
    mine, other = _new_topic(cluster), _new_topic(cluster)
    _grant(cluster, alice, "Describe", "--topic", mine)
    refused = {ErrorCode.topic_authorization_failed}

    def list_offsets(broker_id: int) -> dict[str, set[ErrorCode]]:
        topics = [
            {"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for t in (mine, other)
        ]
        request = _request(ApiKey.LIST_OFFSETS, 7, replica_id=-1, topics=topics)
        return _partition_errors(_ask(cluster, alice, broker_id, request).topics)

    for broker_id in cluster.broker_ids:
        wait_until(
            lambda b=broker_id: refused.isdisjoint(list_offsets(b).get(mine, refused)),
            PROPAGATION_S,
            f"broker {broker_id} serves alice ListOffsets of {mine}",
        )
        assert list_offsets(broker_id)[other] == refused
    broker_id = cluster.broker_ids[0]
    partitions = [{"partition": 0, "leader_epoch": 0, "current_leader_epoch": -1}]
    epochs = _ask(
        cluster,
        alice,
        broker_id,
        _request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            4,
            replica_id=-1,
            topics=[{"topic": other, "partitions": partitions}],
        ),
    )
    assert _partition_errors(epochs.topics, "topic") == {other: refused}
    deleted = _ask(
        cluster,
        alice,
        broker_id,
        _request(
            ApiKey.DELETE_RECORDS,
            2,
            timeout=0,
            topics=[{"name": other, "partitions": [{"partition_index": 0, "offset": 0}]}],
        ),
    )
    assert _partition_errors(deleted.topics) == {other: refused}
    producers = _ask(
        cluster,
        alice,
        broker_id,
        _request(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[{"name": other, "partition_indexes": [0]}]),
    )
    assert _partition_errors(producers.topics) == {other: refused}
    grown = _ask(
        cluster,
        alice,
        broker_id,
        _request(
            ApiKey.CREATE_PARTITIONS,
            3,
            timeout=0,
            validate_only=True,
            topics=[{"name": other, "count": 2, "assignments": None}],
        ),
    )
    assert [(r.name, r.error_code) for r in grown.results] == [
        (other, ErrorCode.topic_authorization_failed)
    ]


def test_refused_groups_are_errors_the_client_sees(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    """FindCoordinator v4+ answers each refused key, OffsetFetch v1 (no top-level error)
    puts GROUP_AUTHORIZATION_FAILED on each partition, and a kafka-python commit to a group it
    may describe but not read fails with GroupAuthorizationFailedError instead of looking
    stored."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import GroupAuthorizationFailedError, KafkaError
    from kafka.structs import OffsetAndMetadata

    topic = _new_topic(cluster)
    refused_group, describable = f"g-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    broker_id = cluster.broker_ids[0]
    found = _ask(
        cluster,
        alice,
        broker_id,
        _request(ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=[refused_group, "g2"]),
    )
    assert [(c.key, c.error_code) for c in found.coordinators] == [
        (refused_group, ErrorCode.group_authorization_failed),
        ("g2", ErrorCode.group_authorization_failed),
    ]
    fetched = _ask(
        cluster,
        alice,
        broker_id,
        _request(
            ApiKey.OFFSET_FETCH,
            1,
            group_id=refused_group,
            topics=[{"name": topic, "partition_indexes": [0]}],
        ),
    )
    assert _partition_errors(fetched.topics) == {topic: {ErrorCode.group_authorization_failed}}

    _grant(cluster, alice, "Describe", "--group", describable)
    _grant(cluster, alice, "Read", "--topic", topic)
    partition = TopicPartition(topic, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=describable,
        enable_auto_commit=False,
        security_protocol="SASL_SSL",
        ssl_cafile=str(cluster.dir / "tls" / "ca.pem"),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=alice[0],
        sasl_plain_password=alice[1],
    )
    try:
        consumer.assign([partition])

        def may_describe() -> bool:
            # Describe on the group (FindCoordinator, OffsetFetch) is in force on the brokers
            # asked: what refuses the commit below can only be its missing Read.
            try:
                consumer.committed(partition)
            except KafkaError:
                return False
            return True

        wait_until(may_describe, PROPAGATION_S, f"alice fetches the offsets of {describable}")
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.commit({partition: OffsetAndMetadata(0, "", -1)})
    finally:
        consumer.close()


def _leader(cluster: ClusterHandle, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(_config(cluster, ADMIN)).list_topics(topic, timeout=TIMEOUT_S)
    return int(metadata.topics[topic].partitions[0].leader)


def test_transactional_batches_need_write_on_a_transactional_id(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    """Kafka reads the batches' transactional flag: Write on the topic alone does not let a
    producer open a transaction, with no transactional id or with one it may not write; and
    batches claiming a transaction no id names are refused to a super user too (Kafka refuses
    them whether or not an authorizer is on)."""
    from broker.log.record_codec import SimpleRecord, build_batch

    topic = _new_topic(cluster)
    _grant(cluster, alice, "Write", "--topic", topic)
    wait_until(lambda: _produce(cluster, alice, topic) == 0, TIMEOUT_S, "alice produces")
    batch = build_batch(
        [SimpleRecord(b"k", b"v", timestamp_ms=1)],
        producer_id=1_000_000,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    attempts = [(alice, None), (alice, f"tx-{uuid.uuid4().hex[:6]}"), (ADMIN, None)]
    for user, transactional_id in attempts:
        request = _request(
            ApiKey.PRODUCE,
            9,
            transactional_id=transactional_id,
            acks=-1,
            timeout=10_000,
            topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        )
        response = _ask(cluster, user, _leader(cluster, topic), request)
        errors = {p.error_code for t in response.responses for p in t.partition_responses}
        assert errors == {ErrorCode.transactional_id_authorization_failed}, (user, transactional_id)


def test_cluster_action_or_alter_let_a_broker_principal_truncate_and_write_markers(
    cluster: ClusterHandle,
) -> None:
    """Kafka's documented minimum for a broker is ClusterAction: OffsetForLeaderEpoch (which
    followers truncate with) is allowed on every topic without Describe on them; Kafka 3.9
    also takes Alter on the cluster for WriteTxnMarkers."""
    follower, operator = _new_user(cluster, "follower"), _new_user(cluster, "operator")
    topic = _new_topic(cluster)
    _grant(cluster, follower, "ClusterAction", "--cluster")
    _grant(cluster, operator, "Alter", "--cluster")
    partitions = [{"partition": 0, "leader_epoch": 0, "current_leader_epoch": -1}]
    epochs = _request(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        replica_id=-1,
        topics=[{"topic": topic, "partitions": partitions}],
    )
    leader = _leader(cluster, topic)

    def truncates() -> bool:
        response = _ask(cluster, follower, leader, epochs)
        return _partition_errors(response.topics, "topic") == {topic: {ErrorCode.none}}

    wait_until(truncates, PROPAGATION_S, f"broker {leader} answers the follower's epochs")
    # A marker for a topic that does not exist: past the authorizer, the handler refuses it.
    marker = {
        "producer_id": 1,
        "producer_epoch": 0,
        "transaction_result": False,
        "coordinator_epoch": 0,
        "topics": [{"name": f"missing-{uuid.uuid4().hex[:6]}", "partition_indexes": [0]}],
    }
    markers = _request(ApiKey.WRITE_TXN_MARKERS, 1, markers=[marker])

    def marker_errors(user: tuple[str, str]) -> set[ErrorCode]:
        response = _ask(cluster, user, leader, markers)
        return {p.error_code for m in response.markers for t in m.topics for p in t.partitions}

    wait_until(
        lambda: ErrorCode.cluster_authorization_failed not in marker_errors(operator),
        PROPAGATION_S,
        "Alter on the cluster lets WriteTxnMarkers through",
    )
    assert marker_errors(follower) == marker_errors(operator)


def test_offset_delete_needs_read_on_its_topics(
    cluster: ClusterHandle, alice: tuple[str, str]
) -> None:
    group = f"g-{uuid.uuid4().hex[:6]}"
    topic = _new_topic(cluster)
    _grant(cluster, alice, "Delete", "--group", group)
    request = _request(
        ApiKey.OFFSET_DELETE,
        0,
        group_id=group,
        topics=[{"name": topic, "partitions": [{"partition_index": 0}]}],
    )

    def answered() -> Any:
        return _ask(cluster, alice, cluster.broker_ids[0], request)

    wait_until(
        lambda: answered().error_code != ErrorCode.group_authorization_failed,
        PROPAGATION_S,
        f"alice may delete the offsets of {group}",
    )
    assert _partition_errors(answered().topics) == {topic: {ErrorCode.topic_authorization_failed}}


def test_an_acl_named_with_a_slash_is_refused(cluster: ClusterHandle) -> None:
    """Kafka refuses it (its znode would nest under /kafka-acl/Group/a and no broker would load
    it again after a restart): INVALID_REQUEST, "Failed to create ACL"."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    group = f"g-{uuid.uuid4().hex[:6]}/sub"
    binding = AclBinding(
        ResourceType.GROUP,
        group,
        ResourcePatternType.LITERAL,
        "User:mallory",
        "*",
        AclOperation.READ,
        AclPermissionType.DENY,
    )
    admin = AdminClient(_config(cluster, ADMIN))
    with pytest.raises(KafkaException) as refused:
        admin.create_acls([binding])[binding].result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "Failed to create ACL" in refused.value.args[0].str()
    assert f"name={group}," not in _acls(cluster, "--list", "--group", group)
