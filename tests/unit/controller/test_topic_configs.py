"""Topic config names, types and ranges."""

from __future__ import annotations

import pytest

from controller.errors import INVALID_CONFIG, INVALID_REQUEST, ApiError
from controller.topic_configs import validate_topic_configs


def test_valid_configs_pass_unchanged() -> None:
    configs = {
        "cleanup.policy": "compact,delete",
        "retention.ms": "-1",
        "min.cleanable.dirty.ratio": "0.5",
        "unclean.leader.election.enable": "TRUE",
        "compression.type": "zstd",
        "leader.replication.throttled.replicas": "0:1,1:2",
        "follower.replication.throttled.replicas": "*",
        "segment.bytes": " 1048576 ",
    }
    assert validate_topic_configs(configs) == configs


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number"),
        ("retention.ms", "-2", "Value must be at least -1"),
        ("segment.bytes", "3000000000", "Not a number of type INT"),
        ("segment.bytes", "10", "Value must be at least 14"),
        ("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
        ("cleanup.policy", "compact,remove", "String must be one of: compact, delete"),
        ("compression.type", "brotli", "String must be one of"),
        ("preallocate", "yes", "Expected value to be either true or false"),
        ("min.insync.replicas", "0", "Value must be at least 1"),
        ("message.timestamp.type", "Now", "String must be one of: CreateTime, LogAppendTime"),
        ("leader.replication.throttled.replicas", "0-1", "wildcard"),
        ("retention.millis", "1", "Unknown topic config name: retention.millis"),
        ("confluent.placement.constraints", "{}", "Unknown topic config name"),
    ],
)
def test_bad_config_is_invalid_config(name: str, value: str, message: str) -> None:
    with pytest.raises(ApiError) as raised:
        validate_topic_configs({name: value})
    assert raised.value.error_code == INVALID_CONFIG
    assert message in raised.value.message


def test_null_config_value_is_invalid_request() -> None:
    with pytest.raises(ApiError) as raised:
        validate_topic_configs({"retention.ms": None})
    assert raised.value.error_code == INVALID_REQUEST
