"""Metadata lists a topic only once every partition's state is known: brokers read the state
znodes one by one, and a partial set would tell clients a new topic has fewer partitions."""

from __future__ import annotations

import asyncio

from broker.cluster.metadata_cache import ROWS_PER_SLICE_CHECK, MetadataCache
from broker.handlers.metadata import _listed_topics
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.metadata_encoding import PartitionEncodings
from broker.protocol.registry import response_class
from zk.cluster_watch import ClusterView
from zk.znodes import PartitionState, TopicAssignment


def _cache(states_known: list[int]) -> MetadataCache:
    assignment = TopicAssignment(None, {0: [1], 1: [1], 2: [1]})
    states = {("t", p): (PartitionState(1, 0, [1], 1), 0) for p in states_known}
    return MetadataCache(ClusterView(topics={"t": assignment}, partition_states=states))


def test_a_topic_with_some_partition_states_unread_is_not_listed() -> None:
    cache = _cache([0, 1])
    assert cache.partition_rows("t") is None
    assert _listed_topics(cache) == []


def test_a_topic_is_listed_with_all_partitions_once_every_state_is_read() -> None:
    cache = _cache([0, 1, 2])
    assert [row[0] for row in cache.partition_rows("t") or []] == [0, 1, 2]
    assert _listed_topics(cache) == ["t"]


def test_encoded_partitions_are_kept_until_the_topic_or_the_brokers_change() -> None:
    assignment = TopicAssignment(None, {0: [1, 2]})
    view = ClusterView(
        topics={"t": assignment},
        partition_states={("t", 0): (PartitionState(1, 0, [1, 2], 1), 0)},
    )
    view.touch("t")
    cache = MetadataCache(view)
    entry_cls = adapter.nested_class(
        adapter.nested_class(response_class(ApiKey.METADATA, 12), "topics"), "partitions"
    )
    first = asyncio.run(cache.encoded_partitions(entry_cls, "t"))
    assert first is not None
    assert asyncio.run(cache.encoded_partitions(entry_cls, "t")) is first

    # Changed in place without a new version: still the kept entries (nothing changes the
    # view but the watch, which always touches the topic).
    view.partition_states[("t", 0)] = (PartitionState(2, 1, [2], 1), 1)
    assert asyncio.run(cache.encoded_partitions(entry_cls, "t")) is first
    view.touch("t")
    moved = asyncio.run(cache.encoded_partitions(entry_cls, "t"))
    assert moved is not None and moved != first

    view.brokers = {}  # the watch replaces the broker map when a broker comes or goes
    assert asyncio.run(cache.encoded_partitions(entry_cls, "t")) is not moved


def test_a_large_topic_is_encoded_across_slices_in_partition_order() -> None:
    count = ROWS_PER_SLICE_CHECK * 3 + 5
    view = ClusterView(
        topics={"big": TopicAssignment(None, {p: [1, 2] for p in range(count)})},
        partition_states={
            ("big", p): (PartitionState(1 + p % 2, p, [1, 2], 1), 0) for p in range(count)
        },
    )
    view.touch("big")
    entry_cls = adapter.nested_class(
        adapter.nested_class(response_class(ApiKey.METADATA, 12), "topics"), "partitions"
    )
    encoded = asyncio.run(MetadataCache(view).encoded_partitions(entry_cls, "big"))
    rows = MetadataCache(view).partition_rows("big")
    assert rows is not None
    expected = PartitionEncodings().encode(entry_cls, "big", rows, frozenset())
    assert encoded == expected
    assert len(encoded) == count
