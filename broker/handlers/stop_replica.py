"""StopReplica: v0-v4 (Kafka 3.9, ZooKeeper mode). A ZooKeeper-mode controller (an Apache
Kafka broker; ours does not send it) tells this broker to stop replicas: without delete, to
stop following their leader (a replica going offline, a broker shutting down); with delete,
to remove them and their logs (topic deletion, a reassignment moving them away), through the
path our own topic deletion and reassignment take (`ReplicaManager.delete_partition`, which
also unloads coordinator state of an internal topic's partition this broker led).

Fenced as Kafka's broker fences it: a broker epoch older than this broker's registration gets
STALE_BROKER_EPOCH and a controller epoch older than the newest seen STALE_CONTROLLER_EPOCH,
both with no partitions listed (as Kafka answers them). A partition whose leader epoch (v3+)
is older than the replica's gets FENCED_LEADER_EPOCH; -1 (v0-v2) and -2 (topic deletion) are
not checked; a partition in a failed log dir gets KAFKA_STORAGE_ERROR. An authorizer requires
ClusterAction on the cluster.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.controller_apis import NO_EPOCH
from broker.protocol.registry import response_class
from broker.replication.control_requests import admit_logged
from broker.replication.replica_control import stop_replicas

# (topic, partition, leader epoch, delete)
Stop = tuple[str, int, int, bool]


async def handle(context: RequestContext, request: Any) -> Any:
    replica_manager = context.services.replica_manager
    stops = requested_stops(request)
    error = admit_logged(
        replica_manager.controller_fence,
        request,
        "StopReplica",
        len(stops),
        context.services.broker_id,
        context.header.correlation_id,
    )
    if error != ErrorCode.none:
        return response(context.api_version, [], {}, error)
    errors = await stop_replicas(replica_manager, int(request.controller_id), stops)
    return response(context.api_version, stops, errors)


def requested_stops(request: Any) -> list[Stop]:
    """The request's partitions, whatever its version's layout."""
    if getattr(request, "topic_states", None) is not None:  # v3+
        return [
            (str(topic.topic_name), int(p.partition_index), int(p.leader_epoch), p.delete_partition)
            for topic in request.topic_states
            for p in topic.partition_states
        ]
    delete = bool(request.delete_partitions)
    if getattr(request, "topics", None) is not None:  # v1-v2
        return [
            (str(topic.name), int(index), NO_EPOCH, delete)
            for topic in request.topics
            for index in topic.partition_indexes
        ]
    return [
        (str(p.topic_name), int(p.partition_index), NO_EPOCH, delete)
        for p in request.ungrouped_partitions
    ]


def response(
    version: int,
    stops: list[Stop],
    errors: dict[tuple[str, int], ErrorCode],
    error: ErrorCode = ErrorCode.none,
) -> Any:
    partition_errors = [
        {"topic_name": topic, "partition_index": partition, "error_code": errors[topic, partition]}
        for topic, partition, _, _ in stops
    ]
    cls = response_class(ApiKey.STOP_REPLICA, version)
    return adapter.build(cls, {"error_code": error, "partition_errors": partition_errors})


def error_response(version: int, request: Any, error: ErrorCode) -> Any:
    """The whole request refused (Kafka's getErrorResponse): every partition with `error`."""
    stops = requested_stops(request)
    errors = {(topic, partition): error for topic, partition, _, _ in stops}
    return response(version, stops, errors, error)
