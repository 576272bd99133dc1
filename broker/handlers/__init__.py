"""One module per Kafka API; `build_registry` lists them with their version ranges."""

from __future__ import annotations

from broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    allocate_producer_ids,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    envelope,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import ApiSpec, Registry


def build_registry() -> Registry:
    # (api_key, name, advertised min, advertised max, lowest version kio can decode)
    return Registry(
        [
            ApiSpec(ApiKey.PRODUCE, "Produce", 0, 11, 0, produce.handle),
            ApiSpec(ApiKey.FETCH, "Fetch", 0, 17, 0, fetch.handle),
            ApiSpec(ApiKey.LIST_OFFSETS, "ListOffsets", 0, 9, 0, list_offsets.handle),
            ApiSpec(ApiKey.METADATA, "Metadata", 0, 12, 0, metadata.handle),
            # The ZooKeeper-mode controller's requests (broker/protocol/controller_apis.py).
            ApiSpec(ApiKey.LEADER_AND_ISR, "LeaderAndIsr", 0, 7, 0, leader_and_isr.handle),
            ApiSpec(ApiKey.STOP_REPLICA, "StopReplica", 0, 4, 0, stop_replica.handle),
            ApiSpec(ApiKey.UPDATE_METADATA, "UpdateMetadata", 0, 8, 0, update_metadata.handle),
            ApiSpec(
                ApiKey.CONTROLLED_SHUTDOWN,
                "ControlledShutdown",
                0,
                3,
                1,
                controlled_shutdown.handle,
            ),
            ApiSpec(ApiKey.OFFSET_COMMIT, "OffsetCommit", 0, 9, 0, offset_commit.handle),
            ApiSpec(ApiKey.OFFSET_FETCH, "OffsetFetch", 0, 9, 0, offset_fetch.handle),
            ApiSpec(ApiKey.FIND_COORDINATOR, "FindCoordinator", 0, 6, 0, find_coordinator.handle),
            ApiSpec(ApiKey.JOIN_GROUP, "JoinGroup", 0, 9, 0, join_group.handle),
            ApiSpec(ApiKey.HEARTBEAT, "Heartbeat", 0, 4, 0, heartbeat.handle),
            ApiSpec(ApiKey.LEAVE_GROUP, "LeaveGroup", 0, 5, 0, leave_group.handle),
            ApiSpec(ApiKey.SYNC_GROUP, "SyncGroup", 0, 5, 0, sync_group.handle),
            ApiSpec(ApiKey.DESCRIBE_GROUPS, "DescribeGroups", 0, 5, 0, describe_groups.handle),
            ApiSpec(ApiKey.LIST_GROUPS, "ListGroups", 0, 5, 0, list_groups.handle),
            ApiSpec(ApiKey.SASL_HANDSHAKE, "SaslHandshake", 0, 1, 0, sasl_handshake.handle),
            ApiSpec(ApiKey.API_VERSIONS, "ApiVersions", 0, 4, 0, api_versions.handle),
            ApiSpec(ApiKey.CREATE_TOPICS, "CreateTopics", 0, 7, 0, create_topics.handle),
            ApiSpec(ApiKey.DELETE_TOPICS, "DeleteTopics", 0, 6, 0, delete_topics.handle),
            ApiSpec(ApiKey.DELETE_RECORDS, "DeleteRecords", 0, 2, 0, delete_records.handle),
            ApiSpec(ApiKey.INIT_PRODUCER_ID, "InitProducerId", 0, 5, 0, init_producer_id.handle),
            ApiSpec(
                ApiKey.OFFSET_FOR_LEADER_EPOCH,
                "OffsetForLeaderEpoch",
                0,
                4,
                0,
                offset_for_leader_epoch.handle,
            ),
            ApiSpec(
                ApiKey.ADD_PARTITIONS_TO_TXN,
                "AddPartitionsToTxn",
                0,
                5,
                0,
                add_partitions_to_txn.handle,
            ),
            ApiSpec(
                ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 4, 0, add_offsets_to_txn.handle
            ),
            ApiSpec(ApiKey.END_TXN, "EndTxn", 0, 4, 0, end_txn.handle),
            ApiSpec(ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkers", 0, 1, 1, write_txn_markers.handle),
            ApiSpec(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 4, 0, txn_offset_commit.handle),
            # v0 is advertised as Kafka 3.9 does; kio decodes from v1.
            ApiSpec(ApiKey.DESCRIBE_ACLS, "DescribeAcls", 0, 3, 1, describe_acls.handle),
            ApiSpec(ApiKey.CREATE_ACLS, "CreateAcls", 0, 3, 1, create_acls.handle),
            ApiSpec(ApiKey.DELETE_ACLS, "DeleteAcls", 0, 3, 1, delete_acls.handle),
            ApiSpec(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", 0, 4, 0, describe_configs.handle),
            ApiSpec(ApiKey.ALTER_CONFIGS, "AlterConfigs", 0, 2, 0, alter_configs.handle),
            ApiSpec(
                ApiKey.ALTER_REPLICA_LOG_DIRS,
                "AlterReplicaLogDirs",
                0,
                2,
                0,
                alter_replica_log_dirs.handle,
            ),
            ApiSpec(ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirs", 0, 4, 0, describe_log_dirs.handle),
            ApiSpec(
                ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2, 0, sasl_authenticate.handle
            ),
            ApiSpec(
                ApiKey.CREATE_PARTITIONS, "CreatePartitions", 0, 3, 0, create_partitions.handle
            ),
            ApiSpec(ApiKey.DELETE_GROUPS, "DeleteGroups", 0, 2, 0, delete_groups.handle),
            ApiSpec(ApiKey.ELECT_LEADERS, "ElectLeaders", 0, 2, 0, elect_leaders.handle),
            ApiSpec(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                "IncrementalAlterConfigs",
                0,
                1,
                0,
                incremental_alter_configs.handle,
            ),
            ApiSpec(
                ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                "AlterPartitionReassignments",
                0,
                0,
                0,
                alter_partition_reassignments.handle,
            ),
            ApiSpec(
                ApiKey.LIST_PARTITION_REASSIGNMENTS,
                "ListPartitionReassignments",
                0,
                0,
                0,
                list_partition_reassignments.handle,
            ),
            ApiSpec(ApiKey.OFFSET_DELETE, "OffsetDelete", 0, 0, 0, offset_delete.handle),
            ApiSpec(
                ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                "DescribeUserScramCredentials",
                0,
                0,
                0,
                describe_user_scram_credentials.handle,
            ),
            ApiSpec(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                "AlterUserScramCredentials",
                0,
                0,
                0,
                alter_user_scram_credentials.handle,
            ),
            # Partition leaders' ISR changes, to the controller (controller/alter_partition.py).
            ApiSpec(ApiKey.ALTER_PARTITION, "AlterPartition", 0, 3, 0, alter_partition.handle),
            # Advertised as Kafka 3.9 does; closes the connection (no forwarding in ZK mode).
            ApiSpec(ApiKey.ENVELOPE, "Envelope", 0, 0, 0, envelope.handle),
            ApiSpec(
                ApiKey.DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0, 0, describe_producers.handle
            ),
            ApiSpec(
                ApiKey.DESCRIBE_TRANSACTIONS,
                "DescribeTransactions",
                0,
                0,
                0,
                describe_transactions.handle,
            ),
            ApiSpec(
                ApiKey.LIST_TRANSACTIONS, "ListTransactions", 0, 1, 0, list_transactions.handle
            ),
            # Producer id blocks for Kafka brokers, from the controller (controller/producer_ids).
            ApiSpec(
                ApiKey.ALLOCATE_PRODUCER_IDS,
                "AllocateProducerIds",
                0,
                0,
                0,
                allocate_producer_ids.handle,
            ),
        ]
    )
