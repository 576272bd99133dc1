"""What the broker's parts use of the broker, as typed interfaces (DESIGN review item 3).

Request handlers, the connection layer, the coordinators and the metrics name what they need
through these protocols instead of importing KafkaServer, which satisfies them structurally.
So a handler can be unit-tested with fakes, a reader sees each part's dependencies here, and no
module but broker/__main__.py imports broker.server (tests/unit/test_layering.py checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from broker.cluster.metadata_propagation import Peers

if TYPE_CHECKING:
    from broker.cluster.metadata_cache import MetadataCache
    from broker.config.dynamic import DynamicBrokerConfig
    from broker.config.kafka_config import KafkaConfig
    from broker.config.topic_overrides import TopicConfigs
    from broker.coordinator.group.coordinator import GroupCoordinator
    from broker.coordinator.transaction.coordinator import TransactionCoordinator
    from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
    from broker.log.manager import LogManager
    from broker.metrics.prometheus import BrokerCounters
    from broker.network.sasl import ListenerSasl
    from broker.protocol.registry import Registry
    from broker.replication.alter_log_dirs import ReplicaAlterLogDirs
    from broker.replication.fetch_session import FetchSessionCache
    from broker.replication.replica_manager import ReplicaManager
    from broker.security.authorizer import AclAuthorizer
    from broker.security.credentials import ScramCredentials
    from controller.config import ControllerConfig
    from controller.controller import Controller
    from zk.client import ZkClient
    from zk.kafka_zk import KafkaZk


class InternalTopicServices(Protocol):
    """What finding and creating __consumer_offsets and __transaction_state use."""

    metadata_cache: MetadataCache
    kafka_zk: KafkaZk
    controller_config: ControllerConfig


class CoordinatorServices(InternalTopicServices, Protocol):
    """What the group and transaction coordinators use: their partitions' logs and leaders."""

    config: KafkaConfig
    broker_id: int
    replica_manager: ReplicaManager

    def topic_config_int(self, topic: str, name: str) -> int: ...


class MarkerSenderServices(Peers, Protocol):
    """What the transaction marker sender uses to reach partition leaders."""

    config: KafkaConfig
    broker_id: int
    metadata_cache: MetadataCache


class TransactionServices(CoordinatorServices, MarkerSenderServices, Protocol):
    producer_ids: ProducerIdManager


class MetricsServices(Protocol):
    """What the Prometheus collectors read."""

    metrics: BrokerCounters
    zk_client: ZkClient
    controller: Controller
    replica_manager: ReplicaManager
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator


class HandlerServices(TransactionServices, Protocol):
    """What request handlers, and the helpers they call, use of the broker."""

    cluster_id: str
    registry: Registry
    metrics: BrokerCounters
    authorizer: AclAuthorizer | None
    scram_credentials: ScramCredentials
    log_manager: LogManager
    log_dir_mover: ReplicaAlterLogDirs
    fetch_sessions: FetchSessionCache
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator
    controller: Controller
    zk_client: ZkClient
    dynamic_config: DynamicBrokerConfig
    topic_configs: TopicConfigs

    async def wait_for_metadata(self, condition: Callable[[], bool], timeout_s: float) -> bool: ...


class NetworkServices(HandlerServices, Protocol):
    """What listeners and connections use besides what they hand the handlers."""

    sasl_listeners: dict[str, ListenerSasl]
