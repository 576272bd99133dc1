"""`inter.broker.protocol.version`: which inter-broker requests a broker may send, as Kafka's
MetadataVersion decides them. Only the steps this broker acts on are named here.

A version is Kafka's text form: `2.7`, `2.7-IV2`, `0.10.2` or `0.10.2-IV0`. A release without an
`-IVn` suffix means its last step (Kafka maps `2.7` to `2.7-IV2`).
"""

from __future__ import annotations

import re

# The newest version this broker knows: Kafka 3.9's default.
LATEST = "3.9-IV0"
_LATEST_RELEASE = (3, 9)
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-IV(\d+))?$")
_LAST_STEP = 99  # "2.7" without a step: the release's last one
# Kafka's IBP_2_7_IV2: leaders change the ISR with AlterPartition instead of the state znode.
ALTER_PARTITION = (2, 7, 0, 2)
# Kafka's IBP_2_8_IV0: AlterPartition may name topics by id (v2+).
TOPIC_IDS = (2, 8, 0, 0)

Version = tuple[int, int, int, int]


def parse(text: str) -> Version:
    """(major, minor, patch, step); ValueError for text Kafka would not take, or a version
    newer than LATEST."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Kafka version such as 3.9 or 2.7-IV2")
    major, minor, patch, step = match.groups()
    version = (
        int(major),
        int(minor),
        int(patch or 0),
        _LAST_STEP if step is None else int(step),
    )
    if version[:2] > _LATEST_RELEASE:
        raise ValueError(f"{text!r} is newer than this broker's {LATEST}")
    return version


def validated(text: str) -> str:
    """The config's parser: the text as given, once `parse` accepts it."""
    parse(text)
    return text.strip()


def sends_alter_partition(version: Version) -> bool:
    return version >= ALTER_PARTITION


def supports_topic_ids(version: Version) -> bool:
    return version >= TOPIC_IDS
