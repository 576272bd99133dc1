"""What the controller counts and times, read by the broker's metrics endpoint (Kafka's
ControllerStats and the controller event manager's timers).

Kafka times each controller event under the rate-and-time metric of its controller state:
a BrokerChange (a broker lost or registered, and the elections it causes) under
LeaderElectionRateAndTimeMs, a TopicChange under TopicChangeRateAndTimeMs, and so on.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Dropwizard's exponentially decaying reservoir (Kafka's Yammer timers) holds 1,028 samples;
# this keeps the latest as many, which is what a quantile over a failover needs.
RESERVOIR_SAMPLES = 1028
QUANTILES = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)

# Controller event kinds and the rate-and-time metric Kafka files them under.
EVENT_TIMERS = {
    "BrokerChange": "LeaderElectionRateAndTimeMs",
    "TopicChange": "TopicChangeRateAndTimeMs",
    "TopicDeletion": "TopicDeletionRateAndTimeMs",
    "IsrChangeNotification": "IsrChangeRateAndTimeMs",
    "LogDirEventNotification": "LogDirChangeRateAndTimeMs",
    "PreferredReplicaElection": "ManualLeaderBalanceRateAndTimeMs",
    "ElectLeadersRequested": "ManualLeaderBalanceRateAndTimeMs",
    "AutoLeaderRebalance": "AutoLeaderBalanceRateAndTimeMs",
    "ControlledShutdownRequested": "ControlledShutdownRateAndTimeMs",
    "ZkPartitionReassignment": "PartitionReassignmentRateAndTimeMs",
    "AlterReassignmentsRequested": "PartitionReassignmentRateAndTimeMs",
    "PartitionModifications": "TopicChangeRateAndTimeMs",
    "ControllerChange": "ControllerChangeRateAndTimeMs",
    "Startup": "ControllerChangeRateAndTimeMs",
}


@dataclass
class Timer:
    """A count and the latest RESERVOIR_SAMPLES durations, in milliseconds."""

    count: int = 0
    samples_ms: deque[float] = field(default_factory=lambda: deque(maxlen=RESERVOIR_SAMPLES))

    def record(self, elapsed_ms: float) -> None:
        self.count += 1
        self.samples_ms.append(elapsed_ms)

    def quantiles(self) -> list[tuple[float, float]]:
        """(quantile, milliseconds) for QUANTILES, as Dropwizard's snapshot picks them; all 0
        before the first sample."""
        ordered = sorted(self.samples_ms)
        if not ordered:
            return [(q, 0.0) for q in QUANTILES]
        return [(q, ordered[min(len(ordered) - 1, int(q * len(ordered)))]) for q in QUANTILES]


@dataclass
class ControllerStats:
    timers: dict[str, Timer] = field(default_factory=dict)
    unclean_leader_elections: int = 0

    def record_event(self, kind: str, elapsed_ms: float) -> None:
        name = EVENT_TIMERS.get(kind)
        if name is not None:
            self.timers.setdefault(name, Timer()).record(elapsed_ms)

    def timer(self, name: str) -> Timer:
        return self.timers.get(name) or Timer()
