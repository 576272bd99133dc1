"""One transactional id's state at its coordinator, and the decisions its requests lead to
(Kafka's TransactionMetadata and the checks of its TransactionCoordinator).

Each decision either refuses the request with Kafka's error code (`TxnRefused`) or returns
the value to write to `__transaction_state` (a transit). The coordinator writes it and only
then applies it (`apply`); while a write is in flight (`pending`), every other request gets
CONCURRENT_TRANSACTIONS, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.coordinator.transaction.records import TopicPartition, TxnLogValue
from broker.coordinator.transaction.state import TxnState, check_transition

NO_PRODUCER_EPOCH = -1
# Kafka bumps to a new producer id once the epoch reaches Short.MaxValue - 1.
MAX_PRODUCER_EPOCH = 32767 - 1


class TxnRefused(Exception):
    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    transaction_timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_timestamp_ms: int = -1
    last_update_timestamp_ms: int = -1
    pending: TxnLogValue | None = None  # written but not yet applied

    @classmethod
    def from_log(cls, transactional_id: str, value: TxnLogValue) -> TxnMetadata:
        metadata = cls(transactional_id, value.producer_id)
        metadata.apply(value)
        return metadata

    def apply(self, value: TxnLogValue) -> None:
        """The write of `value` succeeded (or was read back while loading)."""
        self.producer_id = value.producer_id
        self.producer_epoch = value.producer_epoch
        self.transaction_timeout_ms = value.transaction_timeout_ms
        self.state = value.state
        self.partitions = set(value.partitions)
        self.start_timestamp_ms = value.start_timestamp_ms
        self.last_update_timestamp_ms = value.last_update_timestamp_ms
        self.pending = None

    # -- decisions -------------------------------------------------------------------------

    def prepare_init(
        self,
        timeout_ms: int,
        now_ms: int,
        new_producer_id: int | None = None,
        expected: tuple[int, int] | None = None,
    ) -> TxnLogValue:
        """InitProducerId for an idle id: the next epoch (a new producer id, from
        `new_producer_id`, once the epoch is exhausted), no partitions. A producer that
        names its current id and epoch (KIP-360, v3+) must name this id's."""
        self._check_idle()
        if expected is not None and expected != (self.producer_id, self.producer_epoch):
            raise TxnRefused(
                ErrorCode.producer_fenced,
                f"producer {expected[0]} epoch {expected[1]} is not the current"
                f" {self.producer_id} epoch {self.producer_epoch}",
            )
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnRefused(ErrorCode.concurrent_transactions)
        if self.state == TxnState.ONGOING:
            raise TxnRefused(ErrorCode.concurrent_transactions, "fence the open one first")
        if self.state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            raise TxnRefused(ErrorCode.unknown_server_error, f"{self.state.kafka_name}")
        producer_id, epoch = self.producer_id, self.producer_epoch + 1
        if self.producer_epoch >= MAX_PRODUCER_EPOCH:
            if new_producer_id is None:
                raise ValueError("the epoch is exhausted: a new producer id is needed")
            producer_id, epoch = new_producer_id, 0
        return self._transit(TxnState.EMPTY, now_ms, producer_id, epoch, timeout_ms, set(), -1)

    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH

    def prepare_fence(self, now_ms: int) -> TxnLogValue:
        """A new instance initialised while a transaction is open: abort it with a bumped
        epoch, which fences the old instance (Kafka's prepareFenceProducerEpoch)."""
        self._check_idle()
        epoch = min(self.producer_epoch + 1, MAX_PRODUCER_EPOCH + 1)
        return self._transit(TxnState.PREPARE_ABORT, now_ms, epoch=epoch)

    def prepare_add_partitions(
        self, producer_id: int, producer_epoch: int, added: Iterable[TopicPartition], now_ms: int
    ) -> TxnLogValue | None:
        """AddPartitionsToTxn / AddOffsetsToTxn; None when every partition is in already."""
        self._check_producer(producer_id, producer_epoch)
        self._check_idle()
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnRefused(ErrorCode.concurrent_transactions)
        if self.state in (TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
            raise TxnRefused(ErrorCode.invalid_txn_state, self.state.kafka_name)
        new = set(added)
        if self.state == TxnState.ONGOING and new <= self.partitions:
            return None
        starting = self.state != TxnState.ONGOING
        return self._transit(
            TxnState.ONGOING,
            now_ms,
            partitions=self.partitions | new if not starting else new,
            start_ms=now_ms if starting else self.start_timestamp_ms,
        )

    def prepare_end(
        self, producer_id: int, producer_epoch: int, commit: bool, now_ms: int
    ) -> TxnLogValue | None:
        """EndTxn: PrepareCommit or PrepareAbort; None for a retry of an end that completed."""
        self._check_producer(producer_id, producer_epoch)
        self._check_idle()
        wanted = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        preparing = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if self.state == TxnState.ONGOING:
            return self._transit(preparing, now_ms)
        if self.state == wanted:
            return None  # the retry of a completed end
        if self.state == preparing:
            raise TxnRefused(ErrorCode.concurrent_transactions)
        raise TxnRefused(
            ErrorCode.invalid_txn_state,
            f"cannot {'commit' if commit else 'abort'} in state {self.state.kafka_name}",
        )

    def prepare_complete(self, now_ms: int) -> TxnLogValue:
        """Every marker is written: CompleteCommit or CompleteAbort."""
        target = (
            TxnState.COMPLETE_COMMIT
            if self.state == TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT
        )
        return self._transit(target, now_ms)

    def expired(self, horizon_ms: int) -> bool:
        """Idle (no transaction open or ending, no write in flight) and last changed before
        `horizon_ms`: `transactional.id.expiration.ms` has passed, as Kafka judges it."""
        idle = self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        return idle and self.pending is None and self.last_update_timestamp_ms < horizon_ms

    def prepare_dead(self, now_ms: int) -> TxnLogValue:
        """Removal of an expired id: its tombstone is in flight (requests meanwhile get
        CONCURRENT_TRANSACTIONS); it is forgotten once written."""
        return self._transit(TxnState.DEAD, now_ms)

    # -- checks ----------------------------------------------------------------------------

    def _check_producer(self, producer_id: int, producer_epoch: int) -> None:
        if producer_id != self.producer_id:
            raise TxnRefused(ErrorCode.invalid_producer_id_mapping)
        if producer_epoch != self.producer_epoch:
            raise TxnRefused(
                ErrorCode.producer_fenced,
                f"epoch {producer_epoch} is not the current {self.producer_epoch}",
            )

    def _check_idle(self) -> None:
        if self.pending is not None:
            raise TxnRefused(ErrorCode.concurrent_transactions, "a state write is in flight")

    def _transit(
        self,
        state: TxnState,
        now_ms: int,
        producer_id: int | None = None,
        epoch: int | None = None,
        timeout_ms: int | None = None,
        partitions: set[TopicPartition] | None = None,
        start_ms: int | None = None,
    ) -> TxnLogValue:
        check_transition(self.transactional_id, self.state, state)
        value = TxnLogValue(
            producer_id=self.producer_id if producer_id is None else producer_id,
            producer_epoch=self.producer_epoch if epoch is None else epoch,
            transaction_timeout_ms=self.transaction_timeout_ms
            if timeout_ms is None
            else timeout_ms,
            state=state,
            partitions=frozenset(self.partitions if partitions is None else partitions),
            last_update_timestamp_ms=now_ms,
            start_timestamp_ms=self.start_timestamp_ms if start_ms is None else start_ms,
        )
        self.pending = value
        return value
