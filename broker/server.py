"""The broker's composition root: builds its parts, hands each the collaborators it uses, and
owns the order of start-up and shutdown.

No part is handed the server: handlers get `HandlerServices`, the metrics `MetricsServices`, the
coordinators and listeners their collaborators by name (broker/services.py). What the server
changes as it runs (the effective config, the metadata changes requests wait for) it updates in
the small objects of broker/services.py that the parts hold.

Start-up: ZooKeeper session -> cluster id -> meta.properties -> logs -> cluster watch ->
listeners -> broker registration -> controller. Shutdown runs the same steps backwards, so the
broker disappears from ZooKeeper before its logs close.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable

from broker.cluster.alter_partition_channel import AlterPartitionChannel
from broker.cluster.controlled_shutdown import ControlledShutdown, ControlledShutdownConfig
from broker.cluster.controller_channel import ChannelConfig, ControllerChannel
from broker.cluster.finalized_features import FinalizedFeatures
from broker.cluster.log_dir_failure import LogDirFailureHandler
from broker.cluster.metadata_cache import MetadataCache
from broker.cluster.replica_reconciler import ReplicaReconciler, partition_in_view
from broker.cluster.session_fence import SessionFence
from broker.config import inter_broker_protocol
from broker.config.changes import ConfigChangeListener
from broker.config.dynamic import DynamicBrokerConfig
from broker.config.kafka_config import KafkaConfig
from broker.config.topic_defaults import default_log_config
from broker.config.topic_overrides import TopicConfigs
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.internal_topics import InternalTopics
from broker.coordinator.transaction.coordinator import TransactionCoordinator
from broker.coordinator.transaction.marker_sender import TxnMarkerSender
from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
from broker.handlers import build_registry
from broker.log.cleaner import delete_retained_segments
from broker.log.compaction import CleanerConfig, LogCleaner
from broker.log.manager import LogManager
from broker.log.meta_properties import ensure_meta_properties
from broker.metrics.prometheus import (
    BrokerCounters,
    MetricsEndpoint,
    parse_listener,
    timed_registry,
)
from broker.network import tls
from broker.network.listener import Listener
from broker.network.quotas import ConnectionQuotas, parse_per_ip_overrides
from broker.network.sasl import SASL_PROTOCOLS, ListenerSasl
from broker.process.loop_watchdog import LoopWatchdog
from broker.process.shutdown_steps import stop_quietly
from broker.quotas.manager import DEFAULT as DEFAULT_ENTITY
from broker.quotas.manager import ClientQuotas
from broker.quotas.sensor import QuotaWindow
from broker.replication.alter_log_dirs import ReplicaAlterLogDirs
from broker.replication.alter_partition_manager import AlterPartitionManager
from broker.replication.fetch_session import FetchSessionCache
from broker.replication.fetcher import FetcherConfig, ReplicaFetcherManager
from broker.replication.isr import IsrProposer, IsrWriter
from broker.replication.replica_manager import ReplicaManager
from broker.security import sasl_config
from broker.security.acl import AuthorizerSettings
from broker.security.authorizer import AclAuthorizer, parse_super_users
from broker.security.credentials import ScramCredentials
from broker.security.delegation_tokens import DelegationTokenManager, TokenSettings
from broker.security.zk_client_security import zk_client_security
from broker.services import (
    CurrentConfig,
    HandlerServices,
    MetadataChanges,
    MetricsServices,
    PeerBrokers,
    TopicSettings,
)
from controller.config import ControllerConfig
from controller.controller import Controller
from zk.client import ZkClient
from zk.cluster_watch import ClusterChange, ClusterWatch
from zk.errors import ZkError
from zk.kafka_zk import BrokerRegistration, KafkaZk

log = logging.getLogger(__name__)

REREGISTER_BACKOFF_MIN_S = 0.5
REREGISTER_BACKOFF_MAX_S = 10.0
# After a controlled shutdown, how long to wait to have applied the leaderships it moved.
MOVED_LEADERSHIP_WAIT_S = 5.0


class KafkaServer:
    def __init__(self, config: KafkaConfig) -> None:
        # The effective config, replaced when dynamic broker configs change (see `config`).
        self.current_config = CurrentConfig(config)
        self.broker_id = config.broker_id
        # How this broker connects to the others' inter-broker listener (None: plaintext).
        self.inter_broker_ssl = tls.inter_broker_client_context(config)
        # ... and authenticates there when it is a SASL listener (None: no SASL).
        self.inter_broker_sasl = sasl_config.inter_broker_client(config)
        self.metadata_changes = MetadataChanges()
        # Counted as the broker works; served by `metrics_endpoint` (broker.metrics.prometheus).
        self.metrics = BrokerCounters()
        self.metrics_endpoint: MetricsEndpoint | None = None
        self.registry = timed_registry(build_registry(), self.metrics)
        zk_sasl, zk_secure_acls = zk_client_security(config["zookeeper.set.acl"], os.environ)
        self.zk_client = ZkClient(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
            sasl=zk_sasl,
            secure_acls=zk_secure_acls,
        )
        self.kafka_zk = KafkaZk(self.zk_client)
        self.cluster_watch = ClusterWatch(self.kafka_zk, self._on_cluster_change)
        self.peers = PeerBrokers(
            self.broker_id,
            self.cluster_watch,
            self.current_config,
            self.inter_broker_ssl,
            self.inter_broker_sasl,
        )
        self.scram_credentials = ScramCredentials(self.kafka_zk)
        self.finalized_features = FinalizedFeatures(self.zk_client)
        self.quotas = ClientQuotas(
            self.kafka_zk,
            QuotaWindow(config["quota.window.num"], config["quota.window.size.seconds"] * 1000),
            QuotaWindow(
                config["controller.quota.window.num"],
                config["controller.quota.window.size.seconds"] * 1000,
            ),
        )
        self.delegation_tokens = DelegationTokenManager(
            self.kafka_zk, self.zk_client, TokenSettings.from_config(config)
        )
        # None: no authorizer configured, every request is allowed (Kafka's default).
        self.authorizer = (
            AclAuthorizer(
                self.zk_client,
                AuthorizerSettings(
                    parse_super_users(config["super.users"]),
                    config["allow.everyone.if.no.acl.found"],
                ),
            )
            if config["authorizer.class.name"]
            else None
        )
        # SASL listener name -> its mechanisms and users.
        self.sasl_listeners: dict[str, ListenerSasl] = {
            endpoint.listener_name: sasl_config.listener_settings(
                config,
                endpoint.listener_name,
                self.scram_credentials.lookup,
                self.delegation_tokens.scram_credential,
            )
            for endpoint in config.listeners
            if config.security_protocol(endpoint.listener_name) in SASL_PROTOCOLS
        }
        sasl_config.warn_ignored(config)
        self.default_log_config = default_log_config(config)
        self.log_manager = LogManager(config.log_dirs, self.default_log_config)
        self.log_cleaner = LogCleaner(CleanerConfig.from_broker_config(config))
        self.topic_configs = TopicConfigs(self.kafka_zk)
        self.topic_settings = TopicSettings(self.topic_configs, self.current_config)
        self.replica_manager = ReplicaManager(
            self.broker_id,
            self.log_manager,
            functools.partial(partition_in_view, self.cluster_watch),
            self.topic_settings.min_insync_replicas,
            replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
        )
        self.replica_manager.isr_writer = self._isr_proposer(config)
        self.replica_manager.fetchers = ReplicaFetcherManager(
            FetcherConfig.from_broker_config(config, self.inter_broker_ssl, self.inter_broker_sasl),
            self.replica_manager,
            self.peers.inter_broker_address,
        )
        self.log_dir_mover = ReplicaAlterLogDirs(
            self.log_manager,
            hosted=lambda key: self.replica_manager.get(*key),
            is_offline=self.replica_manager.is_offline,
            partition_exists=self.replica_manager.partition_exists,
            chunk_bytes=config["replica.fetch.max.bytes"],
            on_io_error=self.log_manager.report_failure,
        )
        self.log_dir_failures = LogDirFailureHandler(
            self.broker_id,
            self.log_manager,
            self.replica_manager,
            self.log_dir_mover,
            self.kafka_zk,
        )
        self.replicas_from_view = ReplicaReconciler(
            self.broker_id,
            self.cluster_watch,
            self.topic_configs,
            self.replica_manager,
            self.log_manager,
            self.metadata_changes,
            lambda: self.default_log_config,
        )
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"])
        self.dynamic_config = DynamicBrokerConfig(config, self.zk_client, self._apply_config)
        self.config_changes = ConfigChangeListener(
            self.zk_client,
            self._on_topic_config_change,
            self.dynamic_config.on_entity_changed,
            self._on_user_config_change,
            self.quotas.on_client_changed,
        )
        self.metadata_cache = MetadataCache(self.cluster_watch.view)
        self.replica_manager.replica_selector_enabled = bool(config["replica.selector.class"])
        self.replica_manager.broker_racks = self._live_broker_racks
        self.controller_config = ControllerConfig(
            default_replication_factor=config["default.replication.factor"],
            num_partitions=config["num.partitions"],
            unclean_leader_election_enable=config["unclean.leader.election.enable"],
            delete_topic_enable=config["delete.topic.enable"],
            create_topics_max_partitions=config["create.topics.max.partitions"],
            auto_leader_rebalance_enable=config["auto.leader.rebalance.enable"],
            leader_imbalance_per_broker_percentage=config["leader.imbalance.per.broker.percentage"],
            leader_imbalance_check_interval_seconds=config[
                "leader.imbalance.check.interval.seconds"
            ],
        )
        # The controller's requests to every live broker, this one included.
        self.controller_channel = ControllerChannel(
            ChannelConfig(
                broker_id=self.broker_id,
                listener_name=lambda: self.config.inter_broker_listener_name,
                socket_timeout_ms=config["controller.socket.timeout.ms"],
                ssl_context=self.inter_broker_ssl,
                sasl=self.inter_broker_sasl,
            )
        )
        self.controller = Controller(
            self.kafka_zk, self.broker_id, self.controller_config, channel=self.controller_channel
        )
        internal_topics = InternalTopics(self.metadata_cache, self.kafka_zk, self.controller_config)
        self.group_coordinator = GroupCoordinator(
            self.current_config,
            self.broker_id,
            self.replica_manager,
            self.metadata_cache,
            internal_topics,
            self.topic_settings,
        )
        self.producer_ids = ProducerIdManager(self.kafka_zk, self.broker_id)
        self.transaction_coordinator = TransactionCoordinator(
            self.current_config,
            self.broker_id,
            self.replica_manager,
            self.metadata_cache,
            internal_topics,
            self.topic_settings,
            self.producer_ids,
            TxnMarkerSender(self.current_config, self.broker_id, self.metadata_cache, self.peers),
        )
        quotas = ConnectionQuotas(
            config["max.connections"],
            config["max.connections.per.ip"],
            parse_per_ip_overrides(config["max.connections.per.ip.overrides"]),
        )
        # They serve requests from `start` on, once the cluster id is known.
        self.listeners = [
            Listener(config, endpoint, quotas, self.sasl_listeners.get(endpoint.listener_name))
            for endpoint in config.listeners
        ]
        # Fenced while ZooKeeper has been silent for longer than the session timeout: one
        # decision that the replica manager, the metadata cache and the controller follow.
        self.session_fence = SessionFence(
            self.broker_id,
            self.zk_client.answers,
            lambda: self.zk_client.negotiated_session_timeout_ms,
            lambda: self.zk_client.session_id if self.zk_client.connected else None,
            enabled=config["zookeeper.session.fencing.enable"],
        )
        self.session_fence.listeners.append(self._on_fence)
        self.cluster_id = ""
        self.broker_epoch = -1
        self._background: list[asyncio.Task[None]] = []
        self._session_lost = False
        self._reregister_task: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        self._controlled_shutdown: asyncio.Task[None] | None = None
        self.loop_watchdog = LoopWatchdog()

    @property
    def config(self) -> KafkaConfig:
        return self.current_config.value

    def _handler_services(self) -> HandlerServices:
        return HandlerServices(
            current_config=self.current_config,
            broker_id=self.broker_id,
            cluster_id=self.cluster_id,
            registry=self.registry,
            metrics=self.metrics,
            authorizer=self.authorizer,
            scram_credentials=self.scram_credentials,
            quotas=self.quotas,
            log_manager=self.log_manager,
            log_dir_mover=self.log_dir_mover,
            replica_manager=self.replica_manager,
            fetch_sessions=self.fetch_sessions,
            metadata_cache=self.metadata_cache,
            metadata_changes=self.metadata_changes,
            finalized_features=self.finalized_features,
            delegation_tokens=self.delegation_tokens,
            peers=self.peers,
            group_coordinator=self.group_coordinator,
            transaction_coordinator=self.transaction_coordinator,
            producer_ids=self.producer_ids,
            controller=self.controller,
            controller_config=self.controller_config,
            zk_client=self.zk_client,
            kafka_zk=self.kafka_zk,
            dynamic_config=self.dynamic_config,
            topic_configs=self.topic_configs,
            topic_settings=self.topic_settings,
        )

    def _metrics_services(self) -> MetricsServices:
        return MetricsServices(
            metrics=self.metrics,
            zk_client=self.zk_client,
            controller=self.controller,
            replica_manager=self.replica_manager,
            group_coordinator=self.group_coordinator,
            transaction_coordinator=self.transaction_coordinator,
            quotas=self.quotas,
        )

    # -- start-up -------------------------------------------------------------------------

    async def start(self) -> None:
        self.loop_watchdog.start()  # first, so that stalls during start-up show too
        await self.zk_client.start()
        await self.kafka_zk.ensure_persistent_paths()
        await self.dynamic_config.load()  # before the logs open with the default LogConfig
        self.cluster_id = await self.kafka_zk.get_or_create_cluster_id()
        ensure_meta_properties(self.config.log_dirs, self.broker_id, self.cluster_id)
        self.log_manager.load_logs()
        self.log_dir_failures.start()
        self.log_dir_mover.resume(
            (f.topic, f.partition) for f in self.log_manager.all_future_logs()
        )
        await self.config_changes.start()
        if self.authorizer is not None:
            await self.authorizer.start()  # before the listeners: no request goes unchecked
        if self.sasl_listeners:
            await self.scram_credentials.load_all()  # after the watch: no change is missed
        await self.delegation_tokens.start()
        await self.finalized_features.start()
        await self.quotas.load_all()  # likewise
        await self.cluster_watch.start()
        self.metadata_cache.update(self.cluster_watch.view)
        await self.replicas_from_view.reconcile(None)
        # Kafka builds its KafkaApis here too, once the cluster id is known.
        services = self._handler_services()
        for listener in self.listeners:
            await listener.start(services)
        await self._start_metrics_endpoint()
        await self._register()
        self.metrics.zookeeper_sync_connects += 1  # the first connection, made before the hook
        self.zk_client.on_session_event(self._on_session_event)
        await self.controller.start()
        self.log_dir_mover.start()
        config = self.config
        every = self._every
        self._background = [
            asyncio.create_task(self.replicas_from_view.run(), name="reconcile"),
            asyncio.create_task(self.session_fence.run(), name="session-fence"),
            asyncio.create_task(
                every(
                    config["log.flush.offset.checkpoint.interval.ms"],
                    self._flush_and_checkpoint,
                    "flushing or checkpointing logs",
                ),
                name="checkpoint",
            ),
            asyncio.create_task(
                every(
                    config["replica.high.watermark.checkpoint.interval.ms"],
                    self._write_high_watermarks,
                    "writing replication-offset-checkpoint",
                ),
                name="hw-checkpoint",
            ),
            # Kafka checks at half the allowed lag, so a lagging follower leaves within 1.5x it.
            asyncio.create_task(
                every(config["replica.lag.time.max.ms"] / 2, self._shrink_isrs, "checking ISRs"),
                name="isr-shrink",
            ),
            asyncio.create_task(
                every(
                    config["log.retention.check.interval.ms"],
                    self._apply_retention,
                    "applying retention",
                ),
                name="retention",
            ),
            asyncio.create_task(
                every(
                    config["offsets.retention.check.interval.ms"],
                    self._expire_offsets,
                    "expiring committed offsets",
                ),
                name="offset-expiry",
            ),
            asyncio.create_task(
                every(
                    config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                    self.transaction_coordinator.abort_timed_out,
                    "aborting timed-out transactions",
                ),
                name="transaction-timeouts",
            ),
            asyncio.create_task(
                every(
                    config["transaction.remove.expired.transaction.cleanup.interval.ms"],
                    self.transaction_coordinator.remove_expired,
                    "removing expired transactional ids",
                ),
                name="transactional-id-expiry",
            ),
            asyncio.create_task(self._cleaner_loop(), name="log-cleaner"),
        ]
        if self.delegation_tokens.enabled:
            # Kafka's controller sweeps expired tokens ("delete-expired-tokens").
            self._background.append(
                asyncio.create_task(
                    every(
                        self.delegation_tokens.settings.expiry_check_interval_ms,
                        self._expire_delegation_tokens,
                        "removing expired delegation tokens",
                    ),
                    name="delegation-token-expiry",
                )
            )
        log.info("broker %d started (cluster id %s)", self.broker_id, self.cluster_id)

    async def _expire_delegation_tokens(self) -> None:
        if self.controller.is_active:
            await self.delegation_tokens.expire_tokens()

    def _registration(self) -> BrokerRegistration:
        endpoints = self.config.advertised_listeners
        return BrokerRegistration.create(
            broker_id=self.broker_id,
            endpoints=[str(e) for e in endpoints],
            listener_security_protocol_map={
                e.listener_name: self.config.listener_security_protocol_map[e.listener_name]
                for e in endpoints
            },
            timestamp_ms=int(time.time() * 1000),
            rack=self.config["broker.rack"],
        )

    async def _register(self) -> None:
        # Before the registration: the controller reads it when it sees this broker start.
        await self.log_dir_failures.write_offline_replicas()
        session_id = self.zk_client.session_id
        self.broker_epoch = await self.kafka_zk.register_broker(self._registration())
        # A fence kept since the session expired lifts now (the controller sees us start).
        self.session_fence.registered_session_id = session_id
        # A controller's requests for an earlier registration are fenced from now on.
        self.replica_manager.controller_fence.broker_epoch = self.broker_epoch
        log.info("registered /brokers/ids/%d (broker epoch %d)", self.broker_id, self.broker_epoch)

    async def _update_registration(self) -> None:
        """Rewrite /brokers/ids/<id> with the current endpoints, retried until ZooKeeper takes
        it (a lost session re-registers with them anyway)."""
        delay_s = REREGISTER_BACKOFF_MIN_S
        while True:
            try:
                await self.kafka_zk.update_broker_registration(self._registration())
                log.info(
                    "updated /brokers/ids/%d: %s", self.broker_id, self.config.advertised_listeners
                )
                return
            except ZkError as error:
                log.warning(
                    "updating the registration failed (%s); retrying in %.1f s", error, delay_s
                )
                await asyncio.sleep(delay_s)
                delay_s = min(delay_s * 2, REREGISTER_BACKOFF_MAX_S)

    async def _start_metrics_endpoint(self) -> None:
        text = self.config["metrics.prometheus.listener"]
        if text:
            host, port = parse_listener(text)
            self.metrics_endpoint = MetricsEndpoint(self._metrics_services(), host, port)
            await self.metrics_endpoint.start()

    def _on_session_event(self, state: str) -> None:
        if state == "SUSPENDED":
            self.metrics.zookeeper_disconnects += 1
        elif state == "CONNECTED":
            self.metrics.zookeeper_sync_connects += 1
        if state == "LOST":
            self.metrics.zookeeper_expires += 1
            log.warning("ZooKeeper session expired; will re-register on the new session")
            self._session_lost = True
        elif state == "CONNECTED" and self._session_lost:
            self._session_lost = False
            if self._reregister_task is None or self._reregister_task.done():
                self._reregister_task = asyncio.create_task(self._reregister(), name="re-register")

    def _on_fence(self, fenced: bool) -> None:
        self.metrics.zookeeper_fenced = fenced
        if fenced:
            self.metrics.zookeeper_session_fences += 1
        self.replica_manager.set_session_fenced(fenced)
        self.metadata_cache.fenced_broker_id = self.broker_id if fenced else None
        if fenced:
            self.controller.fence()
        else:
            self.controller.unfence()
        # Requests waiting for metadata to change (e.g. CreateTopics) look again.
        self.metadata_changes.signal()

    async def _reregister(self) -> None:
        """Register again until it works: an unregistered broker looks dead to the controller."""
        delay_s = REREGISTER_BACKOFF_MIN_S
        while True:
            try:
                await self._register()
                return
            except ZkError as error:
                log.warning("re-registration failed (%s); retrying in %.1f s", error, delay_s)
                await asyncio.sleep(delay_s)
                delay_s = min(delay_s * 2, REREGISTER_BACKOFF_MAX_S)

    # -- following the cluster ------------------------------------------------------------

    def _on_cluster_change(self, change: ClusterChange) -> None:
        self.metadata_cache.update(self.cluster_watch.view)
        self.replicas_from_view.mark_topics(
            change.topics_added | change.topics_deleted | change.topics_changed
        )
        self.replicas_from_view.mark_partitions(change.partitions_changed)
        if change.brokers_changed or change.controller_changed:
            self.metadata_changes.signal()

    def _apply_config(self, config: KafkaConfig) -> None:
        """Dynamic broker configs changed: later reads of `self.config` see them; every log
        takes the new defaults on the reconcile pass (topic overrides still win); new
        advertised listeners are written to this broker's registration; listeners reload new
        key and trust material."""
        re_register = config.advertised_listeners != self.config.advertised_listeners
        self.current_config.value = config
        for listener in self.listeners:
            listener.reconfigure(config)
        if re_register and self.broker_epoch >= 0:
            task = asyncio.get_running_loop().create_task(
                self._update_registration(), name="update-registration"
            )
            self._background.append(task)
        self.default_log_config = default_log_config(config)
        self.log_manager.default_config = self.default_log_config
        self.replicas_from_view.mark_topics(None)

    def _on_topic_config_change(self, topic: str) -> None:
        self.topic_configs.forget(topic)
        self.replicas_from_view.mark_topics({topic})

    def _on_user_config_change(self, entity_path: str) -> None:
        """users/<user> or users/<user>/clients/<client-id>: quotas; a named user's own
        znode also holds its SCRAM credentials (Kafka's UserConfigHandler)."""
        self.quotas.on_user_changed(entity_path)
        if "/" not in entity_path and entity_path != DEFAULT_ENTITY:
            self.scram_credentials.on_user_changed(entity_path)

    # -- background duties ----------------------------------------------------------------

    async def _every(
        self, interval_ms: float, step: Callable[[], Awaitable[object]], what: str
    ) -> None:
        """Run `step` every `interval_ms`; a failure is logged and the next round retries."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await step()
            except Exception:
                log.exception("%s failed; will retry", what)

    async def _write_high_watermarks(self) -> None:
        snapshot = self.log_manager.high_watermark_snapshot()
        await asyncio.to_thread(self.log_manager.write_high_watermarks, snapshot)

    async def _shrink_isrs(self) -> None:
        self.replica_manager.maybe_shrink_isrs()

    async def _expire_offsets(self) -> None:
        await self.group_coordinator.expire_offsets(int(time.time() * 1000))

    async def _apply_retention(self) -> None:
        self.apply_retention(int(time.time() * 1000))

    async def _flush_and_checkpoint(self) -> None:
        loop = asyncio.get_running_loop()
        for replica_log in self.log_manager.all_logs():
            await loop.run_in_executor(None, self.log_manager.flush_log, replica_log)
        snapshot = self.log_manager.checkpoint_snapshot()
        await loop.run_in_executor(None, self.log_manager.write_checkpoints, snapshot)

    async def _cleaner_loop(self) -> None:
        """Kafka's cleaner thread: rests log.cleaner.backoff.ms only when nothing was cleaned."""
        backoff_s = self.config["log.cleaner.backoff.ms"] / 1000
        while True:
            cleaned = 0
            try:
                stats = await self.log_cleaner.clean_once(
                    self.log_manager.all_logs(), int(time.time() * 1000)
                )
                cleaned = stats.logs_cleaned
            except Exception:
                log.exception("log cleaning failed; will retry")
            await asyncio.sleep(0 if cleaned else backoff_s)

    def apply_retention(self, now_ms: int) -> None:
        """Delete segments past retention.ms / retention.bytes, never above what consumers
        may still need (the high watermark)."""
        for partition in self.replica_manager.all_partitions():
            replica_log = partition.log
            limit = partition.high_watermark if partition.is_leader else replica_log.log_end_offset
            deleted = delete_retained_segments(replica_log, now_ms, limit)
            if deleted:
                log.info(
                    "%s-%d: retention deleted %d segment(s); log start offset now %d",
                    partition.topic,
                    partition.partition,
                    deleted,
                    replica_log.log_start_offset,
                )

    # -- shutdown -------------------------------------------------------------------------

    def request_stop(self) -> None:
        """SIGTERM: a controlled shutdown first (when enabled and started), then stop. A
        second signal during the controlled shutdown stops at once."""
        started = bool(self._background)
        if self._controlled_shutdown is not None or self._stopped.is_set():
            self._stopped.set()
        elif started and self.config["controlled.shutdown.enable"]:
            self._controlled_shutdown = asyncio.get_running_loop().create_task(
                self._controlled_shutdown_then_stop(), name="controlled-shutdown"
            )
            self.log_manager.start_early_sync()
        else:
            self._stopped.set()

    def _live_broker_racks(self) -> dict[int, str | None]:
        """Each live broker's broker.rack, for the replica selector (KIP-392)."""
        brokers = self.metadata_cache.live_brokers()
        return {broker_id: registration.rack for broker_id, registration in brokers.items()}

    def _isr_proposer(self, config: KafkaConfig) -> IsrProposer:
        """Kafka's AlterPartitionManager choice: AlterPartition to the controller from
        inter.broker.protocol.version 2.7-IV2 on, the ZooKeeper write below it."""
        version = inter_broker_protocol.parse(config["inter.broker.protocol.version"])
        if not inter_broker_protocol.sends_alter_partition(version):
            return IsrWriter(self.kafka_zk, self.replica_manager.on_isr_changed)
        channel = AlterPartitionChannel(
            self.broker_id,
            view=lambda: self.cluster_watch.view,
            address_of=self.peers.inter_broker_address,
            socket_timeout_ms=config["controller.socket.timeout.ms"],
            ssl_context=self.inter_broker_ssl,
            sasl=self.inter_broker_sasl,
        )
        return AlterPartitionManager(
            self.broker_id,
            broker_epoch=lambda: self.broker_epoch,
            sender=channel,
            on_isr_changed=self.replica_manager.on_isr_changed,
            topic_id=self.replica_manager.topic_id,
            topic_ids_supported=inter_broker_protocol.supports_topic_ids(version),
        )

    async def _controlled_shutdown_then_stop(self) -> None:
        config = self.config
        shutdown = ControlledShutdown(
            ControlledShutdownConfig(
                broker_id=self.broker_id,
                max_retries=config["controlled.shutdown.max.retries"],
                retry_backoff_ms=config["controlled.shutdown.retry.backoff.ms"],
                socket_timeout_ms=config["controller.socket.timeout.ms"],
                ssl_context=self.inter_broker_ssl,
                sasl=self.inter_broker_sasl,
            ),
            view=lambda: self.cluster_watch.view,
            address_of=self.peers.inter_broker_address,
            broker_epoch=lambda: self.broker_epoch,
            wait_for_metadata=self.metadata_changes.wait_for,
        )
        try:
            # Stop fetching first (Kafka's controller sends StopReplica to the broker it shuts
            # down): a leader would otherwise take this broker back into an ISR the controller
            # just shrank it out of, between the move and the broker's exit.
            await self._stop_following()
            if await shutdown.run():
                await self._apply_moved_leaderships()
        except Exception:
            log.exception("controlled shutdown failed; shutting down anyway")
        finally:
            self._stopped.set()

    async def _apply_moved_leaderships(self) -> None:
        """Kafka's broker learns from the controller's LeaderAndIsr that its leaderships moved
        before it closes its sockets, and answers the acks=all produces waiting on them with
        NOT_LEADER_OR_FOLLOWER. Ours waits (bounded) until it has applied the moved leaders
        from ZooKeeper, which answers those produces the same way; the listeners then let
        each answer go out before closing (Listener.stop)."""

        def applied() -> bool:
            states = self.cluster_watch.view.partition_states
            for partition in self.replica_manager.all_partitions():
                entry = states.get(partition.key)
                if partition.is_leader and entry is not None and entry[0].leader != self.broker_id:
                    return False
            return True

        if not await self.metadata_changes.wait_for(applied, MOVED_LEADERSHIP_WAIT_S):
            log.warning("moved leaderships not applied within %.0f s", MOVED_LEADERSHIP_WAIT_S)

    async def _stop_following(self) -> None:
        """Stop every fetcher and start no more: this broker follows nothing any more."""
        fetchers, self.replica_manager.fetchers = self.replica_manager.fetchers, None
        if fetchers is not None:
            await fetchers.shutdown()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def shutdown(self) -> None:
        log.info("broker %d shutting down", self.broker_id)
        if self._controlled_shutdown is not None:
            self._controlled_shutdown.cancel()
            await asyncio.gather(self._controlled_shutdown, return_exceptions=True)
        await stop_quietly("log cleaner", self.log_cleaner.close())
        await stop_quietly("log dir mover", self.log_dir_mover.stop())
        await stop_quietly("log dir failure handler", self.log_dir_failures.stop())
        tasks = [*self._background, *([self._reregister_task] if self._reregister_task else [])]
        for task in tasks:
            task.cancel()
        await stop_quietly("background tasks", asyncio.gather(*tasks, return_exceptions=True))
        await stop_quietly("transaction coordinator", self.transaction_coordinator.stop())
        await stop_quietly("controller", self.controller.stop())
        await stop_quietly("controller channel", self.controller_channel.close())
        if self.metrics_endpoint is not None:
            await stop_quietly("metrics endpoint", self.metrics_endpoint.stop())
        for listener in self.listeners:
            await stop_quietly("listener", listener.stop())
        fetchers, isr_writer = self.replica_manager.fetchers, self.replica_manager.isr_writer
        if fetchers is not None:
            await stop_quietly("replica fetchers", fetchers.shutdown())
        if isr_writer is not None:
            await stop_quietly("ISR writer", isr_writer.stop())
        if self.authorizer is not None:
            await stop_quietly("authorizer", self.authorizer.stop())
        await stop_quietly("ZooKeeper client", self.zk_client.close())
        self.log_manager.shutdown()
        await self.loop_watchdog.stop()
        log.info("broker %d shut down", self.broker_id)
