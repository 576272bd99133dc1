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

import logging
import random

from controller.config import ControllerConfig
from controller.context import ControllerContext, load_context, read_topics
from controller.errors import NOT_CONTROLLER, TopicError
from controller.event_manager import ControllerEventManager
from controller.events import (
    BrokerChange,
    ControllerChange,
    ControllerEvent,
    Resign,
    Startup,
    TopicChange,
    TopicDeletion,
)
from controller.partition_state_machine import PartitionStateMachine
from controller.topic_admin import create_topics, delete_topics
from controller.topic_creation import NewTopic
from controller.topic_deletion import delete_marked_topics
from controller.zk_api import ControllerZk
from zk.errors import ControllerMovedError, ZkError
from zk.znodes import (
    BrokerIdsZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    TopicsZNode,
)

log = logging.getLogger(__name__)


class Controller:
    def __init__(
        self,
        kafka_zk: ControllerZk,
        broker_id: int,
        config: ControllerConfig,
        rng: random.Random | None = None,
    ) -> None:
        self._zk = kafka_zk
        self.broker_id = broker_id
        self._config = config
        self._rng = rng or random.Random()
        self._events = ControllerEventManager(self._process)
        self._context: ControllerContext | None = None
        self._partitions: PartitionStateMachine | None = None
        self._started = False
        # Counts expired ZooKeeper sessions; an election won under an older session is void.
        self._session_generation = 0
        self._elected_generation = -1
        # /brokers/ids, /brokers/topics and /admin/delete_topics are watched only while active.
        self._watching_active_paths = False

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
        self._zk.client.unwatch_data(ControllerZNode.path(), self._enqueue_controller_change)
        if self.is_active:
            self._deactivate()
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

    def _enqueue_broker_change(self) -> None:
        self._events.enqueue(BrokerChange())

    def _enqueue_topic_change(self) -> None:
        self._events.enqueue(TopicChange())

    def _enqueue_topic_deletion(self) -> None:
        self._events.enqueue(TopicDeletion())

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

    async def _dispatch(self, event: ControllerEvent) -> None:
        match event:
            case Startup() | ControllerChange():
                await self._on_controller_change()
            case Resign() if self._elected_generation != self._session_generation:
                self._deactivate()
            case BrokerChange() if self._context is not None:
                await self._on_broker_change(self._context)
            case TopicChange() if self._context is not None:
                await self._on_topic_change(self._context)
            case TopicDeletion() if self._context is not None:
                await self._on_topic_deletion(self._context)
            case _:
                pass  # an active-only event that arrived after resignation

    async def _on_controller_change(self) -> None:
        controller_id = await self._zk.get_controller_id()
        if self.is_active and controller_id != self.broker_id:
            log.info("broker %s is controller now: resigning", controller_id)
            self._deactivate()
        if controller_id is None:
            await self._elect()

    async def _elect(self) -> None:
        generation = self._session_generation
        won = await self._zk.try_elect_controller(self.broker_id)
        if won is None:
            log.info("broker %d lost the controller election", self.broker_id)
            return
        epoch, epoch_zk_version = won
        self._elected_generation = generation
        log.info("broker %d is controller, epoch %d", self.broker_id, epoch)
        try:
            await self._on_controller_failover(epoch, epoch_zk_version)
        except ControllerMovedError:
            raise
        except Exception:
            # Half a failover is worse than none: hand the role to whoever wins next.
            log.exception("controller failover failed: resigning")
            self._deactivate()
            await self._zk.resign_controller(self.broker_id)

    async def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        # Watch before reading, so that no change between the reads and the watches is missed;
        # an event that fires meanwhile is handled after the failover and simply re-reads.
        self._watch_active_paths()
        context = await load_context(self._zk, epoch, epoch_zk_version)
        self._context = context
        self._partitions = PartitionStateMachine(
            self._zk, context, self._config.unclean_leader_election_enable
        )
        all_topics = sorted(context.assignments)
        await self._partitions.initialize_partitions(context.partitions_without_state(all_topics))
        await self._partitions.reconcile(context.all_partitions())
        await self._delete_marked_topics(context)

    def _deactivate(self) -> None:
        self._unwatch_active_paths()
        if self._context is None:
            return
        log.info("broker %d stops acting as controller", self.broker_id)
        self._context = None
        self._partitions = None

    async def _on_broker_change(self, context: ControllerContext) -> None:
        brokers = await self._zk.get_brokers_with_epochs()
        epochs = {broker_id: epoch for broker_id, (_, epoch) in brokers.items()}
        previous = context.broker_epochs
        dead = set(previous) - set(epochs)
        new = set(epochs) - set(previous)
        # Re-registered between two reads: it restarted, and may have lost what it had not
        # flushed, so it is handled as a death followed by a start (Kafka's bounced brokers).
        bounced = {b for b in set(epochs) & set(previous) if epochs[b] != previous[b]}
        if not dead and not new and not bounced:
            return
        log.info(
            "brokers changed: new %s, dead %s, restarted %s",
            sorted(new),
            sorted(dead),
            sorted(bounced),
        )
        partitions = self._require_partitions()
        if bounced:
            context.live_brokers = set(epochs) - bounced
            await partitions.reconcile(context.all_partitions())
        context.live_brokers = set(epochs)
        context.broker_epochs = epochs
        all_topics = sorted(context.assignments)
        await partitions.initialize_partitions(context.partitions_without_state(all_topics))
        await partitions.reconcile(context.all_partitions())

    async def _on_topic_change(self, context: ControllerContext) -> None:
        topics = set(await self._zk.get_all_topics())
        for gone in set(context.assignments) - topics:
            context.remove_topic(gone)
        new_topics = topics - set(context.assignments)
        if not new_topics:
            return
        for topic, (assignment, states) in (await read_topics(self._zk, new_topics)).items():
            context.add_topic(topic, assignment, states)
        partitions = self._require_partitions()
        await partitions.initialize_partitions(context.partitions_without_state(new_topics))
        await partitions.reconcile(context.partitions_of(new_topics))

    async def _on_topic_deletion(self, context: ControllerContext) -> None:
        context.topics_queued_for_deletion = set(await self._zk.get_topics_pending_deletion())
        await self._delete_marked_topics(context)

    async def _delete_marked_topics(self, context: ControllerContext) -> None:
        if not context.topics_queued_for_deletion:
            return
        if not self._config.delete_topic_enable:
            log.warning(
                "delete.topic.enable=false: ignoring deletion of %s",
                sorted(context.topics_queued_for_deletion),
            )
            return
        await delete_marked_topics(
            self._zk,
            context,
            self._require_partitions(),
            set(context.topics_queued_for_deletion),
        )

    def _require_partitions(self) -> PartitionStateMachine:
        if self._partitions is None:
            raise RuntimeError("partition state machine used while not controller")
        return self._partitions

    def _watch_active_paths(self) -> None:
        if self._watching_active_paths:
            return
        self._watching_active_paths = True
        self._zk.client.watch_children(BrokerIdsZNode.path(), self._enqueue_broker_change)
        self._zk.client.watch_children(TopicsZNode.path(), self._enqueue_topic_change)
        self._zk.client.watch_children(DeleteTopicsZNode.path(), self._enqueue_topic_deletion)

    def _unwatch_active_paths(self) -> None:
        if not self._watching_active_paths:
            return
        self._watching_active_paths = False
        self._zk.client.unwatch_children(BrokerIdsZNode.path(), self._enqueue_broker_change)
        self._zk.client.unwatch_children(TopicsZNode.path(), self._enqueue_topic_change)
        self._zk.client.unwatch_children(DeleteTopicsZNode.path(), self._enqueue_topic_deletion)

    # ------------------------------------------------------------------ admin requests

    async def create_topics(
        self, topics: list[NewTopic], validate_only: bool
    ) -> dict[str, TopicError]:
        """CreateTopics: per-topic Kafka error code and message (NONE on success)."""
        context = self._context
        if context is None:
            return {topic.name: TopicError(NOT_CONTROLLER) for topic in topics}
        return await create_topics(
            self._zk, context, self._config, self._rng, topics, validate_only
        )

    async def delete_topics(self, names: list[str]) -> dict[str, int]:
        """DeleteTopics: mark each existing topic for deletion; error code per topic."""
        context = self._context
        if context is None:
            return dict.fromkeys(names, NOT_CONTROLLER)
        return await delete_topics(self._zk, context, self._config, names)
