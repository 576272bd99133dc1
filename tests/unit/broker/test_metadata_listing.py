"""Metadata lists a topic only once every partition's state is known: brokers read the state
znodes one by one, and a partial set would tell clients a new topic has fewer partitions."""

from __future__ import annotations

from broker.handlers.metadata import _listed_topics
from broker.metadata_cache import MetadataCache
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
