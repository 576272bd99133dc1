"""Drive real clients (kafka-python, confluent-kafka, kcat) through the recording proxy, so the
corpus holds exactly what they send for every API we implement.

Every step is bounded in time and independent: a failing step is reported and the rest still
run (a missing API then shows up as a coverage failure naming it). Topic names all start with
`fuzz-rec-` and carry a per-run tag, so recording twice on one cluster does not collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartitionReplica
from kafka import TopicPartition as KafkaPythonPartition
from kafka.admin import ConfigResource as KafkaPythonConfigResource
from kafka.admin import ConfigResourceType
from kafka.admin import NewPartitions as KafkaPythonNewPartitions
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest
from kafka.structs import OffsetAndMetadata

from broker.network.broker_client import BrokerClient
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class

RECORD_PREFIX = "fuzz-rec-"
UNUSED_BROKER_ID = 1000  # no test cluster has that many brokers
CLIENT_TIMEOUT_S = 30.0
RECORDS_PER_PRODUCER = 5
GROUP_HEARTBEAT_S = 1.0  # a few heartbeats at 300 ms after joining
CONFLUENT_GROUP = f"{RECORD_PREFIX}group-confluent"
KCAT_TIMEOUT_S = 30.0
UNDECODED_CLIENT_ID = b"fuzz-rec-undecoded"
_REQUEST_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client id length
_FRAME_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Topics:
    """The topics one recording run uses; none has the acked topic's name length."""

    kafka_python: str
    kafka_python_scratch: str
    confluent: str
    confluent_scratch: str

    @classmethod
    def for_run(cls, tag: str) -> Topics:
        return cls(
            kafka_python=f"{RECORD_PREFIX}kp-{tag}",
            kafka_python_scratch=f"{RECORD_PREFIX}kp-del-{tag}",
            confluent=f"{RECORD_PREFIX}ck-{tag}",
            confluent_scratch=f"{RECORD_PREFIX}ck-del-{tag}",
        )

    def names(self) -> list[str]:
        return [
            self.kafka_python,
            self.kafka_python_scratch,
            self.confluent,
            self.confluent_scratch,
        ]


Step = tuple[str, Callable[[], None]]


# ---- kafka-python -------------------------------------------------------------------------


def _kafka_python_admin(bootstrap: str, topics: Topics) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-rec-kafka-python")
    try:
        new = {"num_partitions": 1, "replication_factor": 1}
        admin.create_topics({topics.kafka_python: new, topics.kafka_python_scratch: new})
        resource = KafkaPythonConfigResource(ConfigResourceType.TOPIC, topics.kafka_python)
        admin.describe_configs([resource])
        altered = KafkaPythonConfigResource(
            ConfigResourceType.TOPIC, topics.kafka_python, configs={"retention.ms": "3600000"}
        )
        admin.alter_configs([altered], raise_on_unknown=False, incremental=False)
        admin.delete_topics([topics.kafka_python_scratch])
    finally:
        admin.close()


def _kafka_python_produce(bootstrap: str, topic: str) -> None:
    variants: list[dict[str, object]] = [
        {"enable_idempotence": False, "acks": 1},
        {"enable_idempotence": False, "acks": 1, "compression_type": "gzip"},
        {"enable_idempotence": True, "acks": "all"},
    ]
    for options in variants:
        producer = KafkaProducer(bootstrap_servers=bootstrap, **options)
        for index in range(RECORDS_PER_PRODUCER):
            producer.send(topic, f"kafka-python {index}".encode())
        producer.flush(timeout=CLIENT_TIMEOUT_S)
        producer.close(timeout=CLIENT_TIMEOUT_S)


def _kafka_python_consume(bootstrap: str, topic: str) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partition = KafkaPythonPartition(topic, 0)
    try:
        consumer.assign([partition])
        consumer.seek(partition, 0)
        consumer.poll(timeout_ms=2000)
        consumer.offsets_for_times({partition: int(time.time() * 1000) - 60_000})
        consumer.beginning_offsets([partition])
        consumer.end_offsets([partition])
    finally:
        consumer.close()


def _kafka_python_validate_position(bootstrap: str, topic: str) -> None:
    """The OffsetForLeaderEpoch request kafka-python's consumer sends to validate a position
    after a leader change (KIP-320), sent through its own network layer: provoking a real
    leader change while recording would make the corpus depend on timing."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-rec-kafka-python")
    try:
        leader = admin._manager.cluster.leader_for_partition(KafkaPythonPartition(topic, 0))
        partition = OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=0, leader_epoch=0
        )
        request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[(topic, [partition])])

        async def send() -> object:
            return await admin._manager.send(request, node_id=leader)

        admin._manager.run(send)
    finally:
        admin.close()


def _kafka_python_commit(bootstrap: str, topic: str) -> None:
    """OffsetCommit and OffsetFetch as a consumer that assigns its partitions sends them, then
    OffsetDelete from kafka-python's admin client."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=f"{RECORD_PREFIX}group",
        enable_auto_commit=False,
        request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000),
    )
    partition = KafkaPythonPartition(topic, 0)
    try:
        consumer.assign([partition])
        consumer.commit({partition: OffsetAndMetadata(1, "fuzz", -1)})
        consumer.committed(partition)
    finally:
        consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-rec-kafka-python")
    try:
        admin.delete_group_offsets(f"{RECORD_PREFIX}group", [partition])  # OffsetDelete
    finally:
        admin.close()


MISSING_LOG_DIR = "/nonexistent/fuzz-log-dir"


def _kafka_python_records_admin(bootstrap: str, topic: str) -> None:
    """DeleteRecords (below the first record the produce step wrote), DescribeLogDirs and an
    AlterReplicaLogDirs to a dir no broker has (LOG_DIR_NOT_FOUND: a valid request that moves
    nothing)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-rec-kafka-python")
    try:
        admin.delete_records({KafkaPythonPartition(topic, 0): 1})
        described = admin.describe_log_dirs()
        replica = TopicPartitionReplica(topic, 0, described[0]["broker"])
        admin.alter_replica_log_dirs({replica: MISSING_LOG_DIR})
    finally:
        admin.close()


def _kafka_python_partitions_admin(bootstrap: str, topic: str) -> None:
    """CreatePartitions (a second partition), ListPartitionReassignments and an
    AlterPartitionReassignments cancelling nothing (NO_REASSIGNMENT_IN_PROGRESS)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-rec-kafka-python")
    try:
        admin.create_partitions({topic: KafkaPythonNewPartitions(total_count=2)})
        admin.list_partition_reassignments()
        admin.alter_partition_reassignments({KafkaPythonPartition(topic, 0): None})
    finally:
        admin.close()


def _controlled_shutdown_request(bootstrap: str) -> None:
    """ControlledShutdown, which only brokers send (no client library has it), for a broker
    id no cluster uses: a valid request that moves nothing (BROKER_NOT_AVAILABLE from the
    controller, NOT_CONTROLLER elsewhere)."""
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.CONTROLLED_SHUTDOWN, 3),
            {"broker_id": UNUSED_BROKER_ID, "broker_epoch": 0},
        ),
    )


def _controller_requests(bootstrap: str) -> None:
    """LeaderAndIsr, StopReplica and UpdateMetadata, which only a ZooKeeper-mode controller
    sends, for a topic no cluster has and with no broker epoch (not fenced): valid requests
    that change nothing (a partition not hosted is left to the znode watch, and stopping it
    deletes nothing)."""
    topic = "fuzz-no-such-topic"
    state = {
        "partition_index": 0,
        "controller_epoch": 0,
        "leader": UNUSED_BROKER_ID,
        "leader_epoch": 0,
        "isr": [UNUSED_BROKER_ID],
        "partition_epoch": 0,
        "replicas": [UNUSED_BROKER_ID],
        "zk_version": 0,
    }
    common = {"controller_id": UNUSED_BROKER_ID, "controller_epoch": 0, "broker_epoch": -1}
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.LEADER_AND_ISR, 7),
            {
                **common,
                "type": 0,
                "topic_states": [
                    {"topic_name": topic, "topic_id": None, "partition_states": [state]}
                ],
                "live_leaders": [],
            },
        ),
    )
    stop = {"partition_index": 0, "leader_epoch": 0, "delete_partition": True}
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.STOP_REPLICA, 4),
            {**common, "topic_states": [{"topic_name": topic, "partition_states": [stop]}]},
        ),
    )
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.UPDATE_METADATA, 8),
            {
                **common,
                "topic_states": [
                    {"topic_name": topic, "topic_id": None, "partition_states": [state]}
                ],
                "live_brokers": [],
            },
        ),
    )


def _controller_bound_requests(bootstrap: str) -> None:
    """AlterPartition and AllocateProducerIds, which only brokers send their controller, from
    a broker id no cluster uses with no broker epoch, for a topic id no cluster has: valid
    requests that change nothing (NOT_CONTROLLER off the controller, refused on it). And
    Envelope, after which a ZooKeeper-mode broker closes the connection, as Kafka does without
    forwarding: the recorded frame is what counts, not the answer."""
    partition = {
        "partition_index": 0,
        "leader_epoch": 0,
        "new_isr_with_epochs": [{"broker_id": UNUSED_BROKER_ID, "broker_epoch": -1}],
        "leader_recovery_state": 0,
        "partition_epoch": 0,
    }
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.ALTER_PARTITION, 3),
            {
                "broker_id": UNUSED_BROKER_ID,
                "broker_epoch": -1,
                "topics": [{"topic_id": uuid.uuid4(), "partitions": [partition]}],
            },
        ),
    )
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.ALLOCATE_PRODUCER_IDS, 0),
            {"broker_id": UNUSED_BROKER_ID, "broker_epoch": -1},
        ),
    )
    envelope = adapter.build(
        request_class(ApiKey.ENVELOPE, 0),
        {"request_data": b"", "request_principal": None, "client_host_address": b"\x7f\0\0\1"},
    )
    with contextlib.suppress(Exception):  # the broker closes the connection instead of answering
        _broker_request(bootstrap, envelope)


def _write_txn_markers_request(bootstrap: str) -> None:
    """WriteTxnMarkers, which only transaction coordinators send, for a topic no cluster has:
    a valid request that writes nothing (UNKNOWN_TOPIC_OR_PARTITION)."""
    marker = {
        "producer_id": 1,
        "producer_epoch": 0,
        "transaction_result": False,
        "topics": [{"name": "fuzz-no-such-topic", "partition_indexes": [0]}],
        "coordinator_epoch": 0,
    }
    _broker_request(
        bootstrap,
        adapter.build(request_class(ApiKey.WRITE_TXN_MARKERS, 1), {"markers": [marker]}),
    )


def _transaction_admin_requests(bootstrap: str) -> None:
    """DescribeTransactions, ListTransactions and DescribeProducers, which kafka-transactions
    sends (the Python clients have no call for them)."""
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.DESCRIBE_TRANSACTIONS, 0), {"transactional_ids": ["fuzz-rec-txn"]}
        ),
    )
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.LIST_TRANSACTIONS, 1),
            {"state_filters": ["Ongoing"], "producer_id_filters": [], "duration_filter": -1},
        ),
    )
    topics = [{"name": "fuzz-no-such-topic", "partition_indexes": [0, 1]}]
    _broker_request(
        bootstrap,
        adapter.build(request_class(ApiKey.DESCRIBE_PRODUCERS, 0), {"topics": topics}),
    )


def _security_requests(bootstrap: str) -> None:
    """SaslHandshake and SaslAuthenticate (on a plaintext listener: ILLEGAL_SASL_STATE), and
    the SCRAM user admin APIs, deleting a user no cluster has (so that replaying the frame
    changes nothing)."""
    _broker_request(
        bootstrap, adapter.build(request_class(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": "PLAIN"})
    )
    _broker_request(
        bootstrap,
        adapter.build(request_class(ApiKey.SASL_AUTHENTICATE, 2), {"auth_bytes": b"\0u\0p"}),
    )
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0), {"users": [{"name": "fuzz"}]}
        ),
    )
    deletion = {"name": "fuzz-no-such-user", "mechanism": 1}
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0),
            {"deletions": [deletion], "upsertions": []},
        ),
    )


def _acl_requests(bootstrap: str) -> None:
    """DescribeAcls, CreateAcls and DeleteAcls: SECURITY_DISABLED on a cluster without an
    authorizer; with one, an ACL for a principal nobody has, created and deleted again."""
    acl = {
        "resource_type": 2,  # Topic
        "resource_name": "fuzz-no-such-topic",
        "resource_pattern_type": 3,  # LITERAL
        "principal": "User:fuzz-nobody",
        "host": "*",
        "operation": 3,  # Read
        "permission_type": 3,  # Allow
    }
    filter_fields = {
        "resource_type_filter": 2,
        "resource_name_filter": "fuzz-no-such-topic",
        "pattern_type_filter": 3,
        "principal_filter": "User:fuzz-nobody",
        "host_filter": None,
        "operation": 1,  # Any
        "permission_type": 1,  # Any
    }
    _broker_request(bootstrap, adapter.build(request_class(ApiKey.DESCRIBE_ACLS, 1), filter_fields))
    _broker_request(
        bootstrap, adapter.build(request_class(ApiKey.CREATE_ACLS, 1), {"creations": [acl]})
    )
    _broker_request(
        bootstrap,
        adapter.build(request_class(ApiKey.DELETE_ACLS, 1), {"filters": [filter_fields]}),
    )


def _delegation_token_requests(bootstrap: str) -> None:
    """CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
    DescribeDelegationToken, which kafka-delegation-tokens sends (the Python clients have no
    call for them). A PLAINTEXT listener refuses them all (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
    so replaying them hands out nothing. kio cannot read the refusals' -1 timestamps: their
    answers are left undecoded."""
    hmac = b"fuzz-no-such-token"
    requests: list[tuple[ApiKey, int, dict[str, Any]]] = [
        (
            ApiKey.CREATE_DELEGATION_TOKEN,
            3,
            {
                "owner_principal_type": None,
                "owner_principal_name": None,
                "renewers": [{"principal_type": "User", "principal_name": "fuzz-nobody"}],
                "max_lifetime": -1,
            },
        ),
        (ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": hmac, "renew_period": -1}),
        (ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": hmac, "expiry_time_period": -1}),
        (
            ApiKey.DESCRIBE_DELEGATION_TOKEN,
            3,
            {"owners": [{"principal_type": "User", "principal_name": "fuzz-nobody"}]},
        ),
    ]
    for api_key, version, fields in requests:
        _undecoded_broker_request(bootstrap, adapter.build(request_class(api_key, version), fields))


def _client_quota_requests(bootstrap: str) -> None:
    """DescribeClientQuotas and AlterClientQuotas, which kafka-configs sends for quotas (the
    Python clients have no call for them). The alteration only validates, for a user nobody
    logs in as, at a rate nobody reaches: a replay, or a mutant that flips validate_only,
    throttles no client of the run."""
    component = {"entity_type": "user", "match_type": 0, "match": "fuzz-nobody"}
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1),
            {"components": [component], "strict": False},
        ),
    )
    entry = {
        "entity": [{"entity_type": "user", "entity_name": "fuzz-nobody"}],
        "ops": [{"key": "producer_byte_rate", "value": 1e12, "remove": False}],
    }
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.ALTER_CLIENT_QUOTAS, 1),
            {"entries": [entry], "validate_only": True},
        ),
    )


def _consumer_group_protocol_requests(bootstrap: str) -> None:
    """ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) as a consumer joining with
    group.protocol=consumer and an admin describing its group send them (librdkafka sends
    neither to a broker advertising only ConsumerGroupHeartbeat v0, as Kafka 3.9 in ZooKeeper
    mode does). Such a broker refuses both (UNSUPPORTED_VERSION), so they change nothing; kio
    cannot read the heartbeat's answer (a nullable struct): it is left undecoded."""
    group = f"{RECORD_PREFIX}group-kip848"
    heartbeat = {
        "group_id": group,
        "member_id": str(uuid.uuid4()),
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30_000,
        "subscribed_topic_names": ["fuzz-no-such-topic"],
        "server_assignor": None,
        "topic_partitions": [],
    }
    _undecoded_broker_request(
        bootstrap,
        adapter.build(request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0), heartbeat),
    )
    _broker_request(
        bootstrap,
        adapter.build(
            request_class(ApiKey.CONSUMER_GROUP_DESCRIBE, 0),
            {"group_ids": [group], "include_authorized_operations": False},
        ),
    )


def _kafka_python_cluster_admin(bootstrap: str) -> None:
    """DescribeCluster, and an UpdateFeatures upgrade the controller refuses (a ZooKeeper-mode
    broker supports no feature: INVALID_REQUEST), so nothing is finalized."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-rec-kafka-python")
    try:
        admin.describe_cluster()
        admin.update_features({"fuzz.no.such.feature": 1}, validate_only=True)
    finally:
        admin.close()


def _broker_request(bootstrap: str, request: Any) -> None:
    host, _, port = bootstrap.split(",")[0].rpartition(":")

    async def send() -> None:
        async with BrokerClient(host, int(port), client_id="fuzz-rec-broker") as client:
            await client.send(request)

    asyncio.run(asyncio.wait_for(send(), CLIENT_TIMEOUT_S))


def _undecoded_broker_request(bootstrap: str, request: Any) -> None:
    """`request` sent (header v1, or v2 when flexible), then its answer read as a frame but
    not decoded; raises if the broker closes the connection instead."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    cls = type(request)
    header = _REQUEST_HEADER.pack(cls.__api_key__, cls.__version__, 1, len(UNDECODED_CLIENT_ID))
    header += UNDECODED_CLIENT_ID + (b"\0" if cls.__flexible__ else b"")
    payload = header + adapter.encode(request)
    with socket.create_connection((host, int(port)), timeout=CLIENT_TIMEOUT_S) as connection:
        connection.sendall(_FRAME_SIZE.pack(len(payload)) + payload)
        with connection.makefile("rb") as answers:
            size = answers.read(_FRAME_SIZE.size)
            if len(size) < _FRAME_SIZE.size:
                raise ConnectionError("the broker closed the connection without answering")
            (answer_bytes,) = _FRAME_SIZE.unpack(size)
            if len(answers.read(answer_bytes)) < answer_bytes:
                raise ConnectionError("the broker closed the connection mid-answer")


def kafka_python_steps(bootstrap: str, topics: Topics) -> list[Step]:
    topic = topics.kafka_python
    return [
        ("kafka-python admin", lambda: _kafka_python_admin(bootstrap, topics)),
        ("kafka-python produce", lambda: _kafka_python_produce(bootstrap, topic)),
        ("kafka-python consume", lambda: _kafka_python_consume(bootstrap, topic)),
        ("kafka-python validate", lambda: _kafka_python_validate_position(bootstrap, topic)),
        ("kafka-python commit", lambda: _kafka_python_commit(bootstrap, topic)),
        ("broker ControlledShutdown", lambda: _controlled_shutdown_request(bootstrap)),
        ("broker WriteTxnMarkers", lambda: _write_txn_markers_request(bootstrap)),
        ("controller requests", lambda: _controller_requests(bootstrap)),
        ("controller-bound requests", lambda: _controller_bound_requests(bootstrap)),
        ("transaction admin", lambda: _transaction_admin_requests(bootstrap)),
        ("security requests", lambda: _security_requests(bootstrap)),
        ("ACL requests", lambda: _acl_requests(bootstrap)),
        ("delegation token requests", lambda: _delegation_token_requests(bootstrap)),
        ("client quota requests", lambda: _client_quota_requests(bootstrap)),
        ("consumer group protocol", lambda: _consumer_group_protocol_requests(bootstrap)),
        ("kafka-python cluster admin", lambda: _kafka_python_cluster_admin(bootstrap)),
        ("kafka-python records admin", lambda: _kafka_python_records_admin(bootstrap, topic)),
        ("kafka-python partitions admin", lambda: _kafka_python_partitions_admin(bootstrap, topic)),
    ]


# ---- confluent-kafka ----------------------------------------------------------------------


def _wait_all(futures: Mapping[Any, Future[Any]]) -> None:
    for future in futures.values():
        future.result(timeout=CLIENT_TIMEOUT_S)


def _confluent_admin_create(bootstrap: str, topics: Topics) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(topics.confluent, 1, 1), NewTopic(topics.confluent_scratch, 1, 1)]
    _wait_all(admin.create_topics(new))
    _wait_all(admin.describe_configs([ConfigResource("topic", topics.confluent)]))
    entry = ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", topics.confluent, incremental_configs=[entry])
    _wait_all(admin.incremental_alter_configs([resource]))


def _confluent_admin_finish(bootstrap: str, topics: Topics) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    spec = {TopicPartition(topics.confluent, 0): OffsetSpec.latest()}  # type: ignore[no-untyped-call]
    _wait_all(admin.list_offsets(spec))
    # ElectLeaders: the one replica already leads, so nothing moves (ELECTION_NOT_NEEDED).
    partition = TopicPartition(topics.confluent, 0)
    admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(timeout=CLIENT_TIMEOUT_S)
    _wait_all(admin.delete_topics([topics.confluent_scratch]))


def _confluent_produce(bootstrap: str, topic: str) -> None:
    for codec in ("lz4", "zstd"):
        producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.codec": codec}
        )
        for index in range(RECORDS_PER_PRODUCER):
            producer.produce(topic, f"confluent {codec} {index}".encode())
        if producer.flush(CLIENT_TIMEOUT_S):
            raise RuntimeError(f"{codec} producer left records unacknowledged")


def _confluent_transactions(bootstrap: str, topic: str) -> None:
    """A committed transaction with a consumer group's offsets and an aborted one:
    FindCoordinator for a transactional id, InitProducerId, AddPartitionsToTxn,
    AddOffsetsToTxn, TxnOffsetCommit and EndTxn."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fuzz-rec-txn"})
    producer.init_transactions(CLIENT_TIMEOUT_S)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-rec-txn-group"})
    try:
        for commit in (True, False):
            producer.begin_transaction()
            for index in range(RECORDS_PER_PRODUCER):
                producer.produce(topic, f"confluent transactional {commit} {index}".encode())
            producer.send_offsets_to_transaction(
                [TopicPartition(topic, 0, 1)],
                consumer.consumer_group_metadata(),
                CLIENT_TIMEOUT_S,
            )
            if commit:
                producer.commit_transaction(CLIENT_TIMEOUT_S)
            else:
                producer.abort_transaction(CLIENT_TIMEOUT_S)
    finally:
        consumer.close()


def _confluent_consume(bootstrap: str, topic: str) -> None:
    # No auto commit: with no coordinator, a final commit would hold close() for ~45 s.
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "fuzz-rec-assign",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        consumer.consume(num_messages=100, timeout=3.0)
    finally:
        consumer.close()


def _confluent_group(bootstrap: str, topic: str) -> None:
    """A group member: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": CONFLUENT_GROUP,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        heartbeats_until = time.monotonic() + GROUP_HEARTBEAT_S
        while time.monotonic() < heartbeats_until:
            consumer.poll(0.2)
    finally:
        consumer.close()


def _confluent_group_admin(bootstrap: str) -> None:
    """ListGroups, DescribeGroups and DeleteGroups of the (now empty) group."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_consumer_groups().result(timeout=CLIENT_TIMEOUT_S)
    _wait_all(admin.describe_consumer_groups([CONFLUENT_GROUP]))
    _wait_all(admin.delete_consumer_groups([CONFLUENT_GROUP]))


def confluent_steps(bootstrap: str, topics: Topics) -> list[Step]:
    return [
        ("confluent admin", lambda: _confluent_admin_create(bootstrap, topics)),
        ("confluent produce", lambda: _confluent_produce(bootstrap, topics.confluent)),
        ("confluent consume", lambda: _confluent_consume(bootstrap, topics.confluent)),
        ("confluent transactions", lambda: _confluent_transactions(bootstrap, topics.confluent)),
        ("confluent group", lambda: _confluent_group(bootstrap, topics.confluent)),
        ("confluent group admin", lambda: _confluent_group_admin(bootstrap)),
        ("confluent admin finish", lambda: _confluent_admin_finish(bootstrap, topics)),
    ]


# ---- kcat ---------------------------------------------------------------------------------


def _kcat(bootstrap: str, *args: str, stdin: str = "") -> None:
    result = subprocess.run(
        ["kcat", "-b", bootstrap, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=KCAT_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"kcat {' '.join(args)} exited {result.returncode}: {result.stderr}")


def kcat_steps(bootstrap: str, topic: str) -> list[Step]:
    if shutil.which("kcat") is None:
        return [("kcat", _missing_kcat)]
    an_hour_ago_ms = int(time.time() * 1000) - 3_600_000
    return [
        ("kcat -L", lambda: _kcat(bootstrap, "-L")),
        ("kcat -P", lambda: _kcat(bootstrap, "-P", "-t", topic, stdin="kcat 1\nkcat 2\n")),
        ("kcat -C", lambda: _kcat(bootstrap, "-C", "-t", topic, "-o", "beginning", "-e")),
        ("kcat -Q", lambda: _kcat(bootstrap, "-Q", "-t", f"{topic}:0:{an_hour_ago_ms}")),
    ]


def _missing_kcat() -> None:
    raise RuntimeError("kcat is not installed (apt-get install kcat)")


def run_steps(steps: list[Step]) -> list[str]:
    """Run every step; the failures, one line each."""
    failures = []
    for name, step in steps:
        try:
            step()
        except Exception as error:  # any client failure: report it and go on recording
            failures.append(f"{name}: {error!r}")
    return failures
