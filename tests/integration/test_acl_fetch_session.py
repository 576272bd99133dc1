"""Removing a consumer's Read ACL stops its incremental fetch session too (as Kafka's
handleFetchRequest checks every partition of the session): an incremental Fetch names none of
its partitions, yet once the ACL is gone the session's partition answers
TOPIC_AUTHORIZATION_FAILED. Both ways the broker serves a session: reading what changed
(min_bytes 1) and reading everything as a delayed fetch (larger min_bytes)."""

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
from tests.integration.conftest import ClusterHandle
from tests.integration.tool_cli import add_scram_user, ok, run_cluster_tool

TIMEOUT_S = 30
PROPAGATION_S = 20  # an ACL change reaches every broker within seconds, on a loaded machine
ADMIN = ("admin", "admin-secret")
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
FETCH_VERSION = 12  # topics by name


@pytest.fixture(scope="module")
def cluster(make_cluster_module: Any) -> ClusterHandle:
    handle: ClusterHandle = make_cluster_module(
        security="sasl_ssl", overrides={"authorizer.class.name": AUTHORIZER}
    )
    return handle


def _client_config(cluster: ClusterHandle) -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(cluster.dir / "tls" / "ca.pem"),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": ADMIN[0],
        "sasl.password": ADMIN[1],
    }


def _topic_with_a_record(cluster: ClusterHandle) -> tuple[str, int]:
    """A new topic of one partition holding one record, and its leader."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"acl-session-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_client_config(cluster))
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(TIMEOUT_S)
    producer = Producer(_client_config(cluster))
    producer.produce(topic, b"v")
    assert producer.flush(TIMEOUT_S) == 0, "the record was not delivered"
    leader = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions[0].leader
    return topic, int(leader)


def _fetch(topic: str, session_id: int, epoch: int, min_bytes: int, named: bool) -> Any:
    partitions = [
        {
            "partition": 0,
            "current_leader_epoch": -1,
            "fetch_offset": 0,
            "log_start_offset": -1,
            "partition_max_bytes": 1_000_000,
        }
    ]
    return adapter.build(
        request_class(ApiKey.FETCH, FETCH_VERSION),
        {
            "replica_id": -1,
            "max_wait": 100,
            "min_bytes": min_bytes,
            "max_bytes": 1_000_000,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [{"topic": topic, "partitions": partitions}] if named else [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


class Session:
    """One user's connection to one broker, over SASL_SSL, and its fetch session."""

    def __init__(self, cluster: ClusterHandle, broker_id: int, user: tuple[str, str]) -> None:
        self._client = BrokerClient(
            "127.0.0.1",
            cluster.broker_port(broker_id),
            "test-acl-fetch-session",
            ssl_context=ssl.create_default_context(cafile=str(cluster.dir / "tls" / "ca.pem")),
            sasl=SaslClientConfig("SCRAM-SHA-512", *user),
        )
        self.session_id = 0
        self.epoch = -1  # no session

    async def fetch(self, topic: str, min_bytes: int, open_session: bool = False) -> Any:
        """The partition a fetch answers (None if none): without a session, or asking for
        one (`open_session`), or incremental (naming nothing) once one is open."""
        if open_session:
            self.session_id, self.epoch = 0, 0
        named = self.epoch <= 0
        request = _fetch(topic, self.session_id, self.epoch, min_bytes, named)
        response = await self._client.send(request)
        assert response.error_code == ErrorCode.none, response
        if open_session:
            assert response.session_id != 0, "the broker gave no fetch session"
            self.session_id = int(response.session_id)
        if self.epoch >= 0:
            self.epoch += 1
        partitions = [p for t in response.responses for p in t.partitions]
        return partitions[0] if partitions else None

    async def __aenter__(self) -> Session:
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.__aexit__(*exc)


async def _until(answer: Any, wanted: ErrorCode, what: str) -> Any:
    """Fetches until one answers `wanted`, bounded by PROPAGATION_S."""
    seen: list[Any] = []
    deadline = asyncio.get_running_loop().time() + PROPAGATION_S
    while True:
        seen.append(await answer())
        if seen[-1] is not None and seen[-1].error_code == wanted:
            return seen[-1]
        assert asyncio.get_running_loop().time() < deadline, f"{what}; last {seen[-3:]}"


@pytest.mark.parametrize("min_bytes", [1, 1_000_000], ids=["changed-only", "delayed-fetch"])
def test_a_removed_read_acl_stops_an_incremental_fetch_session(
    cluster: ClusterHandle, min_bytes: int
) -> None:
    user = add_scram_user(cluster, f"bob-{uuid.uuid4().hex[:6]}")
    topic, leader = _topic_with_a_record(cluster)
    acl = ("--allow-principal", f"User:{user[0]}", "--operation", "Read", "--topic", topic)
    ok(run_cluster_tool(cluster, "kafka-acls", "--add", *acl))

    async def scenario() -> None:
        async with Session(cluster, leader, user) as session:
            await _until(
                lambda: session.fetch(topic, min_bytes),
                ErrorCode.none,
                f"broker {leader} never let {user[0]} read {topic}",
            )
            opened = await session.fetch(topic, min_bytes, open_session=True)
            assert opened is not None and opened.error_code == ErrorCode.none, opened
            assert opened.records, "the session's full fetch read no record"
            # The record is answered again on each incremental fetch: its position never moves.
            again = await session.fetch(topic, min_bytes)
            assert again is not None and again.error_code == ErrorCode.none, again
            ok(run_cluster_tool(cluster, "kafka-acls", "--remove", "--force", *acl))
            await _until(
                lambda: session.fetch(topic, min_bytes),
                ErrorCode.topic_authorization_failed,
                f"the session still reads {topic} after its ACL was removed",
            )

    asyncio.run(scenario())
