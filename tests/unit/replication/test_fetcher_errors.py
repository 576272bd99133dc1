"""A replica fetcher logs a response's partition errors as one line per error."""

from __future__ import annotations

import logging

import pytest
from kio.schema.errors import ErrorCode

from broker.replication.fetcher import PartitionErrors


def test_one_line_per_error_naming_the_first_partitions_and_counting_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors = PartitionErrors("fetch from broker 2")
    for partition in range(1200):
        errors.add(("t", partition), ErrorCode.fenced_leader_epoch)
    errors.add(("u", 7), ErrorCode.unknown_topic_or_partition)
    with caplog.at_level(logging.INFO, logger="broker.replication.fetcher"):
        errors.log()
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "fetch from broker 2: fenced_leader_epoch for t-0, t-1, t-2, t-3, t-4 and 1195 more",
        "fetch from broker 2: unknown_topic_or_partition for u-7",
    ]


def test_nothing_is_logged_without_errors(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="broker.replication.fetcher"):
        PartitionErrors("fetch from broker 2").log()
    assert not caplog.records
