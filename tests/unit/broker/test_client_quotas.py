"""Client quotas: Kafka's rate over sample windows, the throttle time, and the order in which
the eight kinds of quota entity apply (broker/quotas)."""

from __future__ import annotations

import asyncio
import math

import pytest
from kio.schema.errors import ErrorCode

from broker.quotas.admin import ClientQuotaAdmin, QuotaRequestError, java_double_text
from broker.quotas.manager import (
    DEFAULT,
    ClientQuotaManager,
    ClientQuotas,
    QuotaEntity,
    QuotaOverrides,
    QuotaType,
    entity_of,
    quota_bound,
)
from broker.quotas.sensor import QuotaSensor, QuotaWindow, SampledAvg, SampledRate, throttle_time_ms

WINDOW = QuotaWindow(samples=11, window_ms=1000)  # Kafka's defaults


def test_a_young_rate_is_measured_over_at_least_samples_minus_one_windows() -> None:
    rate = SampledRate(WINDOW)
    rate.record(100, 0)
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == pytest.approx(10.0)
    rate.record(100, 500)
    assert rate.measure(500) == pytest.approx(200 / 10.5)
    rate.record(100, 1000)  # a window later: the second sample starts
    assert rate.window_size_ms(1000) == 10_000
    assert rate.measure(1000) == pytest.approx(30.0)


def test_once_all_windows_are_full_the_rate_spans_the_samples_kept() -> None:
    rate = SampledRate(WINDOW)
    for second in range(20):
        rate.record(1000, second * 1000)
    # Samples started at 9..19 s survive; at 19.5 s they span 10.5 s.
    assert rate.window_size_ms(19_500) == 10_500
    assert rate.measure(19_500) == pytest.approx(11_000 / 10.5)


def test_samples_older_than_every_window_together_are_forgotten() -> None:
    rate = SampledRate(WINDOW)
    rate.record(5000, 0)
    assert rate.measure(10_999) > 0
    assert rate.measure(11_000) == 0.0


def test_a_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    assert throttle_time_ms(200.0, 100.0, 10_000) == 10_000
    assert throttle_time_ms(150.0, 100.0, 10_000) == 5_000
    assert throttle_time_ms(2.25, 2.0, 2) == 0
    assert throttle_time_ms(2.5, 2.0, 2) == 1  # Java's Math.round: half up
    assert throttle_time_ms(6.5, 2.0, 2) == 5


def test_a_sensor_throttles_only_above_its_bound_and_keeps_the_value() -> None:
    sensor = QuotaSensor(WINDOW)
    assert sensor.record_and_get_throttle_time_ms(150, 0, bound=20) == 0  # 15/s
    # 1150 over 10 s: 115/s, (115 - 20) / 20 * 10 s
    assert sensor.record_and_get_throttle_time_ms(1000, 0, bound=20) == 47_500
    assert sensor.rate.measure(0) == pytest.approx(115.0)


def test_a_client_held_at_its_quota_gets_the_bound_on_average() -> None:
    """A producer that waits out each throttle time sends at about its quota."""
    sensor = QuotaSensor(WINDOW)
    bound, request_bytes, now_ms, sent = 1_048_576.0, 65_536, 0, 0
    while now_ms < 60_000:
        throttle = sensor.record_and_get_throttle_time_ms(request_bytes, now_ms, bound)
        sent += request_bytes
        now_ms += max(throttle, 5)
    assert sent / (now_ms / 1000) == pytest.approx(bound, rel=0.2)


def test_the_throttle_time_average_is_nan_until_recorded() -> None:
    average = SampledAvg()
    assert math.isnan(average.measure(0))
    average.record(100, 0)
    average.record(300, 10)
    assert average.measure(20) == 200.0


def _limits(
    quotas: dict[QuotaEntity, float], user: str, client_id: str
) -> tuple[tuple[str, str], float | None]:
    overrides = QuotaOverrides()
    for entity, bound in quotas.items():
        overrides.update(entity, bound)
    tags = overrides.metric_tags(user, client_id)
    return tags, overrides.limit(*tags)


# Kafka's order, most specific first: (entity, the tags of the sensor it makes).
ORDER = [
    (QuotaEntity("alice", "app"), ("alice", "app")),
    (QuotaEntity("alice", DEFAULT), ("alice", "app")),
    (QuotaEntity("alice", None), ("alice", "")),
    (QuotaEntity(DEFAULT, "app"), ("alice", "app")),
    (QuotaEntity(DEFAULT, DEFAULT), ("alice", "app")),
    (QuotaEntity(DEFAULT, None), ("alice", "")),
    (QuotaEntity(None, "app"), ("", "app")),
    (QuotaEntity(None, DEFAULT), ("", "app")),
]


@pytest.mark.parametrize("level", range(len(ORDER)))
def test_the_most_specific_of_the_eight_entities_applies(level: int) -> None:
    # Every entity from `level` down has a quota, each its own: the one at `level` wins.
    quotas = {entity: float(1000 + index) for index, (entity, _) in enumerate(ORDER[level:])}
    # Another user's and another client's quotas never apply.
    quotas[QuotaEntity("bob", "app")] = 1.0
    quotas[QuotaEntity(None, "other")] = 2.0
    tags, limit = _limits(quotas, "alice", "app")
    assert tags == ORDER[level][1]
    assert limit == 1000.0


def test_with_one_kind_of_entity_the_tags_need_no_walk() -> None:
    assert _limits({}, "alice", "app") == (("", "app"), None)
    assert _limits({QuotaEntity(None, "app"): 5.0}, "alice", "app") == (("", "app"), 5.0)
    assert _limits({QuotaEntity("bob", None): 5.0}, "alice", "app") == (("alice", ""), None)
    assert _limits({QuotaEntity("alice", "x"): 5.0}, "alice", "app") == (("alice", "app"), None)


def test_a_removed_quota_keeps_its_kind_enabled_as_in_kafka() -> None:
    overrides = QuotaOverrides()
    overrides.update(QuotaEntity("alice", None), 10.0)
    overrides.update(QuotaEntity("alice", None), None)
    assert overrides.limit("alice", "") is None
    assert overrides.metric_tags("alice", "app") == ("alice", "")


def test_a_client_id_is_matched_by_its_sanitized_name() -> None:
    tags, limit = _limits({QuotaEntity(None, "my%20app"): 7.0}, "ANONYMOUS", "my app")
    assert tags == ("", "my app")
    assert limit == 7.0


def test_a_manager_counts_nothing_until_some_quota_exists() -> None:
    manager = ClientQuotaManager(QuotaType.PRODUCE, WINDOW)
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "app", 10**9, 0) == 0
    assert list(manager.snapshot(0)) == []
    manager.update_quota(QuotaEntity(None, "app"), 100.0)
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "other", 10**9, 0) == 0
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "app", 2000, 0) == 10_000
    assert manager.max_value_in_quota_window("ANONYMOUS", "app", 0) == 1000.0
    manager.unrecord("ANONYMOUS", "app", 2000, 0)
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "app", 500, 0) == 0


def test_config_znode_names_map_to_entities() -> None:
    assert entity_of("users", "alice") == QuotaEntity("alice", None)
    assert entity_of("users", "alice/clients/app") == QuotaEntity("alice", "app")
    assert entity_of("users", "<default>/clients/<default>") == QuotaEntity(DEFAULT, DEFAULT)
    assert entity_of("clients", "app") == QuotaEntity(None, "app")
    assert entity_of("users", "alice/clients") is None


def test_byte_rates_are_longs_and_the_others_doubles() -> None:
    assert quota_bound({"producer_byte_rate": "1048576"}, "producer_byte_rate") == 1048576.0
    assert quota_bound({"producer_byte_rate": "1.5"}, "producer_byte_rate") is None
    assert quota_bound({"request_percentage": "12.5"}, "request_percentage") == 12.5
    assert quota_bound({}, "consumer_byte_rate") is None


def test_doubles_are_written_as_java_does() -> None:
    assert java_double_text(200.0) == "200.0"
    assert java_double_text(0.5) == "0.5"
    assert java_double_text(12.25) == "12.25"
    assert java_double_text(1e7) == "1.0E7"
    assert java_double_text(12345678.0) == "1.2345678E7"
    assert java_double_text(0.0001) == "1.0E-4"


class _FakeZk:
    """/config/<type>/<name> configs, as KafkaZk's get_entity_names/get_entity_config read them."""

    def __init__(self, configs: dict[str, dict[str, str]]) -> None:
        self.configs = configs

    async def get_entity_names(self, entity_type: str) -> list[str]:
        prefix = f"{entity_type}/"
        return sorted(
            {p[len(prefix) :].split("/")[0] for p in self.configs if p.startswith(prefix)}
        )

    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return dict(self.configs.get(f"{entity_type}/{name}", {}))


def test_every_quota_znode_is_read_at_start_up_and_again_when_notified() -> None:
    zk = _FakeZk(
        {
            "users/alice": {"SCRAM-SHA-256": "salt=...", "producer_byte_rate": "100"},
            "users/alice/clients/app": {"consumer_byte_rate": "200"},
            "users/<default>/clients/<default>": {"producer_byte_rate": "300"},
            "clients/app": {"request_percentage": "12.5"},
        }
    )

    async def scenario() -> None:
        quotas = ClientQuotas(zk, WINDOW, WINDOW)  # type: ignore[arg-type]
        await quotas.load_all()
        produce = quotas.produce.overrides.quotas
        assert produce == {QuotaEntity("alice", None): 100.0, QuotaEntity(DEFAULT, DEFAULT): 300.0}
        assert quotas.fetch.overrides.quotas == {QuotaEntity("alice", "app"): 200.0}
        request = quotas.managers[QuotaType.REQUEST].overrides.quotas
        assert request == {QuotaEntity(None, "app"): 12.5}
        zk.configs["users/alice/clients/app"] = {}
        zk.configs["clients/app"] = {"consumer_byte_rate": "5"}
        quotas.on_user_changed("alice/clients/app")
        quotas.on_client_changed("app")
        await asyncio.sleep(0.01)
        assert quotas.fetch.overrides.quotas == {QuotaEntity(None, "app"): 5.0}
        assert quotas.managers[QuotaType.REQUEST].overrides.quotas == {}

    asyncio.run(scenario())


def test_a_sample_overlapping_the_window_is_kept_while_it_has_recent_records() -> None:
    """Kafka 3.9 keeps one sample more than quota.window.num, and drops a sample only when
    its last record is older than all the windows together."""
    rate = SampledRate(QuotaWindow(samples=2, window_ms=1000))
    rate.record(100, 0)
    rate.record(100, 900)  # the first sample's last record
    rate.record(100, 1000)  # the second
    rate.record(100, 2000)  # the third: the ring holds samples + 1
    # At 2500 ms the first sample (started at 0, last record at 900) is still within 2 s.
    assert rate.window_size_ms(2500) == 2500
    assert rate.measure(2500) == pytest.approx(400 / 2.5)
    # At 2900 ms its last record is 2 s old: it is dropped, and the window starts at 1000 ms.
    assert rate.window_size_ms(2900) == 1900
    assert rate.measure(2900) == pytest.approx(200 / 1.9)


class _ConfigZk:
    """The two calls ClientQuotaAdmin.alter makes, on a dict."""

    def __init__(self) -> None:
        self.written: dict[tuple[str, str], dict[str, str]] = {}

    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return dict(self.written.get((entity_type, name), {}))

    async def change_entity_config(
        self, entity_type: str, name: str, configs: dict[str, str]
    ) -> None:
        self.written[(entity_type, name)] = configs


@pytest.mark.parametrize(
    ("value", "written"),
    [(float("nan"), "0"), (1024.0, "1024")],
)
def test_a_long_quota_value_is_converted_as_scala_converts_it(value: float, written: str) -> None:
    zk = _ConfigZk()
    admin = ClientQuotaAdmin(zk)  # type: ignore[arg-type]
    asyncio.run(admin.alter({"user": "u"}, [("producer_byte_rate", value)], False))
    assert zk.written[("users", "u")] == {"producer_byte_rate": written}


@pytest.mark.parametrize("value", [math.inf, -math.inf, 1e300, 0.5])
def test_a_long_quota_value_out_of_range_or_fractional_is_refused(value: float) -> None:
    admin = ClientQuotaAdmin(_ConfigZk())  # type: ignore[arg-type]
    with pytest.raises(QuotaRequestError) as refused:
        asyncio.run(admin.alter({"user": "u"}, [("producer_byte_rate", value)], False))
    assert refused.value.error_code == ErrorCode.invalid_request
    assert refused.value.message == "Configuration producer_byte_rate must be a LONG value"
