import pytest

from broker.config.kafka_config import ConfigError, build_config
from broker.network.quotas import ConnectionQuotas, parse_per_ip_overrides


def test_per_ip_limit_counts_each_host_separately() -> None:
    quotas = ConnectionQuotas(100, 2, {})
    assert quotas.try_acquire("10.0.0.1") is None
    assert quotas.try_acquire("10.0.0.1") is None
    assert "max.connections.per.ip=2" in (quotas.try_acquire("10.0.0.1") or "")
    assert quotas.try_acquire("10.0.0.2") is None
    quotas.release("10.0.0.1")
    assert quotas.try_acquire("10.0.0.1") is None


def test_broker_wide_limit_applies_before_per_ip() -> None:
    quotas = ConnectionQuotas(2, 10, {})
    assert quotas.try_acquire("a") is None
    assert quotas.try_acquire("b") is None
    assert "max.connections=2" in (quotas.try_acquire("c") or "")
    assert quotas.total == 2


def test_override_raises_or_lowers_one_host() -> None:
    quotas = ConnectionQuotas(100, 1, parse_per_ip_overrides("127.0.0.1:3, badhost:0"))
    assert [quotas.try_acquire("127.0.0.1") for _ in range(4)].count(None) == 3
    assert quotas.try_acquire("badhost") is not None


def test_releasing_an_uncounted_connection_is_a_bug() -> None:
    with pytest.raises(RuntimeError):
        ConnectionQuotas(1, 1, {}).release("nobody")


def test_malformed_overrides_are_a_start_up_error() -> None:
    base = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181"}
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides"):
        build_config({**base, "max.connections.per.ip.overrides": "127.0.0.1"})
