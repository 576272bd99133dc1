"""The topics a consumer-protocol member subscribes to, read from its opaque join metadata.

Kafka's ConsumerProtocolSubscription starts with an int16 version and an array of topic names
(int32 count, int16-length strings) in every version; the rest is not needed here. Only
OffsetDelete looks inside (GROUP_SUBSCRIBED_TO_TOPIC); everything else keeps it opaque.
"""

from __future__ import annotations

import struct

from broker.coordinator.group.group import Group

CONSUMER_PROTOCOL_TYPE = "consumer"
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The subscribed topics, or None if the bytes do not parse (treated as "all")."""
    try:
        position = _INT16.size  # version
        (count,) = _INT32.unpack_from(metadata, position)
        position += _INT32.size
        if count < 0 or count > len(metadata):
            return None
        topics = set()
        for _ in range(count):
            (size,) = _INT16.unpack_from(metadata, position)
            position += _INT16.size
            if size < 0 or position + size > len(metadata):
                return None
            topics.add(metadata[position : position + size].decode("utf-8"))
            position += size
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def is_subscribed_to(group: Group, topic: str) -> bool:
    """Whether any member of a consumer group subscribes to `topic` (unparseable metadata or
    another protocol type counts as subscribed: deleting would be unsafe)."""
    protocol = group.protocol_name
    for member in group.members.values():
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE or protocol is None:
            return True
        try:
            topics = subscribed_topics(member.metadata(protocol))
        except KeyError:
            return True
        if topics is None or topic in topics:
            return True
    return False
