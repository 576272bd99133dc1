"""Names of the partition directories in a log dir, as Kafka's UnifiedLog gives them.

- `<topic>-<partition>`: a replica's log;
- `<topic>-<partition>.<uuid>-future`: the copy AlterReplicaLogDirs builds in another log dir
  (it replaces the replica's log once it has caught up);
- `<topic>-<partition>.<uuid>-delete`: a log being deleted, renamed first so that a crash
  cannot bring it back (removed at the next start-up).

The uuid is a random UUID's 32 hex digits (Kafka's `UUID.randomUUID` without its dashes).
"""

from __future__ import annotations

import uuid

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def future_dir_name(topic: str, partition: int) -> str:
    return f"{log_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def delete_dir_name(topic: str, partition: int) -> str:
    return f"{log_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


def parse_partition_dir(name: str) -> tuple[str, int]:
    """ "my-topic-3" -> ("my-topic", 3); raises ValueError for other names."""
    topic, separator, partition = name.rpartition("-")
    if not separator or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


def is_future_dir(name: str) -> bool:
    return name.endswith(FUTURE_DIR_SUFFIX)


def is_delete_dir(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX)


def parse_log_dir_name(name: str) -> tuple[str, int]:
    """Topic and partition of a replica's, a future or a deleted log's directory (Kafka's
    parseTopicPartitionName: a suffixed name loses everything from its last dot)."""
    if is_future_dir(name) or is_delete_dir(name):
        stem, dot, _ = name.rpartition(".")
        if not dot:
            raise ValueError(f"{name!r} lacks the .<uuid> before its suffix")
        return parse_partition_dir(stem)
    return parse_partition_dir(name)
