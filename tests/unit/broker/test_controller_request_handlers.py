"""The LeaderAndIsr, StopReplica and UpdateMetadata handlers on a real ReplicaManager and its
logs: a Kafka controller's states go through the path the partition state znodes take, the
newer of the two sources wins whichever arrives first, whole requests are fenced by controller
and broker epoch, and StopReplica stops or deletes replicas (Kafka 3.9's answers)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.cluster.replica_reconciler import ReplicaReconciler
from broker.handlers import authorization, leader_and_isr, stop_replica, update_metadata
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.controller_apis import EPOCH_DURING_DELETE, UNKNOWN_BROKER_EPOCH
from broker.protocol.header import RequestHeader
from broker.protocol.registry import request_class
from broker.replication.replica_manager import ReplicaManager
from broker.security.acl import Operation, ResourceType
from tests.unit.broker.test_authorization_rules import FakeAuthorizer, _bindings
from tests.unit.replication.hosting import prepare_now
from zk.cluster_watch import ClusterView
from zk.znodes import PartitionState, TopicAssignment, kafka_string_to_uuid

ME = 2
TOPIC = "t"
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
OTHER_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAg"
BROKER_EPOCH = 1000
CONTROLLER_EPOCH = 3


def _manager(tmp_path: Path) -> ReplicaManager:
    logs = LogManager([tmp_path], LogConfig())
    logs.load_logs()
    manager = ReplicaManager(ME, logs, lambda _t, _p: True, lambda _t: 1)
    manager.controller_fence.broker_epoch = BROKER_EPOCH
    return manager


def _hosted(tmp_path: Path, leader: int = 1, epoch: int = 1, zk_version: int = 0) -> ReplicaManager:
    """Partition t-0 on replicas [1, 2, 3], as the znode watch applied it."""
    manager = _manager(tmp_path)
    asyncio.run(manager.ensure_topic_id(TOPIC, TOPIC_ID))
    prepare_now(manager, TOPIC, TOPIC_ID, [0])
    _watch(manager, leader, epoch, zk_version)
    return manager


def _watch(manager: ReplicaManager, leader: int, epoch: int, zk_version: int) -> None:
    state = PartitionState(leader=leader, leader_epoch=epoch, isr=[1, 2, 3], controller_epoch=1)
    manager.apply_state(TOPIC, TOPIC_ID, 0, [1, 2, 3], state, LogConfig(), zk_version)


def _context(manager: ReplicaManager, api_key: ApiKey, version: int) -> RequestContext:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=7, client_id="c")
    services = SimpleNamespace(replica_manager=manager, broker_id=ME, authorizer=None)
    return RequestContext(header, "127.0.0.1", "PLAINTEXT", services)  # type: ignore[arg-type]


def _partition_state(
    leader: int, epoch: int, zk_version: int, replicas: list[int]
) -> dict[str, Any]:
    return {
        "topic_name": TOPIC,
        "partition_index": 0,
        "controller_epoch": CONTROLLER_EPOCH,
        "leader": leader,
        "leader_epoch": epoch,
        "isr": replicas,
        "partition_epoch": zk_version,
        "replicas": replicas,
    }


def _leader_and_isr(
    version: int,
    leader: int,
    epoch: int,
    zk_version: int = 0,
    replicas: list[int] | None = None,
    controller_epoch: int = CONTROLLER_EPOCH,
    broker_epoch: int = BROKER_EPOCH,
    topic_id: str = TOPIC_ID,
) -> Any:
    state = _partition_state(leader, epoch, zk_version, replicas or [1, 2, 3])
    fields = {
        "controller_id": 1,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "type": 0,
        "ungrouped_partition_states": [state],
        "topic_states": [
            {
                "topic_name": TOPIC,
                "topic_id": kafka_string_to_uuid(topic_id),
                "partition_states": [state],
            }
        ],
        "live_leaders": [{"broker_id": 1, "host_name": "127.0.0.1", "port": 9092}],
    }
    return adapter.build(request_class(ApiKey.LEADER_AND_ISR, version), fields)


def _send_leader_and_isr(manager: ReplicaManager, version: int, request: Any) -> Any:
    context = _context(manager, ApiKey.LEADER_AND_ISR, version)
    return asyncio.run(leader_and_isr.handle(context, request))


def _partition_errors(response: Any) -> list[ErrorCode]:
    if hasattr(response, "topics"):
        return [p.error_code for t in response.topics for p in t.partition_errors]
    return [p.error_code for p in response.partition_errors]


def _stop_replica(
    version: int,
    delete: bool,
    leader_epoch: int = -1,
    controller_epoch: int = CONTROLLER_EPOCH,
    broker_epoch: int = BROKER_EPOCH,
) -> Any:
    fields = {
        "controller_id": 1,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "delete_partitions": delete,
        "ungrouped_partitions": [{"topic_name": TOPIC, "partition_index": 0}],
        "topics": [{"name": TOPIC, "partition_indexes": [0]}],
        "topic_states": [
            {
                "topic_name": TOPIC,
                "partition_states": [
                    {"partition_index": 0, "leader_epoch": leader_epoch, "delete_partition": delete}
                ],
            }
        ],
    }
    return adapter.build(request_class(ApiKey.STOP_REPLICA, version), fields)


def _send_stop_replica(manager: ReplicaManager, version: int, request: Any) -> Any:
    context = _context(manager, ApiKey.STOP_REPLICA, version)
    return asyncio.run(stop_replica.handle(context, request))


def _update_metadata(
    version: int, controller_epoch: int = CONTROLLER_EPOCH, broker_epoch: int = BROKER_EPOCH
) -> Any:
    fields = {
        "controller_id": 1,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "ungrouped_partition_states": [],
        "topic_states": [],
        "live_brokers": [
            {
                "id": 1,
                "v0_host": "127.0.0.1",
                "v0_port": 9092,
                "endpoints": [
                    {
                        "port": 9092,
                        "host": "127.0.0.1",
                        "listener": "PLAINTEXT",
                        "security_protocol": 0,
                    }
                ],
                "rack": None,
            }
        ],
    }
    return adapter.build(request_class(ApiKey.UPDATE_METADATA, version), fields)


def _send_update_metadata(manager: ReplicaManager, version: int, request: Any) -> Any:
    context = _context(manager, ApiKey.UPDATE_METADATA, version)
    return asyncio.run(update_metadata.handle(context, request))


# -- LeaderAndIsr ---------------------------------------------------------------------------


def test_a_newer_leader_and_isr_moves_the_replica_through_the_become_follower_path(
    tmp_path: Path,
) -> None:
    manager = _hosted(tmp_path, leader=ME, epoch=1)
    response = _send_leader_and_isr(manager, 7, _leader_and_isr(7, leader=3, epoch=2, zk_version=1))
    assert response.error_code == ErrorCode.none
    assert [t.topic_id for t in response.topics] == [kafka_string_to_uuid(TOPIC_ID)]
    assert _partition_errors(response) == [ErrorCode.none]
    partition = manager.get(TOPIC, 0)
    assert partition is not None and not partition.is_leader
    assert (partition.leader_id, partition.leader_epoch, partition.zk_version) == (3, 2, 1)


def test_a_leader_and_isr_older_than_the_watched_znode_is_stale_and_not_applied(
    tmp_path: Path,
) -> None:
    manager = _hosted(tmp_path, leader=ME, epoch=5, zk_version=9)
    response = _send_leader_and_isr(manager, 7, _leader_and_isr(7, leader=3, epoch=4, zk_version=8))
    assert response.error_code == ErrorCode.none
    assert _partition_errors(response) == [ErrorCode.stale_controller_epoch]
    partition = manager.get(TOPIC, 0)
    assert partition is not None and partition.is_leader and partition.leader_epoch == 5


def test_the_state_the_watch_applied_first_is_answered_none(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=ME, epoch=5, zk_version=9)
    response = _send_leader_and_isr(
        manager, 7, _leader_and_isr(7, leader=ME, epoch=5, zk_version=9)
    )
    assert _partition_errors(response) == [ErrorCode.none]
    partition = manager.get(TOPIC, 0)
    assert partition is not None and partition.is_leader and partition.leader_epoch == 5


def test_a_watch_read_older_than_an_applied_request_does_not_override_it(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    _send_leader_and_isr(manager, 7, _leader_and_isr(7, leader=ME, epoch=3, zk_version=2))
    _watch(manager, leader=1, epoch=2, zk_version=1)  # a lagging read of the znode
    partition = manager.get(TOPIC, 0)
    assert partition is not None and partition.is_leader and partition.leader_epoch == 3


def test_a_stale_controller_epoch_refuses_the_whole_request(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    assert _send_update_metadata(
        manager, 8, _update_metadata(8, controller_epoch=5)
    ).error_code == (ErrorCode.none)
    request = _leader_and_isr(7, leader=ME, epoch=2, controller_epoch=4)
    response = _send_leader_and_isr(manager, 7, request)
    assert response.error_code == ErrorCode.stale_controller_epoch
    assert _partition_errors(response) == [ErrorCode.stale_controller_epoch]
    partition = manager.get(TOPIC, 0)
    assert partition is not None and partition.leader_epoch == 1


def test_a_broker_epoch_from_an_earlier_registration_refuses_the_whole_request(
    tmp_path: Path,
) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    request = _leader_and_isr(7, leader=ME, epoch=2, broker_epoch=BROKER_EPOCH - 1)
    response = _send_leader_and_isr(manager, 7, request)
    assert response.error_code == ErrorCode.stale_broker_epoch
    assert _partition_errors(response) == [ErrorCode.stale_broker_epoch]
    # Refused before the controller epoch was looked at: a later request may still use it.
    assert manager.controller_fence.controller_epoch == 0


def test_a_version_without_broker_epoch_is_not_fenced_by_it(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    response = _send_leader_and_isr(manager, 1, _leader_and_isr(1, leader=ME, epoch=2))
    assert response.error_code == ErrorCode.none
    assert [(p.topic_name, p.error_code) for p in response.partition_errors] == [
        (TOPIC, ErrorCode.none)
    ]
    partition = manager.get(TOPIC, 0)
    assert partition is not None and partition.is_leader and partition.leader_epoch == 2


def test_a_partition_this_broker_is_not_a_replica_of_is_unknown(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    request = _leader_and_isr(7, leader=1, epoch=2, replicas=[1, 3])
    assert _partition_errors(_send_leader_and_isr(manager, 7, request)) == [
        ErrorCode.unknown_topic_or_partition
    ]
    assert manager.get(TOPIC, 0) is not None  # left to the znode watch's reassignment path


def test_another_topic_id_is_inconsistent(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    request = _leader_and_isr(7, leader=ME, epoch=2, topic_id=OTHER_TOPIC_ID)
    assert _partition_errors(_send_leader_and_isr(manager, 7, request)) == [
        ErrorCode.inconsistent_topic_id
    ]


def test_a_partition_whose_log_is_not_open_yet_is_left_to_the_watch(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    response = _send_leader_and_isr(manager, 7, _leader_and_isr(7, leader=ME, epoch=0))
    assert _partition_errors(response) == [ErrorCode.none]
    assert manager.get(TOPIC, 0) is None


# -- StopReplica ----------------------------------------------------------------------------


def test_stop_replica_without_delete_keeps_the_replica_and_its_log(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    response = _send_stop_replica(manager, 4, _stop_replica(4, delete=False, leader_epoch=1))
    assert response.error_code == ErrorCode.none
    assert [(p.topic_name, p.partition_index, p.error_code) for p in response.partition_errors] == [
        (TOPIC, 0, ErrorCode.none)
    ]
    assert manager.get(TOPIC, 0) is not None
    assert (tmp_path / f"{TOPIC}-0").exists()


def test_stop_replica_with_delete_removes_the_replica_and_its_log(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    request = _stop_replica(4, delete=True, leader_epoch=EPOCH_DURING_DELETE)
    response = _send_stop_replica(manager, 4, request)
    assert [p.error_code for p in response.partition_errors] == [ErrorCode.none]
    assert manager.get(TOPIC, 0) is None
    assert not (tmp_path / f"{TOPIC}-0").exists()


def test_stop_replica_with_an_older_leader_epoch_is_fenced(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=5)
    response = _send_stop_replica(manager, 4, _stop_replica(4, delete=True, leader_epoch=4))
    assert [p.error_code for p in response.partition_errors] == [ErrorCode.fenced_leader_epoch]
    assert (tmp_path / f"{TOPIC}-0").exists()


def test_stop_replica_v0_deletes_without_an_epoch_check(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=5)
    response = _send_stop_replica(manager, 0, _stop_replica(0, delete=True))
    assert [p.error_code for p in response.partition_errors] == [ErrorCode.none]
    assert not (tmp_path / f"{TOPIC}-0").exists()


def test_stale_stop_replica_lists_no_partitions_as_kafka_answers(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    stale_broker = _stop_replica(4, delete=True, broker_epoch=BROKER_EPOCH - 1)
    response = _send_stop_replica(manager, 4, stale_broker)
    assert (response.error_code, response.partition_errors) == (ErrorCode.stale_broker_epoch, ())
    _send_update_metadata(manager, 8, _update_metadata(8, controller_epoch=5))
    stale_controller = _stop_replica(4, delete=True, controller_epoch=4)
    response = _send_stop_replica(manager, 4, stale_controller)
    assert (response.error_code, response.partition_errors) == (
        ErrorCode.stale_controller_epoch,
        (),
    )
    assert (tmp_path / f"{TOPIC}-0").exists()


# -- UpdateMetadata -------------------------------------------------------------------------


def test_update_metadata_is_answered_at_every_version(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    for version in range(9):
        response = _send_update_metadata(manager, version, _update_metadata(version))
        assert response.error_code == ErrorCode.none, version


def test_update_metadata_is_fenced_by_both_epochs(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    stale_broker = _update_metadata(8, broker_epoch=BROKER_EPOCH - 1)
    assert _send_update_metadata(manager, 8, stale_broker).error_code == (
        ErrorCode.stale_broker_epoch
    )
    assert _send_update_metadata(
        manager, 8, _update_metadata(8, controller_epoch=6)
    ).error_code == (ErrorCode.none)
    assert _send_update_metadata(
        manager, 8, _update_metadata(8, controller_epoch=5)
    ).error_code == (ErrorCode.stale_controller_epoch)
    unknown = _update_metadata(4, controller_epoch=6, broker_epoch=UNKNOWN_BROKER_EPOCH)
    assert _send_update_metadata(manager, 4, unknown).error_code == ErrorCode.none


# -- authorization --------------------------------------------------------------------------


def _authorized_context(version: int, api_key: ApiKey, *acls: Any) -> Any:
    services = SimpleNamespace(authorizer=FakeAuthorizer(_bindings(*acls)))
    header = SimpleNamespace(api_key=api_key, api_version=version)
    return SimpleNamespace(
        header=header,
        api_version=version,
        services=services,
        principal="User:alice",
        client_host="127.0.0.1",
    )


def test_controller_requests_need_cluster_action() -> None:
    request = _leader_and_isr(7, leader=ME, epoch=2)
    allowed = _authorized_context(
        7, ApiKey.LEADER_AND_ISR, (ResourceType.CLUSTER, "kafka-cluster", Operation.CLUSTER_ACTION)
    )
    assert authorization.check(allowed, ApiKey.LEADER_AND_ISR, request) is None
    refused = authorization.check(
        _authorized_context(7, ApiKey.LEADER_AND_ISR), ApiKey.LEADER_AND_ISR, request
    )
    assert isinstance(refused, authorization.Answered)
    assert refused.response.error_code == ErrorCode.cluster_authorization_failed
    assert _partition_errors(refused.response) == [ErrorCode.cluster_authorization_failed]
    for api_key, version, other in (
        (ApiKey.STOP_REPLICA, 4, _stop_replica(4, delete=True)),
        (ApiKey.UPDATE_METADATA, 8, _update_metadata(8)),
    ):
        answer = authorization.check(_authorized_context(version, api_key), api_key, other)
        assert isinstance(answer, authorization.Answered)
        assert answer.response.error_code == ErrorCode.cluster_authorization_failed


def test_topic_ids_in_requests_are_read_as_kafka_strings_and_zero_as_none() -> None:
    request = _leader_and_isr(7, leader=ME, epoch=2)
    assert [s.topic_id for s in leader_and_isr.requested_states(request)] == [TOPIC_ID]
    zero = adapter.build(
        request_class(ApiKey.LEADER_AND_ISR, 7),
        {
            "controller_id": 1,
            "controller_epoch": 1,
            "type": 0,
            "topic_states": [
                {
                    "topic_name": TOPIC,
                    "topic_id": uuid.UUID(int=0),
                    "partition_states": [_partition_state(ME, 2, 0, [1, 2, 3])],
                }
            ],
            "live_leaders": [],
        },
    )
    assert [s.topic_id for s in leader_and_isr.requested_states(zero)] == [None]


# -- A topic being deleted stays deleted here ------------------------------------------------


class _Watch:
    def __init__(self, topic_id: str) -> None:
        self.view = ClusterView()
        self.view.topics[TOPIC] = TopicAssignment(topic_id, {0: [1, ME]})
        # The deletion's first step: the partition offline, its state znode still there.
        self.view.partition_states[(TOPIC, 0)] = (PartitionState(-1, 2, [ME], CONTROLLER_EPOCH), 2)


class _TopicConfigs:
    async def get(self, _topic: str, _topic_id: str) -> dict[str, str]:
        return {}

    def forget(self, _topic: str) -> None:
        pass


class _Changes:
    def signal(self) -> None:
        pass


def _reconciler(manager: ReplicaManager, watch: _Watch) -> ReplicaReconciler:
    return ReplicaReconciler(
        ME,
        watch,  # type: ignore[arg-type]
        _TopicConfigs(),  # type: ignore[arg-type]
        manager,
        manager._log_manager,
        _Changes(),
        LogConfig,
    )


def test_the_watch_does_not_reopen_a_topic_that_stop_replica_deleted_for_its_deletion(
    tmp_path: Path,
) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    request = _stop_replica(4, delete=True, leader_epoch=EPOCH_DURING_DELETE)
    _send_stop_replica(manager, 4, request)
    assert manager.deleting_topics == {TOPIC: TOPIC_ID}
    asyncio.run(_reconciler(manager, _Watch(TOPIC_ID)).reconcile())
    assert manager.get(TOPIC, 0) is None
    assert not (tmp_path / f"{TOPIC}-0").exists()


def test_the_watch_opens_a_topic_re_created_under_a_new_id_after_its_deletion(
    tmp_path: Path,
) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    request = _stop_replica(4, delete=True, leader_epoch=EPOCH_DURING_DELETE)
    _send_stop_replica(manager, 4, request)
    asyncio.run(_reconciler(manager, _Watch(OTHER_TOPIC_ID)).reconcile())
    assert manager.deleting_topics == {}
    assert (tmp_path / f"{TOPIC}-0").exists()


def test_stop_replica_for_a_reassignment_is_not_a_topic_deletion(tmp_path: Path) -> None:
    manager = _hosted(tmp_path, leader=1, epoch=1)
    _send_stop_replica(manager, 4, _stop_replica(4, delete=True, leader_epoch=1))
    assert manager.deleting_topics == {}
