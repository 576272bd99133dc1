"""The collaborators the broker's parts are handed, as concrete classes.

KafkaServer (broker/server.py) is the composition root: it builds every part and hands each the
objects it uses, named and typed here or in the part's constructor. No part is handed the server
(tests/unit/test_layering.py checks it), so "go to definition" from a handler's
`context.services.replica_manager` lands on `HandlerServices.replica_manager: ReplicaManager`,
and from there on the method that serves the request.

What the server itself provided before (the current config, waiting for a metadata change, a
topic's effective min.insync.replicas, the other brokers' addresses) lives in the small named
objects below, which the server updates and the parts read.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.cluster.finalized_features import FinalizedFeatures
    from broker.cluster.metadata_cache import MetadataCache
    from broker.config.dynamic import DynamicBrokerConfig
    from broker.config.kafka_config import KafkaConfig
    from broker.config.topic_overrides import TopicConfigs
    from broker.coordinator.group.coordinator import GroupCoordinator
    from broker.coordinator.transaction.coordinator import TransactionCoordinator
    from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
    from broker.log.manager import LogManager
    from broker.metrics.prometheus import BrokerCounters
    from broker.network.sasl import SaslClientConfig
    from broker.protocol.registry import Registry
    from broker.quotas.manager import ClientQuotas
    from broker.replication.alter_log_dirs import ReplicaAlterLogDirs
    from broker.replication.fetch_session import FetchSessionCache
    from broker.replication.replica_manager import ReplicaManager
    from broker.security.authorizer import AclAuthorizer
    from broker.security.credentials import ScramCredentials
    from broker.security.delegation_tokens import DelegationTokenManager
    from controller.config import ControllerConfig
    from controller.controller import Controller
    from zk.client import ZkClient
    from zk.cluster_watch import ClusterWatch
    from zk.kafka_zk import KafkaZk


class CurrentConfig:
    """The broker's effective config: the static one, then each one the dynamic broker configs
    make (KafkaServer._apply_config puts it here). Parts that read a setting when they use it
    hold this, so that a dynamic change reaches them (Kafka's currentKafkaConfig)."""

    __slots__ = ("value",)

    def __init__(self, config: KafkaConfig) -> None:
        self.value = config


class MetadataChanges:
    """Wakes requests that wait for this broker's metadata to show something (created topics'
    leaders, elected leaders, deleted topics): the server signals after each reconcile pass
    and each change of brokers or controller."""

    def __init__(self) -> None:
        self._changed = asyncio.Event()

    def signal(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    async def wait_for(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until `condition()` holds after a metadata change, or the timeout passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not condition():
            remaining_s = deadline - loop.time()
            if remaining_s <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining_s)
            except TimeoutError:
                return condition()
        return True


class TopicSettings:
    """A topic's effective min.insync.replicas where code needs the number at once: its
    override as last read from ZooKeeper, else the broker's current default."""

    def __init__(self, topic_configs: TopicConfigs, config: CurrentConfig) -> None:
        self._topic_configs = topic_configs
        self._config = config

    def min_insync_replicas(self, topic: str) -> int:
        value = self._topic_configs.cached(topic).get("min.insync.replicas")
        return int(value) if value is not None else int(self._config.value["min.insync.replicas"])


class PeerBrokers:
    """The other brokers as this broker last saw them in ZooKeeper, and how to reach their
    inter-broker listener (replica fetchers, transaction markers, the wait for peers)."""

    def __init__(
        self,
        broker_id: int,
        cluster_watch: ClusterWatch,
        config: CurrentConfig,
        inter_broker_ssl: ssl.SSLContext | None,
        inter_broker_sasl: SaslClientConfig | None,
    ) -> None:
        self._broker_id = broker_id
        self._cluster_watch = cluster_watch
        self._config = config
        # How this broker connects to the others' inter-broker listener (None: plaintext) ...
        self.inter_broker_ssl = inter_broker_ssl
        # ... and authenticates there when it is a SASL listener (None: no SASL).
        self.inter_broker_sasl = inter_broker_sasl

    def peer_broker_ids(self) -> list[int]:
        """Every other broker registered in ZooKeeper, as this broker last saw them."""
        return sorted(set(self._cluster_watch.view.brokers) - {self._broker_id})

    def inter_broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where `broker_id` takes inter-broker requests (inter.broker.listener.name)."""
        registration = self._cluster_watch.view.brokers.get(broker_id)
        if registration is None:
            return None
        wanted = self._config.value.inter_broker_listener_name
        for text in registration.endpoints:
            name, _, address = text.partition("://")
            host, _, port = address.rpartition(":")
            if name == wanted and port.isdigit():
                return host, int(port)
        return None


@dataclass(frozen=True, slots=True)
class HandlerServices:
    """What request handlers, and the helpers they call, use of the broker; one per broker,
    built by KafkaServer.start once the cluster id is known (as Kafka builds KafkaApis)."""

    # The broker and its requests.
    current_config: CurrentConfig
    broker_id: int
    cluster_id: str
    registry: Registry
    metrics: BrokerCounters
    authorizer: AclAuthorizer | None
    # Partitions and their logs: Produce, Fetch, ListOffsets, DeleteRecords, log dirs.
    replica_manager: ReplicaManager
    fetch_sessions: FetchSessionCache
    log_manager: LogManager
    log_dir_mover: ReplicaAlterLogDirs
    # What this broker knows of the cluster, and waiting for it to change.
    metadata_cache: MetadataCache
    metadata_changes: MetadataChanges
    finalized_features: FinalizedFeatures
    peers: PeerBrokers
    topic_configs: TopicConfigs
    topic_settings: TopicSettings
    # Groups and transactions.
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator
    producer_ids: ProducerIdManager
    # Admin requests: this broker's controller (active or not) and what ZooKeeper stores.
    controller: Controller
    controller_config: ControllerConfig
    zk_client: ZkClient
    kafka_zk: KafkaZk
    dynamic_config: DynamicBrokerConfig
    scram_credentials: ScramCredentials
    # Client quotas: Produce and Fetch count against them; Describe/AlterClientQuotas.
    quotas: ClientQuotas
    delegation_tokens: DelegationTokenManager

    @property
    def config(self) -> KafkaConfig:
        """The broker's effective config now (dynamic changes replace it)."""
        return self.current_config.value


@dataclass(frozen=True, slots=True)
class MetricsServices:
    """What the Prometheus collectors read."""

    metrics: BrokerCounters
    zk_client: ZkClient
    controller: Controller
    replica_manager: ReplicaManager
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator
    quotas: ClientQuotas
