"""Option checks: each bad option fails with a message that names it, before any work."""

from __future__ import annotations

import pytest

from pipeline.connector.options import (
    Assign,
    OptionError,
    Subscribe,
    SubscribePattern,
    batch_source_options,
    parse_sink_options,
    stream_source_options,
)

BOOTSTRAP = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def options(**extra: str) -> dict[str, str]:
    # Spark hands the source lower-cased keys.
    return {key.lower(): value for key, value in {**BOOTSTRAP, **extra}.items()}


def test_defaults_follow_spark() -> None:
    batch = batch_source_options(options(subscribe="a, b"))
    assert batch.strategy == Subscribe(("a", "b"))
    assert (batch.starting.kind, batch.ending and batch.ending.kind) == ("earliest", "latest")
    assert batch.fail_on_data_loss and not batch.include_headers
    stream = stream_source_options(options(subscribePattern="reg.*"))
    assert stream.starting.kind == "latest" and stream.ending is None
    assert isinstance(stream.strategy, SubscribePattern)
    assert stream.strategy.matches("registrations")
    assert not stream.strategy.matches("__consumer_offsets")


def test_kafka_options_go_to_the_client_without_prefix() -> None:
    parsed = stream_source_options(options(subscribe="a", **{"kafka.client.id": "me"}))
    assert parsed.client_config == {"bootstrap.servers": "127.0.0.1:9092", "client.id": "me"}


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "Only one of the following options"),
        ({}, "One of the following options must be specified"),
        ({"subscribe": " , "}, "'subscribe'"),
        ({"subscribePattern": "("}, "'subscribePattern'"),
        ({"assign": '{"a":0}'}, "'assign'"),
        ({"subscribe": "a", "startingOffsets": "{bad"}, "'startingOffsets'"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-3}}'}, "'startingOffsets'"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "-5"}, "'maxOffsetsPerTrigger'"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "many"}, "'maxOffsetsPerTrigger'"),
        ({"subscribe": "a", "minPartitions": "0"}, "'minPartitions'"),
        ({"subscribe": "a", "failOnDataLoss": "maybe"}, "'failOnDataLoss'"),
        ({"subscribe": "a", "startingTimestamp": "soon"}, "'startingTimestamp'"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "'kafka.auto.offset.reset'"),
        ({"subscribe": "a", "endingOffsets": "latest"}, "'endingOffsets'"),
    ],
)
def test_bad_stream_option_names_itself(given: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        stream_source_options(options(**given))


def test_missing_bootstrap_servers_is_named() -> None:
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers'"):
        stream_source_options({"subscribe": "a"})
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers'"):
        parse_sink_options({"topic": "a"})


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"startingOffsets": "latest"}, "starting offset can't be latest"),
        ({"startingOffsets": '{"a":{"0":-1}}'}, "startingOffsets for a-0 can't be latest"),
        ({"endingOffsets": "earliest"}, "ending offset can't be earliest"),
        ({"endingOffsets": '{"a":{"0":-2}}'}, "endingOffsets for a-0 can't be earliest"),
    ],
)
def test_batch_refuses_latest_start_and_earliest_end(given: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        batch_source_options(options(subscribe="a", **given))


def test_timestamp_options_take_precedence_over_offsets() -> None:
    parsed = stream_source_options(
        options(subscribe="a", startingOffsets="earliest", startingTimestamp="1000")
    )
    assert (parsed.starting.kind, parsed.starting.timestamp_ms) == ("timestamp", 1000)
    by_partition = stream_source_options(
        options(
            assign='{"a":[0]}',
            startingOffsetsByTimestamp='{"a":{"0":5}}',
            startingOffsetsByTimestampStrategy="latest",
        )
    )
    assert by_partition.strategy == Assign((("a", 0),))
    assert by_partition.starting.offsets == {("a", 0): 5}
    assert by_partition.starting.by_timestamp_strategy == "latest"


@pytest.mark.parametrize("servers", ["", "   ", " , "])
def test_empty_bootstrap_servers_is_named(servers: str) -> None:
    given = {"kafka.bootstrap.servers": servers}
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers' must be specified"):
        stream_source_options({"subscribe": "a", **given})
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers' must be specified"):
        parse_sink_options({"topic": "a", **given})
