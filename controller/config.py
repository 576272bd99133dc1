"""The controller's settings (a slice of the broker's server.properties)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    default_replication_factor: int = 1  # default.replication.factor
    num_partitions: int = 1  # num.partitions
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    delete_topic_enable: bool = True  # delete.topic.enable
    # create.topics.max.partitions: partitions one CreateTopics request may create in total,
    # so a single request cannot make the controller place millions of replicas.
    create_topics_max_partitions: int = 10000
    auto_leader_rebalance_enable: bool = True  # auto.leader.rebalance.enable
    leader_imbalance_per_broker_percentage: int = 10  # leader.imbalance.per.broker.percentage
    leader_imbalance_check_interval_seconds: int = 300  # leader.imbalance.check.interval.seconds
