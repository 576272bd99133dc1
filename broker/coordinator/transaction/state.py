"""The states of a transactional id and the one table of legal transitions (Kafka's
`TransactionState.validPreviousStates`).

- Empty: the producer is initialised (InitProducerId) and has no transaction open.
- Ongoing: AddPartitionsToTxn / AddOffsetsToTxn opened one; more partitions may join it.
- PrepareCommit / PrepareAbort: EndTxn (or the coordinator, for a timed-out or fenced
  transaction) decided; the markers are being written to every partition of the transaction.
- CompleteCommit / CompleteAbort: every marker is written; the next transaction may start.
- PrepareEpochFence: a new producer instance initialised while a transaction was Ongoing; the
  old one is aborted with a bumped epoch first.
- Dead: the transactional id expired (`transactional.id.expiration.ms`) and is being removed.

The numbers are Kafka's ids, written in TransactionLogValue's TransactionStatus field.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions put on the wire."""
        return _KAFKA_NAMES[self]

    @property
    def is_completed(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


_KAFKA_NAMES: Final[Mapping[TxnState, str]] = MappingProxyType(
    {
        TxnState.EMPTY: "Empty",
        TxnState.ONGOING: "Ongoing",
        TxnState.PREPARE_COMMIT: "PrepareCommit",
        TxnState.PREPARE_ABORT: "PrepareAbort",
        TxnState.COMPLETE_COMMIT: "CompleteCommit",
        TxnState.COMPLETE_ABORT: "CompleteAbort",
        TxnState.DEAD: "Dead",
        TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
    }
)

_T = TxnState
_AFTER_A_TRANSACTION = frozenset({_T.EMPTY, _T.COMPLETE_COMMIT, _T.COMPLETE_ABORT})

VALID_PREVIOUS_STATES: Final[Mapping[TxnState, frozenset[TxnState]]] = MappingProxyType(
    {
        _T.EMPTY: _AFTER_A_TRANSACTION,
        _T.ONGOING: _AFTER_A_TRANSACTION | {_T.ONGOING},
        _T.PREPARE_COMMIT: frozenset({_T.ONGOING}),
        _T.PREPARE_ABORT: _AFTER_A_TRANSACTION | {_T.ONGOING, _T.PREPARE_EPOCH_FENCE},
        _T.COMPLETE_COMMIT: frozenset({_T.PREPARE_COMMIT}),
        _T.COMPLETE_ABORT: frozenset({_T.PREPARE_ABORT}),
        _T.DEAD: _AFTER_A_TRANSACTION,
        _T.PREPARE_EPOCH_FENCE: frozenset({_T.ONGOING}),
    }
)


class InvalidTxnTransition(Exception):
    """A state change the table above does not allow: a bug in the coordinator."""

    def __init__(self, transactional_id: str, current: TxnState, target: TxnState) -> None:
        allowed = sorted(state.kafka_name for state in VALID_PREVIOUS_STATES[target])
        super().__init__(
            f"transactional id {transactional_id!r} must be in one of {allowed} to move to"
            f" {target.kafka_name}, but it is {current.kafka_name}"
        )


def check_transition(transactional_id: str, current: TxnState, target: TxnState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise InvalidTxnTransition(transactional_id, current, target)
