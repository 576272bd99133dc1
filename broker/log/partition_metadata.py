"""`partition.metadata`: which topic incarnation (topic id) a partition directory belongs to.

Kafka 2.8+ writes it next to the segments as two lines, `version: 0` and `topic_id: <id>`,
so a broker can tell a re-created topic's partition from a leftover of the deleted one.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.log.checkpoints import fsync_directory

PARTITION_METADATA_FILE = "partition.metadata"
VERSION = 0


def read_topic_id(partition_dir: Path) -> str | None:
    """The stored topic id, or None if the file is missing or unreadable."""
    try:
        text = (partition_dir / PARTITION_METADATA_FILE).read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields.get("version", "").strip() != str(VERSION):
        return None
    topic_id = fields.get("topic_id", "").strip()
    return topic_id or None


def write_topic_id(partition_dir: Path, topic_id: str) -> None:
    path = partition_dir / PARTITION_METADATA_FILE
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w") as handle:
        handle.write(f"version: {VERSION}\ntopic_id: {topic_id}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    fsync_directory(partition_dir)
