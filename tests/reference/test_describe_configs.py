"""Differential: DescribeConfigs of a broker, of the cluster-wide broker default and of topics
answer the same on Apache Kafka 3.9 and on our brokers: the same config names, values,
sources, synonyms (in order), read-only and sensitive flags and types.

Both clusters (one broker each: the answers are per broker, shared with the worker's other
one-broker reference modules, which run before this one) get the same changes first: a
topic created with overrides and one without, per-broker dynamic configs on broker 1 and
cluster-wide dynamic defaults, one of them (log.retention.ms) set at both levels so that the
synonym chains have every layer. `config_diff` says what is normalised (paths and ports).

Every difference must be covered by KNOWN_DIFFERENCES, each group with its reason (an entry of
DEVIATIONS.md), and every config a group covers must still differ, so the list stays exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kafka.admin import KafkaAdminClient

from tests.integration.conftest import ClusterHandle, wait_until
from tests.reference.config_diff import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    Answer,
    Difference,
    alter_broker_configs,
    describe,
    differences,
)
from tests.reference.conftest import OneBroker

BROKER_ID = 1
WAIT_S = 60.0
TOPICS = {
    "overridden": {
        "num_partitions": 1,
        "replication_factor": 1,
        "configs": {
            "retention.ms": "3600000",
            "cleanup.policy": "compact",
            "max.message.bytes": "2000000",
            "segment.bytes": "1048576",
            "min.insync.replicas": "1",
            "message.timestamp.type": "LogAppendTime",
            "segment.jitter.ms": "100",
        },
    },
    "plain": {"num_partitions": 1, "replication_factor": 1},
}
BROKER_CONFIGS = {"log.retention.ms": "7200000", "log.cleaner.min.cleanable.ratio": "0.4"}
CLUSTER_DEFAULTS = {
    "log.retention.ms": "14400000",
    "log.retention.bytes": "1073741824",
    "log.segment.bytes": "536870912",
}
# (label, kind, resource type, resource name, include synonyms)
RESOURCES = (
    ("broker 1", "broker", BROKER_RESOURCE, str(BROKER_ID), True),
    ("broker 1 without synonyms", "broker", BROKER_RESOURCE, str(BROKER_ID), False),
    ("cluster default", "broker default", BROKER_RESOURCE, "", True),
    ("topic overridden", "topic", TOPIC_RESOURCE, "overridden", True),
    ("topic overridden without synonyms", "topic", TOPIC_RESOURCE, "overridden", False),
    ("topic plain", "topic", TOPIC_RESOURCE, "plain", True),
)


@dataclass(frozen=True)
class Known:
    """Differences of one aspect, for the configs named or starting with a prefix, on the
    resources of one kind; `reason` matches an entry of DEVIATIONS.md."""

    kind: str
    aspect: str
    reason: str
    names: str = ""  # whitespace-separated config names
    prefixes: tuple[str, ...] = ()
    excepted: str = ""  # names the prefixes would cover but that do not differ

    def covers(self, kind: str, difference: Difference) -> bool:
        return (
            kind == self.kind
            and difference.aspect == self.aspect
            and self.matches(difference.config)
        )

    def matches(self, name: str) -> bool:
        if name in self.excepted.split():
            return False
        return name in self.names.split() or name.startswith(self.prefixes)


KNOWN_DIFFERENCES = (
    Known(
        "broker",
        "only in kafka",
        "KRaft-only settings (DEVIATIONS: Configuration, configs Kafka 3.9 describes)",
        names="process.roles node.id controller.listener.names broker.heartbeat.interval.ms"
        " broker.session.timeout.ms initial.broker.registration.timeout.ms"
        " early.start.listeners eligible.leader.replicas.enable"
        " alter.config.policy.kraft.compatibility.enable zookeeper.metadata.migration.enable"
        " log.dir.failure.timeout.ms max.request.partition.size.limit",
        prefixes=("controller.quorum.", "metadata."),
    ),
    Known(
        "broker",
        "only in kafka",
        "security: no GSSAPI or OAUTHBEARER (the Kerberos and login-refresh keys are accepted,"
        " inert), no SASL callback or login classes, no principal builder,"
        " no ZooKeeper TLS or ACLs (DEVIATIONS: Configuration, Security), and the TLS"
        " keys Kafka 3.9 has beyond ours",
        names="principal.builder.class security.providers"
        " connections.max.reauth.ms connection.failed.authentication.delay.ms"
        " zookeeper.clientCnxnSocket ssl.allow.dn.changes"
        " ssl.allow.san.changes",
        prefixes=("sasl.", "zookeeper.ssl.", "password.encoder."),
        excepted="sasl.enabled.mechanisms sasl.jaas.config sasl.mechanism.inter.broker.protocol"
        " sasl.kerberos.service.name sasl.kerberos.kinit.cmd"
        " sasl.kerberos.ticket.renew.window.factor sasl.kerberos.ticket.renew.jitter"
        " sasl.kerberos.min.time.before.relogin sasl.kerberos.principal.to.local.rules"
        " sasl.login.refresh.window.factor sasl.login.refresh.window.jitter"
        " sasl.login.refresh.min.period.seconds sasl.login.refresh.buffer.seconds",
    ),
    Known(
        "broker",
        "only in kafka",
        "tiered storage (KIP-405, Kafka 3.6+) is not implemented (DEVIATIONS: Configuration)",
        names="remote.fetch.max.wait.ms",
        prefixes=("remote.log.", "log.local.retention."),
    ),
    Known(
        "broker",
        "only in kafka",
        "no replication quotas, quota callback or connection-rate quota (DEVIATIONS:"
        " Configuration)",
        names="replication.quota.window.num"
        " replication.quota.window.size.seconds alter.log.dirs.replication.quota.window.num"
        " alter.log.dirs.replication.quota.window.size.seconds client.quota.callback.class"
        " max.connection.creation.rate",
    ),
    Known(
        "broker",
        "only in kafka",
        "no JMX metrics or metrics reporters, no client telemetry (DEVIATIONS: Configuration)",
        names="metric.reporters metrics.num.samples metrics.recording.level"
        " metrics.sample.window.ms kafka.metrics.polling.interval.secs kafka.metrics.reporters"
        " auto.include.jmx.reporter telemetry.max.bytes",
    ),
    Known(
        "broker",
        "only in kafka",
        "transaction coordinator features not built yet: KIP-890 verification, the load"
        " buffer (DEVIATIONS: Configuration)",
        names="transaction.partition.verification.enable transaction.state.log.load.buffer.size",
    ),
    Known(
        "broker",
        "only in kafka",
        "the KIP-848 consumer and KIP-932 share group protocols and Kafka 3.7's coordinator"
        " runtime are not implemented (DEVIATIONS: Configuration)",
        prefixes=("group.consumer.", "group.share.", "group.coordinator."),
    ),
    Known(
        "broker",
        "only in kafka",
        "other Kafka features not implemented: broker id generation, topic and config"
        " policies, a control-plane listener, moving replicas between log"
        " directories, producer id expiry, Kafka 3.2+"
        " knobs, and the group coordinator's load buffer, commit acks and offsets-topic"
        " compression (DEVIATIONS: Configuration)",
        names="broker.id.generation.enable reserved.broker.max.id alter.config.policy.class.name"
        " create.topic.policy.class.name control.plane.listener.name"
        " num.replica.alter.log.dirs.threads producer.id.expiration.ms"
        " socket.listen.backlog.size compression.gzip.level"
        " compression.lz4.level compression.zstd.level offsets.load.buffer.size"
        " offsets.commit.required.acks offsets.topic.compression.codec",
    ),
    Known(
        "broker",
        "only in ours",
        "limits of ours (DEVIATIONS: Limits)",
        names="create.topics.max.partitions message.max.decompressed.bytes",
    ),
    Known(
        "broker",
        "only in ours",
        "a Prometheus endpoint where Kafka has JMX (DEVIATIONS: Metrics)",
        names="metrics.prometheus.listener",
    ),
    Known(
        "broker",
        "only in ours",
        "self-fencing from ZooKeeper, which ZooKeeper-mode Kafka lacks (DEVIATIONS: Controller"
        " and ZooKeeper)",
        names="zookeeper.session.fencing.enable",
    ),
    Known(
        "broker",
        "read_only",
        "keys Kafka updates dynamically but we only read at start-up (DEVIATIONS: Controller"
        " and ZooKeeper, dynamic broker configs)",
        names="listeners listener.security.protocol.map background.threads"
        " num.io.threads num.network.threads num.recovery.threads.per.data.dir"
        " num.replica.fetchers log.cleaner.backoff.ms log.cleaner.dedupe.buffer.size"
        " log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size"
        " log.cleaner.io.max.bytes.per.second log.cleaner.threads max.connections"
        " max.connections.per.ip max.connections.per.ip.overrides"
        " unclean.leader.election.enable",
    ),
    Known(
        "topic",
        "only in kafka",
        "topic configs added after Kafka 3.0: tiered storage (KIP-405), compression levels"
        " (KIP-390) (DEVIATIONS: Configuration)",
        names="remote.storage.enable local.retention.ms local.retention.bytes"
        " remote.log.copy.disable remote.log.delete.on.disable compression.gzip.level"
        " compression.lz4.level compression.zstd.level",
    ),
)


@dataclass(frozen=True)
class Described:
    label: str
    kind: str
    kafka: Answer
    ours: Answer


@pytest.fixture(scope="module")
def described(one_broker_to_change: OneBroker) -> Iterator[list[Described]]:
    clusters = {impl: one_broker_to_change(impl) for impl in ("kafka", "ours")}
    for cluster in clusters.values():
        _prepare(cluster)
    yield [
        Described(
            label,
            kind,
            describe(clusters["kafka"], BROKER_ID, resource_type, name, synonyms),
            describe(clusters["ours"], BROKER_ID, resource_type, name, synonyms),
        )
        for label, kind, resource_type, name, synonyms in RESOURCES
    ]


def _prepare(cluster: ClusterHandle) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=60000)
    try:
        admin.create_topics(TOPICS)
    finally:
        admin.close()
    alter_broker_configs(cluster, BROKER_ID, str(BROKER_ID), BROKER_CONFIGS)
    alter_broker_configs(cluster, BROKER_ID, "", CLUSTER_DEFAULTS)
    # Brokers apply dynamic configs when ZooKeeper notifies them; topics are described once
    # the broker knows them.
    wait_until(lambda: _applied(cluster), WAIT_S, f"{cluster.dir}: the configs to apply")


def _applied(cluster: ClusterHandle) -> bool:
    entries = describe(cluster, BROKER_ID, BROKER_RESOURCE, str(BROKER_ID), False).entries
    dynamic = {**CLUSTER_DEFAULTS, **BROKER_CONFIGS}
    if any(entries[name].value != value for name, value in dynamic.items()):
        return False
    return all(
        describe(cluster, BROKER_ID, TOPIC_RESOURCE, topic, False).error_code == 0
        for topic in TOPICS
    )


def test_describe_configs_match_but_for_the_listed_differences(
    described: list[Described],
) -> None:
    unlisted: list[Difference] = []
    found: dict[tuple[str, str], set[str]] = {}  # (kind, aspect) -> configs that differ
    present: dict[str, set[str]] = {}  # kind -> configs either side describes
    for item in described:
        for difference in differences(item.label, item.kafka, item.ours):
            found.setdefault((item.kind, difference.aspect), set()).add(difference.config)
            if not any(known.covers(item.kind, difference) for known in KNOWN_DIFFERENCES):
                unlisted.append(difference)
        present.setdefault(item.kind, set()).update(item.kafka.entries, item.ours.entries)
    report = [f"unlisted difference: {d}" for d in unlisted]
    for known in KNOWN_DIFFERENCES:
        covered = {name for name in present.get(known.kind, ()) if known.matches(name)}
        covered |= set(known.names.split())
        vanished = covered - found.get((known.kind, known.aspect), set())
        report += [
            f"listed difference no longer occurs (remove it here and from DEVIATIONS.md):"
            f" {known.kind} {name} [{known.aspect}]"
            for name in sorted(vanished)
        ]
    assert not report, "\n".join(report)


def test_topic_answers_are_compared(described: list[Described]) -> None:
    """The comparison is not vacuous: both sides describe the topics and the broker."""
    for item in described:
        assert item.kafka.error_code == 0 == item.ours.error_code, item.label
        if item.kind != "broker default":
            assert len(item.ours.entries) >= 25, item.label
    overridden = next(item for item in described if item.label == "topic overridden")
    retention = overridden.ours.entries["retention.ms"]
    assert [s[2] for s in retention.synonyms] == [1, 2, 3, 5]  # topic, broker, default, Kafka
