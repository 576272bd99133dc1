"""Leader election decisions as pure functions (no ZooKeeper, no asyncio).

The controller feeds these with what it knows (assignment order, ISR, live brokers) and writes
whatever they return. Keeping them pure lets the tests cover every scenario by name.

Rules (Kafka's, ZooKeeper mode):
- clean election: the first replica in assignment order that is alive and in the ISR; the new
  ISR is the live part of the old ISR.
- unclean election (`unclean.leader.election.enable=true`): the first live replica in assignment
  order; the new ISR is just that leader, because nobody else is known to be in sync with it.
- brokers in controlled shutdown (`shutting_down`) are live but never candidates, and an
  election leaves them out of the new ISR (Kafka's liveBrokerIds excludes them).
- no candidate: the partition goes offline (leader -1). Dead replicas leave the ISR, except that
  the ISR never becomes empty: the last member stays, so a clean election can pick it when it
  returns (Kafka keeps the last ISR member for exactly that reason).
- every change the controller makes bumps leader_epoch.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A decision: the leader (NO_LEADER when offline), the ISR and whether data may be lost."""

    leader: int
    isr: list[int]
    unclean: bool = False


def elect_offline_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_brokers: Collection[int],
    unclean_enabled: bool,
    shutting_down: Collection[int] = (),
) -> LeaderAndIsr | None:
    """Choose a leader for a partition whose leader is gone; None when nobody qualifies."""
    eligible = set(live_brokers).difference(shutting_down)
    for replica in assignment:
        if replica in eligible and replica in isr:
            live_isr = [member for member in isr if member in eligible]
            return LeaderAndIsr(leader=replica, isr=live_isr)
    if not unclean_enabled:
        return None
    for replica in assignment:
        if replica in eligible:
            return LeaderAndIsr(leader=replica, isr=[replica], unclean=True)
    return None


def shrink_isr(isr: Sequence[int], live_brokers: Collection[int]) -> list[int]:
    """Drop dead members; an ISR whose members all died keeps its last member."""
    live_isr = [member for member in isr if member in live_brokers]
    if live_isr or not isr:
        return live_isr
    return [isr[-1]]


def initial_leader_and_isr(
    assignment: Sequence[int], live_brokers: Collection[int]
) -> LeaderAndIsr | None:
    """State for a new partition: first live replica leads, the live replicas form the ISR.

    None when no replica is alive: the partition stays without a state znode until one is.
    """
    live_replicas = [replica for replica in assignment if replica in live_brokers]
    if not live_replicas:
        return None
    return LeaderAndIsr(leader=live_replicas[0], isr=live_replicas)


def leader_and_isr_after_broker_change(
    leader: int,
    isr: Sequence[int],
    assignment: Sequence[int],
    live_brokers: Collection[int],
    unclean_enabled: bool,
    shutting_down: Collection[int] = (),
) -> LeaderAndIsr | None:
    """What the partition should look like given the live brokers; None when nothing changes.

    A live leader keeps leading and only loses dead ISR members. A dead (or absent) leader is
    replaced by an election; without a candidate the partition goes offline.
    """
    if leader != NO_LEADER and leader in live_brokers:
        new_isr = shrink_isr(isr, live_brokers)
        if new_isr == list(isr):
            return None
        return LeaderAndIsr(leader=leader, isr=new_isr)
    elected = elect_offline_leader(assignment, isr, live_brokers, unclean_enabled, shutting_down)
    if elected is not None:
        return elected
    offline = LeaderAndIsr(leader=NO_LEADER, isr=shrink_isr(isr, live_brokers))
    if offline.leader == leader and offline.isr == list(isr):
        return None
    return offline


def elect_preferred_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_brokers: Collection[int],
    shutting_down: Collection[int] = (),
) -> LeaderAndIsr | None:
    """Preferred leader election: the first assigned replica leads if it is alive, in the
    ISR and not in controlled shutdown (else None: moving leadership to a replica that may
    lack data, or is about to stop, is never preferred). The ISR stays as it is."""
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred not in live_brokers or preferred not in isr or preferred in shutting_down:
        return None
    return LeaderAndIsr(leader=preferred, isr=list(isr))
