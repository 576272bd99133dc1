"""Request bodies for the wire tests, as the plain dicts `WireClient.request` takes.

Each builder fills in the union of the fields of every version; `adapter.build` drops the
fields a version lacks, so one builder serves every version a test asks for.
"""

from __future__ import annotations

from typing import Any

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID = 19, 20, 22
HUGE = 50_000_000  # default Fetch byte limits: large enough never to limit a test's data


def metadata_request(topics: list[str] | None, auto_create: bool = False) -> dict[str, Any]:
    """`topics=None` asks for every topic (v1+); `[]` asks for none (v1+) or all (v0)."""
    return {
        "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
        "allow_auto_topic_creation": auto_create,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def topic_spec(
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    configs: dict[str, str] | None = None,
    assignments: dict[int, list[int]] | None = None,
) -> dict[str, Any]:
    """One CreateTopics entry; explicit `assignments` go with partitions = RF = -1."""
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication_factor,
        "assignments": [
            {"partition_index": p, "broker_ids": brokers}
            for p, brokers in (assignments or {}).items()
        ],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def create_topics_request(
    specs: list[dict[str, Any]], timeout_ms: int = 30000, validate_only: bool = False
) -> dict[str, Any]:
    return {"topics": specs, "timeout": timeout_ms, "validate_only": validate_only}


def delete_topics_request(names: list[str], timeout_ms: int = 30000) -> dict[str, Any]:
    """Names go in `topic_names` (v0-5) and `topics` (v6+)."""
    return {
        "topic_names": names,
        "topics": [{"name": n, "topic_id": None} for n in names],
        "timeout": timeout_ms,
    }


def produce_request(
    topic: str,
    partition: int,
    records: bytes,
    acks: int = 1,
    timeout_ms: int = 10000,
    transactional_id: str | None = None,
) -> dict[str, Any]:
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout": timeout_ms,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = HUGE,
    partition_max_bytes: int = HUGE,
) -> dict[str, Any]:
    """A consumer's (replica_id -1) sessionless Fetch of one partition."""
    return {
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": partition_max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def list_offsets_request(topic: str, partition: int, timestamp: int) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "current_leader_epoch": -1,
                        "timestamp": timestamp,
                    }
                ],
            }
        ],
    }
