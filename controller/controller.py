"""The controller: runs in every broker, acts only on the one that won the election.

Watch callbacks only enqueue events; `ControllerEventManager` runs `_process` for one event at a
time, in order. Controller writes are fenced by the /controller_epoch zkVersion won at election:
when ZooKeeper answers ControllerMovedError, another broker has become controller and this one
resigns (stops acting, keeps watching /controller so it can win a later election).

CreateTopics and DeleteTopics requests are served outside the event queue (as Kafka's admin
manager does): they only read the context and write request znodes; the resulting changes come
back through the watches.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from controller.active_watches import ActiveWatches
from controller.alter_partition import AlterPartitionRequest, AlterPartitionResult
from controller.auto_rebalance import FIRST_CHECK_DELAY_S, RebalanceTimer, check_leader_balance
from controller.broker_answers import BrokerAnswers, on_broker_answers
from controller.broker_change import on_broker_change
from controller.broker_requests import (
    BrokerAnswer,
    BrokerRequestSink,
    ExtraRequests,
    RequestPlanner,
)
from controller.config import ControllerConfig
from controller.context import ControllerContext, TopicPartition, load_context
from controller.controlled_shutdown import (
    ShutdownRequest,
    ShutdownResult,
    shut_down_broker,
    shutdown_requests,
)
from controller.errors import NOT_CONTROLLER, UNKNOWN_SERVER_ERROR, TopicError
from controller.event_manager import ControllerEventManager, DelayedEvent
from controller.events import (
    ACTIVE_EVENTS,
    AlterReassignmentsRequested,
    AutoLeaderRebalance,
    BrokerAnswersReceived,
    BrokerChange,
    ControlledShutdownRequested,
    ControllerChange,
    ControllerEvent,
    ElectLeadersRequested,
    IsrChangeNotification,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    PreferredReplicaElection,
    Reconcile,
    Resign,
    RetryUnsettledPartitions,
    Startup,
    TopicChange,
    TopicDeletion,
    ZkPartitionReassignment,
)
from controller.features import FeatureUpdate, update_features
from controller.isr_change_notification import on_isr_change_notification
from controller.log_dir_event import on_log_dir_event_notification
from controller.partition_modification import (
    NewPartitions,
    TopicWatches,
    create_partitions,
)
from controller.partition_state_machine import PartitionStateMachine
from controller.preferred_election import (
    ElectionRequest,
    ElectionResult,
    ElectionResults,
    ElectionType,
    election_requests,
    on_preferred_replica_election_znode,
    serve_election_request,
)
from controller.producer_ids import ProducerIdsBlock, ProducerIdsRequest
from controller.reassignment import PendingAlters, Reassignments, ReplicaAssignment, Request
from controller.served_requests import SERVED_EVENTS, ServedRequests
from controller.state_change_log import ChangeReason, controller_elected, controller_resigned
from controller.stats import ControllerStats
from controller.topic_admin import create_topics, delete_topics
from controller.topic_change import on_topic_change
from controller.topic_creation import NewTopic
from controller.topic_deletion import TopicDeletionManager
from controller.unsettled_retry import UnsettledRetryTimer
from controller.zk_api import ControllerZk
from zk.errors import ConnectionLossError, ControllerMovedError, SessionExpiredError, ZkError
from zk.znodes import ControllerZNode

log = logging.getLogger(__name__)

# After a failed failover, hold /controller this long before resigning: a broker elected at
# once would likely fail the same way (the cause is usually in ZooKeeper's data, not in this
# broker), and every election bumps the controller epoch. Bounds the rate of such elections.
FAILED_FAILOVER_BACKOFF_S = 1.0
# After an event handler failed part-way (e.g. connection loss), reconcile everything again this
# long later, rather than waiting for a ZooKeeper change that may never come.
RECONCILE_RETRY_BACKOFF_S = 1.0
# Between attempts to delete /controller after a connection loss left the outcome unknown.
RESIGN_RETRY_DELAY_S = 0.1
# How long an admin request that arrives between winning /controller and the end of the
# context load waits for the load (brokers and clients already see us as controller). Loading
# 5,000 partitions takes about 2 s; the bound only matters when ZooKeeper stops answering.
CONTEXT_LOAD_WAIT_S = 30.0

Sleep = Callable[[float], Awaitable[None]]


class Controller:
    def __init__(
        self,
        kafka_zk: ControllerZk,
        broker_id: int,
        config: ControllerConfig,
        rng: random.Random | None = None,
        sleep: Sleep = asyncio.sleep,
        channel: BrokerRequestSink | None = None,
    ) -> None:
        self._zk = kafka_zk
        self.broker_id = broker_id
        self._config = config
        self._rng = rng or random.Random()
        self._sleep = sleep  # tests substitute one they control
        # Counts and timers for the broker's metrics (Kafka's ControllerStats).
        self.stats = ControllerStats()
        self._events = ControllerEventManager(self._process, self.stats.record_event)
        self._context: ControllerContext | None = None
        # Set once a won election's context is loaded, or the failover failed or resigned.
        self._context_loaded = asyncio.Event()
        self._context_loaded.set()
        self._feature_updates = asyncio.Lock()
        self._partitions: PartitionStateMachine | None = None
        self._started = False
        # Fenced from ZooKeeper (see `fence`).
        self._fenced = False
        # Counts expired ZooKeeper sessions; an election won under an older session is void.
        self._session_generation = 0
        self._elected_generation = -1
        self._active_watches = ActiveWatches(kafka_zk, self._events.enqueue)
        # An active-event handler failed part-way: the context may hold changes that never
        # reached ZooKeeper, so the next event also reconciles every partition.
        self._reconcile_pending = False
        self._reconcile_retry = DelayedEvent(self._events.enqueue, sleep)
        # Partition writes that kept losing races are decided again on this timer.
        self._unsettled_retry = UnsettledRetryTimer(self._events.enqueue, sleep)
        self._election_requests = election_requests()
        # Topic znode watches (partitions added), and reassignment (one object per term).
        self._topic_watches = TopicWatches(kafka_zk, self._enqueue_partition_modifications)
        self._reassignments: Reassignments | None = None
        self._pending_alters = PendingAlters()
        self._shutdown_requests = shutdown_requests()
        self._rebalance_timer = RebalanceTimer(self._enqueue_auto_leader_rebalance)
        # AlterPartition and AllocateProducerIds from brokers (served_requests.py).
        self._served = ServedRequests(kafka_zk, broker_id, self._events.enqueue)
        # LeaderAndIsr, UpdateMetadata and StopReplica to every live broker (None: not sent);
        # the planner remembers what each was sent in this term.
        self._channel = channel
        self._planner: RequestPlanner | None = None
        # Requests events asked for beyond the context's changes, for the next plan.
        self._extra_requests = ExtraRequests()
        # The answers the controller acts on, and the topic deletions waiting on them.
        self._answers = BrokerAnswers(self._enqueue_broker_answers)
        self._deletion: TopicDeletionManager | None = None
        if channel is not None:
            channel.set_answer_handler(self._on_broker_answer)

    # ------------------------------------------------------------------ lifecycle

    @property
    def is_active(self) -> bool:
        return self._context is not None

    @property
    def epoch(self) -> int:
        """The controller epoch this broker won, or -1 when it is not the controller."""
        return -1 if self._context is None else self._context.epoch

    @property
    def context(self) -> ControllerContext | None:
        """The active controller's view (None when not active); for tests and diagnostics."""
        return self._context

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._events.start()
        self._zk.client.watch_data(ControllerZNode.path(), self._enqueue_controller_change)
        self._zk.client.on_session_event(self._on_session_event)
        self._events.enqueue(Startup())

    async def stop(self) -> None:
        """Stop handling events; if active, give up /controller so another broker takes over."""
        if not self._started:
            return
        self._started = False
        await self._events.stop()
        self._reconcile_retry.cancel()
        self._zk.client.unwatch_data(ControllerZNode.path(), self._enqueue_controller_change)
        self._deactivate()
        # Also when not active: a stop during the back-off after a failed failover leaves
        # /controller ours (resign_controller deletes only this session's znode). One attempt
        # only: shutdown must not wait for ZooKeeper, and closing the session right after
        # removes the ephemeral znode anyway.
        try:
            await self._zk.resign_controller(self.broker_id)
        except ZkError:
            log.warning("could not delete /controller at shutdown", exc_info=True)

    def idle(self) -> bool:
        """No controller event waiting to be handled (tests wait on this)."""
        return self._events.idle()

    # ------------------------------------------------------------------ watch callbacks

    def _enqueue_controller_change(self) -> None:
        self._events.enqueue(ControllerChange())

    def _enqueue_partition_modifications(self) -> None:
        self._events.enqueue(PartitionModifications())

    def _enqueue_reassignment_isr_change(self) -> None:
        self._events.enqueue(PartitionReassignmentIsrChange())

    def _enqueue_auto_leader_rebalance(self) -> None:
        self._events.enqueue(AutoLeaderRebalance())

    def fence(self) -> None:
        """The broker fenced itself from ZooKeeper (broker.cluster.session_fence): stop acting
        as controller now, not after the event in hand (which may wait on ZooKeeper for as
        long as the cut lasts), and elect nothing until `unfence`. What an event in flight
        still writes is fenced by the controller epoch."""
        self._fenced = True
        self._deactivate()

    def unfence(self) -> None:
        """ZooKeeper answers again: re-read /controller, as after any change of it (still ours
        in a surviving session: this broker resigns it and the next election decides)."""
        self._fenced = False
        if self._started:
            self._events.enqueue(ControllerChange())

    def _enqueue_broker_answers(self) -> None:
        self._events.enqueue(BrokerAnswersReceived())

    def _on_broker_answer(self, answer: BrokerAnswer) -> None:
        if self._started and self._context is not None:
            self._answers.add(answer)

    def _on_session_event(self, state: str) -> None:
        if state == "LOST":
            # Our ephemeral /controller died with the session; a ControllerChange follows.
            self._session_generation += 1
            self._events.enqueue(Resign())

    # ------------------------------------------------------------------ event handling

    async def _process(self, event: ControllerEvent) -> None:
        try:
            await self._dispatch(event)
        except ControllerMovedError:
            log.warning("controller moved while handling %s: resigning", type(event).__name__)
            self._deactivate()
            # Another broker bumped the epoch; re-read /controller in case it is gone again.
            self._events.enqueue(ControllerChange())
        except Exception:
            if self.is_active:
                # The handler may have updated the context before its writes failed, so the same
                # event retried would find nothing to do: reconcile everything instead.
                self._reconcile_pending = True
                self._reconcile_retry.schedule(Reconcile(), RECONCILE_RETRY_BACKOFF_S)
            raise

    async def _dispatch(self, event: ControllerEvent) -> None:
        match event:
            case Startup() | ControllerChange() if self._fenced:
                pass  # `unfence` re-reads /controller
            case Startup() | ControllerChange():
                await self._on_controller_change()
            case Resign() if self._elected_generation != self._session_generation:
                self._deactivate()
            case AlterReassignmentsRequested() if self._context is None:
                self._pending_alters.fail_all(NOT_CONTROLLER)
            case ElectLeadersRequested() if self._context is None:
                self._election_requests.fail_all(NOT_CONTROLLER)
            case ControlledShutdownRequested() if self._context is None:
                self._shutdown_requests.fail_all(NOT_CONTROLLER)
            case _ if isinstance(event, SERVED_EVENTS) and self._context is None:
                self._served.fail_all(NOT_CONTROLLER)
            case _ if isinstance(event, ACTIVE_EVENTS) and self._context is not None:
                await self._on_active_event(event, self._context)
            case _:
                pass  # an active-only event that arrived after resignation

    async def _on_active_event(self, event: ControllerEvent, context: ControllerContext) -> None:
        match event:
            case BrokerChange() | Reconcile():
                # Reconcile re-reads brokers too: a failed broker change is seen again (broker
                # epochs are only recorded once its writes succeeded).
                await self._on_broker_change(context)
            case RetryUnsettledPartitions():
                await self._unsettled_retry.retry(self._require_partitions())
            case TopicChange():
                machine = self._require_partitions()
                await on_topic_change(self._zk, context, machine, self._topic_watches)
            case TopicDeletion():
                await self._require_deletion().on_markers_changed()
            case BrokerAnswersReceived():
                await on_broker_answers(
                    self._answers.take(),
                    self.broker_id,
                    context,
                    self._require_partitions(),
                    self._require_deletion(),
                )
            case IsrChangeNotification():
                await self._on_isr_change_notification(context)
            case LogDirEventNotification():
                await self._on_log_dir_event_notification(context)
            case PreferredReplicaElection():
                machine = self._require_partitions()
                await on_preferred_replica_election_znode(self._zk, context, machine)
            case ElectLeadersRequested():
                machine = self._require_partitions()
                await self._election_requests.run_all(
                    lambda request: serve_election_request(self._zk, context, machine, request)
                )
            case AutoLeaderRebalance():
                await self._on_auto_leader_rebalance(context)
            case ControlledShutdownRequested():
                machine = self._require_partitions()
                await self._shutdown_requests.run_all(
                    lambda request: shut_down_broker(context, machine, request)
                )
            case PartitionModifications():
                await self._topic_watches.handle(context, self._require_partitions())
            case ZkPartitionReassignment():
                await self._require_reassignments().process_zk_request()
            case PartitionReassignmentIsrChange():
                await self._require_reassignments().maybe_complete()
            case AlterReassignmentsRequested():
                await self._pending_alters.run_all(self._require_reassignments())
            case _ if isinstance(event, SERVED_EVENTS):
                await self._served.serve(event, context)
        if self._reconcile_pending:
            await self._reconcile_all(context)
            self._reconcile_pending = False
            log.info("controller state reconciled after an earlier failure")
        await self._send_broker_requests(context)

    async def _send_broker_requests(self, context: ControllerContext) -> None:
        """Tell the brokers what this event changed (Kafka's sendRequestsToBrokers)."""
        if self._channel is None or self._planner is None:
            return
        requests = await self._planner.plan(context, self._extra_requests.take())
        if requests is not None:
            self._channel.send(requests)

    async def _on_controller_change(self) -> None:
        controller_id = await self._zk.get_controller_id()
        if self.is_active and controller_id != self.broker_id:
            log.info("broker %s is controller now: resigning", controller_id)
            self._deactivate()
        if controller_id is None:
            await self._elect()
        elif controller_id == self.broker_id and not self.is_active:
            # /controller names us but we do not act: a failed failover whose resignation did
            # not get through, or our previous session's znode. Nobody else will elect while
            # it stays, so delete it if this session owns it; another session's znode is left
            # to expire (resign_controller checks the owner), as Kafka waits for it.
            log.info("/controller names broker %d, which is not acting: resigning", controller_id)
            await self._resign()

    async def _elect(self) -> None:
        generation = self._session_generation
        won = await self._zk.try_elect_controller(self.broker_id)
        if won is None:
            log.info("broker %d lost the controller election", self.broker_id)
            return
        epoch, epoch_zk_version = won
        self._elected_generation = generation
        log.info("broker %d is controller, epoch %d", self.broker_id, epoch)
        controller_elected(self.broker_id, epoch)
        self._context_loaded.clear()
        try:
            await self._on_controller_failover(epoch, epoch_zk_version)
        except ControllerMovedError:
            raise
        except Exception:
            # Half a failover is worse than none: hand the role to whoever wins next, after a
            # pause so that a failure every broker hits does not become an election storm.
            log.exception(
                "controller failover failed: resigning in %.1f s", FAILED_FAILOVER_BACKOFF_S
            )
            self._deactivate()
            await self._sleep(FAILED_FAILOVER_BACKOFF_S)
            await self._resign()

    async def _resign(self) -> None:
        """Delete /controller if this session holds it. A connection loss leaves the outcome
        unknown and the znode possibly still ours, which would leave the cluster without a
        controller until the session expires: retry until the delete is confirmed or the
        session (and the ephemeral znode with it) is gone."""
        generation = self._session_generation
        while generation == self._session_generation:
            try:
                await self._zk.resign_controller(self.broker_id)
                return
            except SessionExpiredError:
                return
            except ConnectionLossError:
                log.warning("connection lost while deleting /controller: retrying")
                await self._sleep(RESIGN_RETRY_DELAY_S)

    async def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        # Kafka's first step too: brokers (and tools) read the feature znode's status.
        await self._zk.enable_feature_versioning(epoch_zk_version)
        # Watch before reading, so that no change between the reads and the watches is missed;
        # an event that fires meanwhile is handled after the failover and simply re-reads.
        self._active_watches.watch()
        context = await load_context(self._zk, epoch, epoch_zk_version)
        if self._fenced:
            raise ControllerMovedError("fenced from ZooKeeper during the failover")
        self._context = context
        self._context_loaded.set()
        self._partitions = PartitionStateMachine(
            self._zk,
            context,
            self._config.unclean_leader_election_enable,
            self.broker_id,
            on_unsettled=self._unsettled_retry.schedule,
            stats=self.stats,
        )
        self._extra_requests = ExtraRequests()
        self._deletion = TopicDeletionManager(
            self._zk,
            context,
            self._partitions,
            self._extra_requests,
            self._config.delete_topic_enable,
            answers_expected=self._channel is not None,
        )
        # Before the reconcile: it leaves the partitions of topics being deleted alone.
        await self._deletion.initialize()
        await self._reconcile_all(context, ChangeReason.CONTROLLER_FAILOVER)
        self._topic_watches.watch(context.assignments)
        self._reassignments = Reassignments(
            self._zk, context, self._partitions, self._enqueue_reassignment_isr_change
        )
        # Requests made through ZooKeeper meanwhile, and reassignments a predecessor left.
        await self._reassignments.initialize()
        # Every live broker learns the whole state from the new controller epoch.
        self._planner = RequestPlanner(self.broker_id)
        await self._send_broker_requests(context)
        # A request written while there was no controller fired no watch of ours.
        self._events.enqueue(PreferredReplicaElection())
        if self._config.auto_leader_rebalance_enable:
            self._rebalance_timer.schedule(FIRST_CHECK_DELAY_S)

    async def _reconcile_all(
        self, context: ControllerContext, reason: ChangeReason = ChangeReason.REPAIR
    ) -> None:
        """Adopt the ISR changes leaders announced, create missing partition states, fix every
        leader and ISR, carry out deletions: what a failover does, and what repairs a context
        that got ahead of (or fell behind) ZooKeeper."""
        # Notifications present at failover fire no watch: handle them here. (Kafka deletes
        # them unread before loading the context, which reads every state anyway; reading
        # them after the load costs a round trip for the partitions they name, and also
        # covers the retry after a failed ISR change event.)
        await self._on_isr_change_notification(context)
        # The context was loaded with every broker's offline replicas: notifications left
        # from before only need deleting, which this does after reconciling what they name.
        await self._on_log_dir_event_notification(context)
        partitions = self._require_partitions()
        all_topics = sorted(context.assignments)
        await partitions.initialize_partitions(context.partitions_without_state(all_topics))
        await partitions.reconcile(context.all_partitions(), reason)
        await self._require_deletion().resume_deletions()

    def _deactivate(self) -> None:
        self._active_watches.unwatch()
        # A new failover reconciles everything anyway.
        self._reconcile_pending = False
        self._reconcile_retry.cancel()
        self._unsettled_retry.cancel()
        self._topic_watches.unwatch_all()
        self._pending_alters.fail_all(NOT_CONTROLLER)
        if self._reassignments is not None:
            self._reassignments.stop()
            self._reassignments = None
        self._rebalance_timer.cancel()
        self._election_requests.fail_all(NOT_CONTROLLER)
        self._shutdown_requests.fail_all(NOT_CONTROLLER)
        self._served.fail_all(NOT_CONTROLLER)
        self._context_loaded.set()
        self._planner = None
        self._deletion = None
        self._answers.clear()
        if self._channel is not None:
            self._channel.close_all()
        if self._context is None:
            return
        log.info("broker %d stops acting as controller", self.broker_id)
        controller_resigned(self.broker_id, self._context.epoch)
        self._context = None
        self._partitions = None

    async def _on_broker_change(self, context: ControllerContext) -> None:
        machine = self._require_partitions()
        changes = await on_broker_change(self._zk, context, machine, self.broker_id)
        deletion = self._require_deletion()
        # Kafka's onBrokerFailure, then onBrokerStartup (a restarted broker gets both).
        if changes.failed:
            await deletion.on_brokers_failed(changes.failed)
        if changes.started:
            await self._require_reassignments().on_brokers_started(changes.started)
            await deletion.on_brokers_started(changes.started)

    async def _on_isr_change_notification(self, context: ControllerContext) -> None:
        if await on_isr_change_notification(self._zk, context, self._reassignments):
            self._events.enqueue(IsrChangeNotification())

    async def _on_log_dir_event_notification(self, context: ControllerContext) -> None:
        machine = self._require_partitions()
        if await on_log_dir_event_notification(
            self._zk, context, machine, self._extra_requests, self._deletion
        ):
            self._events.enqueue(LogDirEventNotification())

    async def _on_auto_leader_rebalance(self, context: ControllerContext) -> None:
        try:
            await check_leader_balance(
                self._zk,
                context,
                self._require_partitions(),
                self._config.leader_imbalance_per_broker_percentage,
            )
        finally:
            # Re-armed even after a failure, as Kafka does; resigning cancels it again.
            self._rebalance_timer.schedule(self._config.leader_imbalance_check_interval_seconds)

    def _require_reassignments(self) -> Reassignments:
        if self._reassignments is None:
            raise RuntimeError("reassignments used while not controller")
        return self._reassignments

    def _require_deletion(self) -> TopicDeletionManager:
        if self._deletion is None:
            raise RuntimeError("topic deletion used while not controller")
        return self._deletion

    def _require_partitions(self) -> PartitionStateMachine:
        if self._partitions is None:
            raise RuntimeError("partition state machine used while not controller")
        return self._partitions

    # ------------------------------------------------------------------ admin requests

    async def _active_context(self) -> ControllerContext | None:
        """The context once this broker acts as controller, or None when it does not. Kafka
        counts itself active from its election on and serves admin requests meanwhile; so a
        request that arrives while a won election's context loads waits for the load rather
        than answering NOT_CONTROLLER to a client that /controller sent here."""
        if self._context is None and not self._context_loaded.is_set():
            try:
                await asyncio.wait_for(self._context_loaded.wait(), CONTEXT_LOAD_WAIT_S)
            except TimeoutError:
                log.warning("controller context still loading after %.0f s", CONTEXT_LOAD_WAIT_S)
        return self._context

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownResult:
        """ControlledShutdown: move leadership off `broker_id` and take it out of ISRs (see
        controlled_shutdown.py); the answer names the partitions it still leads. Queued even
        while not active: an election in progress (the broker found us in /controller) ends
        before the request is handled, which then answers NOT_CONTROLLER only if we lost."""
        request = ShutdownRequest(broker_id, broker_epoch)
        future = self._shutdown_requests.add(request) if self._started else None
        if future is None:
            return ShutdownResult(NOT_CONTROLLER)
        self._events.enqueue(ControlledShutdownRequested())
        return await future

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResult:
        """AlterPartition from a partition leader: the ISR changes it asks for, written once
        the controller's event has run (see alter_partition.py)."""
        if await self._active_context() is None:
            return AlterPartitionResult(NOT_CONTROLLER)
        return await self._served.alter_partition(request)

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        """AllocateProducerIds: the next block of producer ids (see producer_ids.py)."""
        if await self._active_context() is None:
            return ProducerIdsBlock(NOT_CONTROLLER)
        return await self._served.allocate_producer_ids(ProducerIdsRequest(broker_id, broker_epoch))

    async def update_features(self, updates: list[FeatureUpdate]) -> dict[str, TopicError] | int:
        """UpdateFeatures: the outcome per feature (see features.py), or NOT_CONTROLLER. One at
        a time (Kafka runs each as a controller event), so that two do not interleave their
        reads and writes of /feature."""
        context = await self._active_context()
        if context is None:
            return NOT_CONTROLLER
        async with self._feature_updates:
            return await update_features(self._zk, context.epoch_zk_version, updates)

    async def create_topics(
        self, topics: list[NewTopic], validate_only: bool
    ) -> dict[str, TopicError]:
        """CreateTopics: per-topic Kafka error code and message (NONE on success)."""
        context = await self._active_context()
        if context is None:
            return {topic.name: TopicError(NOT_CONTROLLER) for topic in topics}
        return await create_topics(
            self._zk, context, self._config, self._rng, topics, validate_only
        )

    async def elect_leaders(
        self, partitions: list[TopicPartition], election_type: ElectionType
    ) -> ElectionResults:
        """ElectLeaders: the outcome per partition once the controller's event has run. The
        caller bounds the wait (cancelling it abandons the request)."""
        if not partitions or await self._active_context() is None:
            return dict.fromkeys(partitions, ElectionResult(NOT_CONTROLLER))
        future = self._election_requests.add(ElectionRequest(list(partitions), election_type))
        if future is None:
            busy = ElectionResult(UNKNOWN_SERVER_ERROR, "too many leader elections waiting")
            return dict.fromkeys(partitions, busy)
        self._events.enqueue(ElectLeadersRequested())
        return await future

    async def create_partitions(
        self, requests: list[NewPartitions], validate_only: bool
    ) -> dict[str, TopicError]:
        """CreatePartitions: per-topic Kafka error code and message (NONE on success)."""
        context = await self._active_context()
        if context is None:
            return {request.topic: TopicError(NOT_CONTROLLER) for request in requests}
        return await create_partitions(
            self._zk, context, requests, validate_only, self._config.create_topics_max_partitions
        )

    async def alter_partition_reassignments(
        self, request: Request
    ) -> dict[TopicPartition, TopicError] | int:
        """AlterPartitionReassignments: an error per partition once the controller's event
        has started them, or a top-level error code (NOT_CONTROLLER)."""
        if self._context is None:
            return NOT_CONTROLLER
        future = self._pending_alters.add(request)
        self._events.enqueue(AlterReassignmentsRequested())
        return await future

    def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment] | int:
        """ListPartitionReassignments: the ongoing ones (of `partitions`, default all), or
        NOT_CONTROLLER."""
        if self._reassignments is None:
            return NOT_CONTROLLER
        return self._reassignments.ongoing(partitions)

    def topic_deletion_halted(self, topic: str) -> bool:
        """This controller started deleting `topic`, and the deletion waits for a broker to
        come back: DeleteTopics is answered then rather than when the request times out."""
        return self._deletion is not None and self._deletion.is_halted(topic)

    async def delete_topics(self, names: list[str]) -> dict[str, int]:
        """DeleteTopics: mark each existing topic for deletion; error code per topic."""
        context = await self._active_context()
        if context is None:
            return dict.fromkeys(names, NOT_CONTROLLER)
        return await delete_topics(self._zk, context, self._config, names)
