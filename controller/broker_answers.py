"""What the controller does with the brokers' answers to its requests (Kafka's
processLeaderAndIsrResponseReceived and processTopicDeletionStopReplicaResponseReceived).

The channel hands each answer over on the event loop; it waits in `BrokerAnswers` until the
controller's event task takes the queue (one BrokerAnswersReceived event for any number of
answers). An answer sent under an earlier controller epoch, or by a broker's earlier life, is
dropped: what it says was about requests the present state no longer rests on.

- LeaderAndIsr: a request refused as a whole is logged (the channel did) and changes nothing.
  Otherwise the partitions answered KAFKA_STORAGE_ERROR are the broker's replicas in failed
  log dirs, those answered NONE are online there: the broker's offline replicas become the
  earlier ones less the online plus the failed. Newly offline replicas are logged on the state
  change log ("Mark replicas ... as offline", as Kafka writes it) and handled as Kafka's
  onReplicasBecomeOffline: leaders elected for the partitions they led, removed from ISRs (no
  election picks them until the broker registers again), and a topic deletion waiting on them
  fails there. Other partition errors are only logged.
- StopReplica for a topic deletion's replicas: each replica answered without an error is
  deleted, any other is ineligible (controller/topic_deletion.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from controller.broker_requests import AnsweredRequest, BrokerAnswer
from controller.context import ControllerContext, TopicPartition
from controller.partition_state_machine import PartitionStateMachine
from controller.state_change_log import ChangeReason, replicas_marked_offline
from controller.topic_deletion import TopicDeletionManager

log = logging.getLogger(__name__)

NONE = int(ErrorCode.none)
KAFKA_STORAGE_ERROR = int(ErrorCode.kafka_storage_error)
# Answers waiting for the event task; beyond it the oldest go (a broker answers each request
# once, so only a controller stuck for long gets there).
MAX_WAITING_ANSWERS = 100_000


class BrokerAnswers:
    """Answers waiting for the controller's event task."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._waiting: list[BrokerAnswer] = []

    def add(self, answer: BrokerAnswer) -> None:
        if len(self._waiting) >= MAX_WAITING_ANSWERS:
            log.warning("dropping the oldest controller request answer: too many waiting")
            del self._waiting[0]
        self._waiting.append(answer)
        self._wake()

    def take(self) -> list[BrokerAnswer]:
        taken, self._waiting = self._waiting, []
        return taken

    def clear(self) -> None:
        self._waiting.clear()


async def on_broker_answers(
    answers: list[BrokerAnswer],
    controller_id: int,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    deletion: TopicDeletionManager,
) -> None:
    for answer in answers:
        if (
            answer.controller_epoch != context.epoch
            or answer.broker_id not in context.live_brokers
            or context.broker_epochs.get(answer.broker_id) != answer.broker_epoch
        ):
            continue
        if answer.request is AnsweredRequest.LEADER_AND_ISR:
            await _on_leader_and_isr_answer(answer, controller_id, context, partitions, deletion)
        else:
            await deletion.on_stop_replica_answer(answer.broker_id, answer.partition_errors)


async def _on_leader_and_isr_answer(
    answer: BrokerAnswer,
    controller_id: int,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    deletion: TopicDeletionManager,
) -> None:
    if answer.error_code != NONE:
        return  # logged by the channel, as Kafka's controller logs it
    broker_id = answer.broker_id
    failed: set[TopicPartition] = set()
    online: set[TopicPartition] = set()
    for topic, partition, error in answer.partition_errors:
        if error == KAFKA_STORAGE_ERROR:
            failed.add((topic, partition))
        elif error == NONE:
            online.add((topic, partition))
    previous = context.offline_replicas.get(broker_id, frozenset())
    current = (previous - online) | failed
    if current == previous:
        return
    if current:
        context.offline_replicas[broker_id] = frozenset(current)
    else:
        context.offline_replicas.pop(broker_id, None)
    newly_offline = sorted(current - previous)
    if not newly_offline:
        return
    replicas_marked_offline(controller_id, context.epoch, newly_offline, broker_id)
    await deletion.on_replicas_offline((*tp, broker_id) for tp in newly_offline)
    await partitions.reconcile(newly_offline, ChangeReason.LOG_DIR_FAILURE)
