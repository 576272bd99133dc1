"""Authorized operations (KIP-430) through confluent-kafka's admin client on a SASL cluster
with the ACL authorizer: DescribeTopics and DescribeCluster (Metadata v8+ with the include
flags) and DescribeConsumerGroups (DescribeGroups v3+) answer the operations the principal may
perform, as Kafka's AuthHelper.authorizedOperations computes them: the super user every
operation the resource type supports, a user what its ACLs allow (Read implies Describe), and
on the cluster nothing to a user that may not describe it."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.integration.conftest import ClusterHandle
from tests.integration.tool_cli import add_scram_user, ok, run_cluster_tool

TIMEOUT_S = 60
REQUEST_TIMEOUT_S = 10
ADMIN = ("admin", "admin-secret")
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


@pytest.fixture(scope="module")
def cluster(make_cluster_module: Any) -> ClusterHandle:
    handle: ClusterHandle = make_cluster_module(
        brokers=1,
        security="sasl_plaintext",
        overrides={"authorizer.class.name": AUTHORIZER, "offsets.topic.replication.factor": "1"},
    )
    return handle


def _admin(cluster: ClusterHandle, user: tuple[str, str]) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": cluster.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user[0],
            "sasl.password": user[1],
        }
    )


@pytest.fixture(scope="module")
def bob(cluster: ClusterHandle) -> tuple[str, str]:
    """A SCRAM user allowed to read one topic and one group, nothing else."""
    return add_scram_user(cluster, f"bob-{uuid.uuid4().hex[:6]}")


def _operation_names(operations: Any) -> set[str]:
    return {operation.name for operation in operations or ()}


TOPIC_OPERATIONS = {
    "READ",
    "WRITE",
    "CREATE",
    "DESCRIBE",
    "DELETE",
    "ALTER",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
}
CLUSTER_OPERATIONS = {
    "CREATE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "ALTER",
    "DESCRIBE",
}


def test_topics_answer_what_the_principal_may_do(
    cluster: ClusterHandle, bob: tuple[str, str]
) -> None:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import NewTopic

    topic = f"ops-{uuid.uuid4().hex[:8]}"
    admin = _admin(cluster, ADMIN)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    grant = ("--add", "--allow-principal", f"User:{bob[0]}", "--operation", "Read")
    ok(run_cluster_tool(cluster, "kafka-acls", *grant, "--topic", topic))

    def described(user: tuple[str, str]) -> set[str]:
        client = _admin(cluster, user)  # alive until its future is done
        futures = client.describe_topics(
            TopicCollection([topic]), include_authorized_operations=True
        )
        return _operation_names(futures[topic].result(TIMEOUT_S).authorized_operations)

    assert described(ADMIN) == TOPIC_OPERATIONS
    assert described(bob) == {"READ", "DESCRIBE"}


def test_the_cluster_answers_nothing_to_a_principal_that_may_not_describe_it(
    cluster: ClusterHandle, bob: tuple[str, str]
) -> None:
    def described(user: tuple[str, str]) -> set[str]:
        client = _admin(cluster, user)
        future = client.describe_cluster(include_authorized_operations=True)
        return _operation_names(future.result(TIMEOUT_S).authorized_operations)

    assert described(ADMIN) == CLUSTER_OPERATIONS
    assert described(bob) == set()


def test_groups_answer_what_the_principal_may_do(
    cluster: ClusterHandle, bob: tuple[str, str]
) -> None:
    group = f"ops-group-{uuid.uuid4().hex[:8]}"
    grant = ("--add", "--allow-principal", f"User:{bob[0]}", "--operation", "Read")
    ok(run_cluster_tool(cluster, "kafka-acls", *grant, "--group", group))

    def described(user: tuple[str, str]) -> set[str]:
        """Asked again while the group's coordinator comes up, bounded by TIMEOUT_S: a new
        cluster's first group request creates __consumer_offsets, and until its partitions load
        the broker answers COORDINATOR_NOT_AVAILABLE (librdkafka retries FindCoordinator only
        twice, then waits for a broker state change that never comes, so the request times
        out) or COORDINATOR_LOAD_IN_PROGRESS."""
        from confluent_kafka import KafkaError, KafkaException

        client = _admin(cluster, user)
        deadline = time.monotonic() + TIMEOUT_S
        retriable = {KafkaError._TIMED_OUT, KafkaError.COORDINATOR_LOAD_IN_PROGRESS}
        while True:
            futures = client.describe_consumer_groups(
                [group], include_authorized_operations=True, request_timeout=REQUEST_TIMEOUT_S
            )
            try:
                found = futures[group].result(TIMEOUT_S)
            except KafkaException as error:
                if error.args[0].code() not in retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
                continue
            return _operation_names(found.authorized_operations)

    assert described(ADMIN) == {"READ", "DESCRIBE", "DELETE"}
    assert described(bob) == {"READ", "DESCRIBE"}
