"""One module per Kafka API; `build_registry` lists them with their version ranges."""

from __future__ import annotations

from broker.handlers import (
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    api_versions,
    controlled_shutdown,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    elect_leaders,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
)
from broker.protocol.registry import ApiSpec, Registry


def build_registry() -> Registry:
    # (api_key, name, advertised min, advertised max, lowest version kio can decode)
    return Registry(
        [
            ApiSpec(0, "Produce", 0, 11, 0, produce.handle),
            ApiSpec(1, "Fetch", 0, 17, 0, fetch.handle),
            ApiSpec(2, "ListOffsets", 0, 9, 0, list_offsets.handle),
            ApiSpec(3, "Metadata", 0, 12, 0, metadata.handle),
            ApiSpec(7, "ControlledShutdown", 0, 3, 1, controlled_shutdown.handle),
            ApiSpec(8, "OffsetCommit", 0, 9, 0, offset_commit.handle),
            ApiSpec(9, "OffsetFetch", 0, 9, 0, offset_fetch.handle),
            ApiSpec(10, "FindCoordinator", 0, 6, 0, find_coordinator.handle),
            ApiSpec(11, "JoinGroup", 0, 9, 0, join_group.handle),
            ApiSpec(12, "Heartbeat", 0, 4, 0, heartbeat.handle),
            ApiSpec(13, "LeaveGroup", 0, 5, 0, leave_group.handle),
            ApiSpec(14, "SyncGroup", 0, 5, 0, sync_group.handle),
            ApiSpec(15, "DescribeGroups", 0, 5, 0, describe_groups.handle),
            ApiSpec(16, "ListGroups", 0, 5, 0, list_groups.handle),
            ApiSpec(18, "ApiVersions", 0, 4, 0, api_versions.handle),
            ApiSpec(19, "CreateTopics", 0, 7, 0, create_topics.handle),
            ApiSpec(20, "DeleteTopics", 0, 6, 0, delete_topics.handle),
            ApiSpec(21, "DeleteRecords", 0, 2, 0, delete_records.handle),
            ApiSpec(22, "InitProducerId", 0, 5, 0, init_producer_id.handle),
            ApiSpec(23, "OffsetForLeaderEpoch", 0, 4, 0, offset_for_leader_epoch.handle),
            ApiSpec(32, "DescribeConfigs", 0, 4, 0, describe_configs.handle),
            ApiSpec(33, "AlterConfigs", 0, 2, 0, alter_configs.handle),
            ApiSpec(34, "AlterReplicaLogDirs", 0, 2, 0, alter_replica_log_dirs.handle),
            ApiSpec(35, "DescribeLogDirs", 0, 4, 0, describe_log_dirs.handle),
            ApiSpec(37, "CreatePartitions", 0, 3, 0, create_partitions.handle),
            ApiSpec(42, "DeleteGroups", 0, 2, 0, delete_groups.handle),
            ApiSpec(43, "ElectLeaders", 0, 2, 0, elect_leaders.handle),
            ApiSpec(44, "IncrementalAlterConfigs", 0, 1, 0, incremental_alter_configs.handle),
            ApiSpec(
                45, "AlterPartitionReassignments", 0, 0, 0, alter_partition_reassignments.handle
            ),
            ApiSpec(46, "ListPartitionReassignments", 0, 0, 0, list_partition_reassignments.handle),
            ApiSpec(47, "OffsetDelete", 0, 0, 0, offset_delete.handle),
        ]
    )
