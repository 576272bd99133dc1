"""The few metrics the lab reads from a broker's Prometheus text."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from .snapshot import BrokerMetrics

MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin"
LOG_END_OFFSET = "kafka_log_log_logendoffset"


def parse(text: str) -> BrokerMetrics:
    """All-topics messages in (the sample without a `topic` label) and each log end offset."""
    messages_in = 0.0
    log_ends: dict[tuple[str, int], int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:  # by sample name: the family's depends on the HELP line
            if sample.name == f"{MESSAGES_IN}_total" and "topic" not in sample.labels:
                messages_in = sample.value
            elif sample.name == LOG_END_OFFSET:
                topic = sample.labels.get("topic")
                partition = sample.labels.get("partition", "")
                if topic is not None and partition.isdigit():
                    log_ends[(topic, int(partition))] = int(sample.value)
    return BrokerMetrics(messages_in_total=messages_in, log_end_offsets=log_ends)


class RateTracker:
    """Messages in per second summed over brokers, from each broker's own counter: a broker
    that died or restarted (its counter went back) adds nothing to that interval."""

    def __init__(self, history_points: int) -> None:
        self._history_points = history_points
        self._previous: dict[int, tuple[float, float]] = {}  # broker -> (time, total)
        self.history: list[tuple[float, float]] = []

    def observe(self, now_s: float, totals: dict[int, float]) -> None:
        rate = 0.0
        for broker_id, total in totals.items():
            previous = self._previous.get(broker_id)
            if previous is not None and now_s > previous[0] and total >= previous[1]:
                rate += (total - previous[1]) / (now_s - previous[0])
        self._previous = {broker_id: (now_s, total) for broker_id, total in totals.items()}
        self.history.append((now_s, rate))
        del self.history[: -self._history_points]
