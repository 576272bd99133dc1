"""The states of a classic consumer group and the one table of legal transitions.

Kafka's `GroupMetadata.scala` keeps, per state, the set of states a group may come from
(`validPreviousStates`); `transition` refuses anything else, loudly. What each state does:

- Empty: no members (perhaps committed offsets). A join from a new member starts the first
  rebalance (after `group.initial.rebalance.delay.ms`); sync, heartbeat and leave answer
  UNKNOWN_MEMBER_ID.
- PreparingRebalance: JoinGroups are parked until every known member rejoined or the
  rebalance timeout passed; heartbeats and syncs answer REBALANCE_IN_PROGRESS.
- CompletingRebalance: the generation is formed; followers' SyncGroups are parked until the
  leader's SyncGroup brings the assignment (and it is persisted); heartbeats answer NONE.
- Stable: heartbeats answer NONE; a SyncGroup gets the member's current assignment; a join
  by the leader or with changed metadata starts a rebalance.
- Dead: the group was deleted or its coordinator moved; final.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import Final, Protocol


class GroupState(enum.Enum):
    # The values are Kafka's names, which DescribeGroups and ListGroups put on the wire.
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState

VALID_PREVIOUS_STATES: Final[Mapping[GroupState, frozenset[GroupState]]] = MappingProxyType(
    {
        _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
        _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
        _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
        # Dead -> Dead is allowed so that unloading a group that is being deleted is harmless.
        _S.DEAD: frozenset(GroupState),
        _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    }
)


class InvalidStateTransition(Exception):
    """A state change the table above does not allow: a bug in the coordinator."""

    def __init__(self, group_id: str, current: GroupState, target: GroupState) -> None:
        allowed = sorted(state.value for state in VALID_PREVIOUS_STATES[target])
        super().__init__(
            f"group {group_id!r} must be in one of {allowed} to move to {target.value}, "
            f"but it is {current.value}"
        )
        self.group_id = group_id
        self.current = current
        self.target = target


class GroupInvariantError(AssertionError):
    """A group invariant broke; raised explicitly so that `python -O` cannot strip it."""


def check_invariant(condition: bool, message: str) -> None:
    if not condition:
        raise GroupInvariantError(message)


class Stateful(Protocol):
    """What `transition` needs of a group (kept structural so this module imports nothing)."""

    @property
    def group_id(self) -> str: ...

    state: GroupState
    current_state_timestamp_ms: int | None

    @property
    def clock_ms(self) -> Callable[[], int]: ...


def is_valid_transition(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def can_rebalance(state: GroupState) -> bool:
    return is_valid_transition(state, GroupState.PREPARING_REBALANCE)


def transition(group: Stateful, new_state: GroupState) -> None:
    """Move `group` to `new_state`, stamping the time, or raise `InvalidStateTransition`."""
    if not is_valid_transition(group.state, new_state):
        raise InvalidStateTransition(group.group_id, group.state, new_state)
    group.state = new_state
    # Kept in GroupMetadataValue v2+ so that offsets expire relative to when a group emptied.
    group.current_state_timestamp_ms = group.clock_ms()


def states_named(names: Collection[str]) -> frozenset[GroupState]:
    """The states a ListGroups filter names; Kafka compares case-insensitively and ignores
    names it does not know."""
    wanted = {name.lower() for name in names}
    return frozenset(state for state in GroupState if state.value.lower() in wanted)
