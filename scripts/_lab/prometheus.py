"""The metrics the lab reads from a broker's Prometheus text, and the chart series built from
them (rates from each broker's own counters, request times as the brokers report them)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from .snapshot import BrokerMetrics, JsonObject

MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
LOG_END_OFFSET = "kafka_log_log_logendoffset"
TOTAL_TIME = "kafka_network_requestmetrics_totaltimems"
ZOOKEEPER_EXPIRES = "kafka_server_sessionexpirelistener_zookeeperexpires_total"
# The request times charted: Produce's (a consumer's Fetch is not told apart from a follower's
# long poll in the brokers' metrics, so its times would chart replica.fetch.wait.max.ms).
CHARTED_REQUEST = "Produce"
CHARTED_QUANTILES = ("0.50", "0.99")
ALL_TOPICS_COUNTERS = {MESSAGES_IN: "messages_in", BYTES_IN: "bytes_in", BYTES_OUT: "bytes_out"}
RATE_SERIES = ("messages_in", "bytes_in", "bytes_out")
TIME_SERIES = tuple(f"produce_p{q[2:]}" for q in CHARTED_QUANTILES)  # produce_p50, produce_p99


def parse(text: str) -> BrokerMetrics:
    """All-topics counters (the samples without a `topic` label), each log end offset and
    the charted request's time quantiles."""
    totals: dict[str, float] = {}
    log_ends: dict[tuple[str, int], int] = {}
    quantiles: dict[str, float] = {}
    expires: float | None = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:  # by sample name: the family's depends on the HELP line
            name = sample.name
            if name in ALL_TOPICS_COUNTERS and "topic" not in sample.labels:
                totals[ALL_TOPICS_COUNTERS[name]] = sample.value
            elif name == LOG_END_OFFSET:
                topic = sample.labels.get("topic")
                partition = sample.labels.get("partition", "")
                if topic is not None and partition.isdigit():
                    log_ends[(topic, int(partition))] = int(sample.value)
            elif name == ZOOKEEPER_EXPIRES:
                expires = sample.value
            elif name == TOTAL_TIME and sample.labels.get("request") == CHARTED_REQUEST:
                quantile = sample.labels.get("quantile", "")
                if quantile in CHARTED_QUANTILES:
                    quantiles[f"produce_p{quantile[2:]}"] = sample.value
    return BrokerMetrics(
        messages_in_total=totals.get("messages_in", 0.0),
        log_end_offsets=log_ends,
        bytes_in_total=totals.get("bytes_in", 0.0),
        bytes_out_total=totals.get("bytes_out", 0.0),
        request_times_ms=quantiles,
        zookeeper_expires=expires,
    )


def _counter(metrics: BrokerMetrics, series: str) -> float:
    if series == "messages_in":
        return metrics.messages_in_total
    if series == "bytes_in":
        return metrics.bytes_in_total
    return metrics.bytes_out_total


class SeriesTracker:
    """The charts' history: per poll, each counter's rate summed over brokers (a broker that
    died or restarted, its counter gone back, adds nothing to that interval) and the highest
    Produce time quantile any broker reports (None when no broker answered)."""

    def __init__(self, history_points: int) -> None:
        self._history_points = history_points
        self._previous: dict[int, tuple[float, BrokerMetrics]] = {}
        self.times: list[float] = []
        self.values: dict[str, list[float | None]] = {s: [] for s in RATE_SERIES + TIME_SERIES}

    def observe(self, now_s: float, metrics: Mapping[int, BrokerMetrics]) -> None:
        for series in RATE_SERIES:
            rate = 0.0
            for broker_id, current in metrics.items():
                previous = self._previous.get(broker_id)
                if previous is None or now_s <= previous[0]:
                    continue
                delta = _counter(current, series) - _counter(previous[1], series)
                if delta >= 0:
                    rate += delta / (now_s - previous[0])
            self.values[series].append(round(rate, 3))
        for series in TIME_SERIES:
            found = [
                m.request_times_ms[series] for m in metrics.values() if series in m.request_times_ms
            ]
            self.values[series].append(round(max(found), 3) if found else None)
        self._previous = {broker_id: (now_s, m) for broker_id, m in metrics.items()}
        self.times.append(round(now_s, 3))
        del self.times[: -self._history_points]
        for values in self.values.values():
            del values[: -self._history_points]

    def as_json(self) -> JsonObject:
        return {"time": list(self.times), **{k: list(v) for k, v in self.values.items()}}
