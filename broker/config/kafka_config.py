"""Broker configuration: Kafka's `server.properties` key names, types and defaults.

Every key a broker accepts is declared once in `CONFIG_DEFS`. Keys we accept but do not act on
yet (thread counts, socket buffer sizes...) are declared with `used=False` so ordinary Kafka
property files start cleanly; anything else is a start-up error, as the project requires
(Kafka itself only warns about unknown keys - see DEVIATIONS.md).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config import inter_broker_protocol
from broker.network.quotas import parse_per_ip_overrides
from broker.network.sasl import SASL_PROTOCOLS
from broker.replication.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from controller.topic_config_defs import (
    TOPIC_CONFIGS,
    AtLeast,
    ConfigType,
    OneOf,
    TopicConfigDef,
)


class ConfigError(ValueError):
    """An unknown key or an invalid value; the message names the key."""


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    parse: Callable[[str], Any]
    default: Any
    used: bool = True
    # Kafka's ConfigDef.Type name, as DescribeConfigs reports it; None: the one `parse` implies
    # (see `config_type`). Set where Kafka's differs (LONG and SHORT numbers, listener lists
    # that Kafka keeps as one STRING).
    type_name: str | None = None
    # False for keys Kafka accepts but DescribeConfigs does not list (the authorizer's own).
    described: bool = True

    @property
    def config_type(self) -> str:
        if self.type_name is not None:
            return self.type_name
        return _TYPE_OF_PARSER.get(self.parse, "INT")


def _int(text: str) -> int:
    return int(text.strip())


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"expected true or false, got {text!r}")
    return value == "true"


def _str(text: str) -> str:
    return text.strip()


def _optional_int(text: str) -> int | None:
    return None if text.strip() == "" else int(text.strip())


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


# A topic config's type as the broker config supplying its default is parsed: LIST ones
# (log.cleanup.policy) stay text, which logs read as they read a topic override.
_PARSER_OF_TOPIC_TYPE: dict[ConfigType, Callable[[str], Any]] = {
    ConfigType.INT: _int,
    ConfigType.LONG: _int,
    ConfigType.DOUBLE: float,
    ConfigType.BOOLEAN: _bool,
    ConfigType.STRING: _str,
    ConfigType.LIST: _str,
}
_TOPIC_CONFIG_OF_BROKER_DEFAULT: dict[str, TopicConfigDef] = {
    d.server_default: d for d in TOPIC_CONFIGS.values() if d.server_default is not None
}


def _topic_default(name: str, *, used: bool = True) -> ConfigDef:
    """Broker config `name`, which supplies a topic config's default: its type and Kafka's
    default are the topic config's (controller/topic_config_defs.py), as Kafka's KafkaConfig
    takes them from its LogConfig."""
    topic_config = _TOPIC_CONFIG_OF_BROKER_DEFAULT[name]
    parse = _PARSER_OF_TOPIC_TYPE[topic_config.config_type]
    return ConfigDef(
        name, parse, parse(topic_config.default), used, type_name=topic_config.config_type.value
    )


_TYPE_OF_PARSER: dict[Callable[[str], Any], str] = {
    _bool: "BOOLEAN",
    _str: "STRING",
    _list: "LIST",
    float: "DOUBLE",
}
LONG_MAX = 9223372036854775807
_MS_PER_HOUR = 3_600_000
# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the configs one setting can come from, most
# important first, each with the factor that turns its value into the first's unit. While the
# first is unset (Kafka's default is null) the next one set applies (`with_synonyms`).
_ROLL = (("log.roll.ms", 1), ("log.roll.hours", _MS_PER_HOUR))
_RETENTION = (
    ("log.retention.ms", 1),
    ("log.retention.minutes", 60_000),
    ("log.retention.hours", _MS_PER_HOUR),
)
_ROLL_JITTER = (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _MS_PER_HOUR))
BROKER_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    **{name: _ROLL for name, _ in _ROLL},
    **{name: _RETENTION for name, _ in _RETENTION},
    **{name: _ROLL_JITTER for name, _ in _ROLL_JITTER},
    # Only this way round, as in Kafka: the scheduler's interval has no synonym.
    "log.flush.interval.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
}
ACL_AUTHORIZER_CLASS = "kafka.security.authorizer.AclAuthorizer"
# Broker-level defaults of topic configs refused at start-up (and in dynamic updates) below
# their topic config's minimum. Kafka checks the others too; ours only these, in this order.
_CHECKED_TOPIC_DEFAULTS = (
    "min.insync.replicas",
    "log.segment.bytes",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "message.max.bytes",
)
TIMESTAMP_BOUND_CONFIGS = (
    "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
)


_DEFS: list[ConfigDef] = [
    ConfigDef("broker.id", _int, -1),
    ConfigDef("broker.rack", _str, None),
    # Follower fetching (KIP-392): the leader names a consumer's preferred read replica.
    ConfigDef("replica.selector.class", _str, None),
    ConfigDef("listeners", _list, ["PLAINTEXT://:9092"], type_name="STRING"),
    ConfigDef("advertised.listeners", _list, None, type_name="STRING"),
    ConfigDef(
        "listener.security.protocol.map",
        _str,
        # Kafka 3.9's order (built from a Java HashMap); Kafka 3.0 listed PLAINTEXT first.
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
    ),
    ConfigDef("inter.broker.listener.name", _str, None),
    # host:port of the Prometheus endpoint (broker.metrics.prometheus); unset: none. Not a
    # Kafka key: Kafka exposes JMX (DEVIATIONS.md, "Metrics").
    ConfigDef("metrics.prometheus.listener", _str, None),
    ConfigDef("security.inter.broker.protocol", _str, "PLAINTEXT"),
    # Below 2.7-IV2 leaders write ISR changes to ZooKeeper themselves (broker/replication/isr.py)
    # instead of sending AlterPartition.
    ConfigDef(
        "inter.broker.protocol.version",
        inter_broker_protocol.validated,
        inter_broker_protocol.LATEST,
        type_name="STRING",
    ),
    # TLS (broker.network.tls). Each may also be set per listener as
    # listener.name.<listener, lower case>.<key>, as in Kafka.
    ConfigDef("ssl.keystore.type", _str, "JKS"),
    ConfigDef("ssl.keystore.location", _str, None),
    ConfigDef("ssl.keystore.password", _str, None, type_name="PASSWORD"),
    ConfigDef("ssl.keystore.certificate.chain", _str, None, type_name="PASSWORD"),
    ConfigDef("ssl.keystore.key", _str, None, type_name="PASSWORD"),
    ConfigDef("ssl.key.password", _str, None, type_name="PASSWORD"),
    ConfigDef("ssl.truststore.type", _str, "JKS"),
    ConfigDef("ssl.truststore.location", _str, None),
    ConfigDef("ssl.truststore.password", _str, None, type_name="PASSWORD"),
    ConfigDef("ssl.truststore.certificates", _str, None, type_name="PASSWORD"),
    ConfigDef("ssl.client.auth", _str, "none"),
    ConfigDef("ssl.endpoint.identification.algorithm", _str, "https"),
    ConfigDef("ssl.protocol", _str, "TLSv1.3", used=False),
    ConfigDef("ssl.enabled.protocols", _list, ["TLSv1.2", "TLSv1.3"]),
    ConfigDef("ssl.cipher.suites", _list, [], used=False),
    ConfigDef("ssl.principal.mapping.rules", _str, "DEFAULT"),
    ConfigDef("ssl.keymanager.algorithm", _str, "SunX509", used=False),
    ConfigDef("ssl.trustmanager.algorithm", _str, "PKIX", used=False),
    ConfigDef("ssl.secure.random.implementation", _str, None, used=False),
    ConfigDef("ssl.provider", _str, None, used=False),
    ConfigDef("ssl.engine.factory.class", _str, None, used=False, type_name="CLASS"),
    # SASL (broker.network.sasl, broker.security.sasl_config). sasl.enabled.mechanisms may be
    # set per listener; the JAAS config only per listener and mechanism, as
    # listener.name.<listener>.<mechanism>.sasl.jaas.config (Kafka ignores the bare key).
    ConfigDef("sasl.enabled.mechanisms", _list, ["GSSAPI"]),
    ConfigDef("sasl.mechanism.inter.broker.protocol", _str, "GSSAPI"),
    ConfigDef("sasl.jaas.config", _str, None, type_name="PASSWORD"),
    # Kafka's Kerberos (GSSAPI) and login-refresh (GSSAPI, OAUTHBEARER) settings: accepted,
    # described and dynamically updatable as in Kafka, with no effect (no GSSAPI here).
    ConfigDef("sasl.kerberos.service.name", _str, None, used=False),
    ConfigDef("sasl.kerberos.kinit.cmd", _str, "/usr/bin/kinit", used=False),
    ConfigDef("sasl.kerberos.ticket.renew.window.factor", float, 0.8, used=False),
    ConfigDef("sasl.kerberos.ticket.renew.jitter", float, 0.05, used=False),
    ConfigDef("sasl.kerberos.min.time.before.relogin", _int, 60000, used=False, type_name="LONG"),
    ConfigDef("sasl.kerberos.principal.to.local.rules", _list, ["DEFAULT"], used=False),
    ConfigDef("sasl.login.refresh.window.factor", float, 0.8, used=False),
    ConfigDef("sasl.login.refresh.window.jitter", float, 0.05, used=False),
    ConfigDef("sasl.login.refresh.min.period.seconds", _int, 60, used=False, type_name="SHORT"),
    ConfigDef("sasl.login.refresh.buffer.seconds", _int, 300, used=False, type_name="SHORT"),
    # Delegation tokens (broker.security.delegation_tokens): on when a secret key is set.
    ConfigDef("delegation.token.master.key", _str, None, type_name="PASSWORD"),
    ConfigDef("delegation.token.secret.key", _str, None, type_name="PASSWORD"),
    ConfigDef("delegation.token.max.lifetime.ms", _int, 604800000, type_name="LONG"),
    ConfigDef("delegation.token.expiry.time.ms", _int, 86400000, type_name="LONG"),
    ConfigDef("delegation.token.expiry.check.interval.ms", _int, 3600000, type_name="LONG"),
    # The authorizer (broker.security.authorizer); empty: every request is allowed.
    ConfigDef("authorizer.class.name", _str, "", type_name="STRING"),
    ConfigDef("super.users", _str, None, described=False),
    ConfigDef("allow.everyone.if.no.acl.found", _bool, False, described=False),
    ConfigDef("log.dirs", _list, None, type_name="STRING"),
    ConfigDef("log.dir", _list, ["/tmp/kafka-logs"], type_name="STRING"),
    ConfigDef("zookeeper.connect", _str, None),
    ConfigDef("zookeeper.session.timeout.ms", _int, 18000),
    ConfigDef("zookeeper.connection.timeout.ms", _optional_int, None),
    # Not a Kafka key: a broker that has heard nothing from ZooKeeper for longer than the
    # session timeout ZooKeeper granted stops leading (broker.cluster.session_fence,
    # DEVIATIONS.md "Controller and ZooKeeper").
    ConfigDef("zookeeper.session.fencing.enable", _bool, True),
    # Creator-only ACLs on the znodes this broker creates (broker.security.zk_client_security).
    ConfigDef("zookeeper.set.acl", _bool, False),
    ConfigDef("num.partitions", _int, 1),
    ConfigDef("default.replication.factor", _int, 1),
    ConfigDef("auto.create.topics.enable", _bool, True),
    ConfigDef("delete.topic.enable", _bool, True),
    _topic_default("unclean.leader.election.enable"),
    _topic_default("min.insync.replicas"),
    _topic_default("log.segment.bytes"),
    ConfigDef("log.roll.ms", _optional_int, None, type_name="LONG"),
    ConfigDef("log.roll.hours", _int, 168),
    _topic_default("log.index.interval.bytes"),
    _topic_default("log.index.size.max.bytes"),
    _topic_default("log.message.timestamp.type"),
    _topic_default("log.message.timestamp.difference.max.ms"),
    _topic_default("log.message.timestamp.before.max.ms"),
    _topic_default("log.message.timestamp.after.max.ms"),
    _topic_default("message.max.bytes"),
    ConfigDef("fetch.max.bytes", _int, 57671680),
    ConfigDef("max.incremental.fetch.session.cache.slots", _int, 1000),
    ConfigDef("socket.request.max.bytes", _int, 104857600),
    ConfigDef("queued.max.requests", _int, 500, used=False),
    ConfigDef("max.connections", _int, 2147483647),
    ConfigDef("max.connections.per.ip", _int, 2147483647),
    ConfigDef("max.connections.per.ip.overrides", _str, ""),
    # Client quotas' sample windows (broker/quotas): produce and fetch byte rates ...
    ConfigDef("quota.window.num", _int, 11),
    ConfigDef("quota.window.size.seconds", _int, 1),
    # ... and controller mutations.
    ConfigDef("controller.quota.window.num", _int, 11),
    ConfigDef("controller.quota.window.size.seconds", _int, 1),
    # Not Kafka keys: bounds Kafka enforces implicitly (JVM heap, streaming decompression);
    # named here so they can be tuned and are listed in DEVIATIONS.md.
    ConfigDef("message.max.decompressed.bytes", _int, 67108864),
    ConfigDef("create.topics.max.partitions", _int, 10000),
    ConfigDef("connections.max.idle.ms", _int, 600000, type_name="LONG"),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", _int, 60000),
    ConfigDef("log.flush.interval.ms", _optional_int, None, used=False, type_name="LONG"),
    ConfigDef("log.flush.scheduler.interval.ms", _int, LONG_MAX, used=False, type_name="LONG"),
    _topic_default("log.flush.interval.messages", used=False),
    ConfigDef("log.retention.hours", _int, 168),
    ConfigDef("log.retention.minutes", _optional_int, None),
    ConfigDef("log.retention.ms", _optional_int, None, type_name="LONG"),
    _topic_default("log.retention.bytes"),
    ConfigDef("log.retention.check.interval.ms", _int, 300000, type_name="LONG"),
    _topic_default("log.cleanup.policy"),
    ConfigDef("log.cleaner.enable", _bool, True),
    # The log cleaner (broker/log/compaction.py): CleanerConfig.from_broker_config reads these;
    # the log.cleaner.* topic-config defaults go into LogConfig.
    ConfigDef("log.cleaner.backoff.ms", _int, 15000, type_name="LONG"),
    ConfigDef("log.cleaner.dedupe.buffer.size", _int, 134217728, type_name="LONG"),
    ConfigDef("log.cleaner.io.buffer.load.factor", float, 0.9),
    ConfigDef("log.cleaner.io.buffer.size", _int, 524288),
    ConfigDef("log.cleaner.io.max.bytes.per.second", float, 1.7976931348623157e308),
    _topic_default("log.cleaner.delete.retention.ms"),
    _topic_default("log.cleaner.min.cleanable.ratio"),
    _topic_default("log.cleaner.min.compaction.lag.ms"),
    _topic_default("log.cleaner.max.compaction.lag.ms"),
    ConfigDef("log.cleaner.threads", _int, 1, used=False),
    _topic_default("log.segment.delete.delay.ms"),
    _topic_default("compression.type", used=False),
    ConfigDef("num.network.threads", _int, 3, used=False),
    ConfigDef("num.io.threads", _int, 8, used=False),
    ConfigDef("num.recovery.threads.per.data.dir", _int, 1, used=False),
    ConfigDef("num.replica.fetchers", _int, 1),
    ConfigDef("socket.send.buffer.bytes", _int, 102400, used=False),
    ConfigDef("socket.receive.buffer.bytes", _int, 102400, used=False),
    ConfigDef("replica.lag.time.max.ms", _int, 30000, type_name="LONG"),
    ConfigDef("replica.fetch.max.bytes", _int, 1048576),
    ConfigDef("replica.fetch.response.max.bytes", _int, 10485760),
    ConfigDef("replica.fetch.wait.max.ms", _int, 500),
    ConfigDef("replica.fetch.min.bytes", _int, 1),
    ConfigDef("replica.fetch.backoff.ms", _int, 1000),
    ConfigDef("replica.socket.timeout.ms", _int, 30000),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", _int, 5000, type_name="LONG"),
    ConfigDef("offsets.topic.replication.factor", _int, 3, type_name="SHORT"),
    ConfigDef("offsets.topic.num.partitions", _int, 50),
    ConfigDef("offsets.topic.segment.bytes", _int, 104857600),
    ConfigDef("offsets.commit.timeout.ms", _int, 5000),
    ConfigDef("offsets.retention.minutes", _int, 10080),
    ConfigDef("offsets.retention.check.interval.ms", _int, 600000, type_name="LONG"),
    ConfigDef("offset.metadata.max.bytes", _int, 4096),
    ConfigDef("transaction.state.log.num.partitions", _int, 50),
    ConfigDef("transaction.state.log.replication.factor", _int, 3, type_name="SHORT"),
    ConfigDef("transaction.state.log.min.isr", _int, 2),
    ConfigDef("transaction.state.log.segment.bytes", _int, 104857600),
    ConfigDef("transaction.max.timeout.ms", _int, 900000),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int, 10000),
    ConfigDef("transactional.id.expiration.ms", _int, 604800000),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", _int, 3600000),
    ConfigDef("group.initial.rebalance.delay.ms", _int, 3000),
    ConfigDef("group.min.session.timeout.ms", _int, 6000),
    ConfigDef("group.max.session.timeout.ms", _int, 1800000),
    ConfigDef("group.max.size", _int, 2147483647),
    ConfigDef("controlled.shutdown.enable", _bool, True),
    ConfigDef("controlled.shutdown.max.retries", _int, 3),
    ConfigDef("controlled.shutdown.retry.backoff.ms", _int, 5000, type_name="LONG"),
    ConfigDef("controller.socket.timeout.ms", _int, 30000),
    ConfigDef("auto.leader.rebalance.enable", _bool, True),
    ConfigDef("leader.imbalance.per.broker.percentage", _int, 10),
    ConfigDef("leader.imbalance.check.interval.seconds", _int, 300, type_name="LONG"),
    # Kafka 3.0 settings of features we have, accepted and described but not acted on: the
    # broker-level defaults of topic configs that are themselves inert here (message format,
    # down-conversion, preallocation, roll jitter), and tuning knobs of
    # Kafka's JVM machinery (threads, purgatories, buffers, request timeouts).
    _topic_default("log.message.format.version", used=False),
    _topic_default("log.message.downconversion.enable"),
    _topic_default("log.preallocate", used=False),
    ConfigDef("log.roll.jitter.ms", _optional_int, None, used=False, type_name="LONG"),
    ConfigDef("log.roll.jitter.hours", _int, 0, used=False),
    ConfigDef("log.flush.start.offset.checkpoint.interval.ms", _int, 60000, used=False),
    ConfigDef("background.threads", _int, 10, used=False),
    ConfigDef("request.timeout.ms", _int, 30000),
    ConfigDef("queued.max.request.bytes", _int, -1, used=False, type_name="LONG"),
    ConfigDef("replica.socket.receive.buffer.bytes", _int, 65536, used=False),
    ConfigDef("fetch.purgatory.purge.interval.requests", _int, 1000, used=False),
    ConfigDef("producer.purgatory.purge.interval.requests", _int, 1000, used=False),
    ConfigDef("delete.records.purgatory.purge.interval.requests", _int, 1, used=False),
    ConfigDef("socket.connection.setup.timeout.ms", _int, 10000, used=False, type_name="LONG"),
    ConfigDef("socket.connection.setup.timeout.max.ms", _int, 30000, used=False, type_name="LONG"),
    ConfigDef("zookeeper.max.in.flight.requests", _int, 10, used=False),
]
CONFIG_DEFS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}
SUPPORTED_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
# Keys a listener may override as listener.name.<listener, lower case>.<key>.
LISTENER_PREFIXABLE = frozenset(
    name for name in CONFIG_DEFS if name.startswith("ssl.")
) | frozenset({"sasl.enabled.mechanisms"})
# ... and, per SASL mechanism, listener.name.<listener>.<mechanism, lower case>.sasl.jaas.config.
_MECHANISM_JAAS = re.compile(r"^(?P<mechanism>[a-z0-9-]+)\.sasl\.jaas\.config$")
JAAS_CONFIG = "sasl.jaas.config"
_LISTENER_OVERRIDE = re.compile(r"^listener\.name\.(?P<listener>[a-z0-9_]+)\.(?P<key>.+)$")

_PROPERTY = re.compile(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$")
_LISTENER = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>[^:]*):(?P<port>\d+)$")


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener_name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


def parse_endpoint(text: str) -> Endpoint:
    match = _LISTENER.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not of the form NAME://host:port")
    return Endpoint(match["name"], match["host"], int(match["port"]))


@dataclass(frozen=True, slots=True)
class KafkaConfig:
    """Parsed, validated broker settings; `values` holds every declared key."""

    values: Mapping[str, Any]
    # Keys that were set but that this broker accepts without acting on them (yet).
    ignored_keys: tuple[str, ...] = ()
    # Keys set in server.properties or by --override (the rest hold Kafka's defaults).
    explicit_keys: frozenset[str] = frozenset()
    # The text of every key that was set, as given (dynamic broker configs layer over it).
    originals: Mapping[str, str] = field(default_factory=dict)
    # listener.name.<listener>.<key> settings: listener (lower case) -> key -> value.
    listener_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def for_listener(self, listener_name: str, key: str) -> Any:
        """`key` as the listener sees it: its listener.name.<listener>.<key>, else the key's."""
        overrides = self.listener_overrides.get(listener_name.lower(), {})
        return overrides[key] if key in overrides else self.values[key]

    def listener_jaas_config(self, listener_name: str, mechanism: str) -> str | None:
        """listener.name.<listener>.<mechanism>.sasl.jaas.config, both in lower case."""
        overrides = self.listener_overrides.get(listener_name.lower(), {})
        value = overrides.get(f"{mechanism.lower()}.{JAAS_CONFIG}")
        return None if value is None else str(value)

    def security_protocol(self, listener_name: str) -> str:
        return self.listener_security_protocol_map.get(listener_name, listener_name)

    @property
    def broker_id(self) -> int:
        return int(self.values["broker.id"])

    @property
    def listeners(self) -> list[Endpoint]:
        return [parse_endpoint(text) for text in self.values["listeners"]]

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        """Advertised endpoints; an empty host means this machine's name, as in Kafka."""
        advertised = self.values["advertised.listeners"] or self.values["listeners"]
        endpoints = [parse_endpoint(text) for text in advertised]
        return [Endpoint(e.listener_name, e.host or socket.getfqdn(), e.port) for e in endpoints]

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        result = {}
        for entry in _list(self.values["listener.security.protocol.map"]):
            name, separator, protocol = entry.partition(":")
            if not separator or not name or not protocol:
                raise ValueError(f"{entry!r} is not of the form LISTENER_NAME:PROTOCOL")
            result[name.strip()] = protocol.strip()
        return result

    @property
    def inter_broker_listener_name(self) -> str:
        configured = self.values["inter.broker.listener.name"]
        if configured:
            return str(configured)
        protocol = self.values["security.inter.broker.protocol"]
        names = [n for n, p in self.listener_security_protocol_map.items() if p == protocol]
        listener_names = {e.listener_name for e in self.listeners}
        return next((n for n in names if n in listener_names), protocol)

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(p) for p in (self.values["log.dirs"] or self.values["log.dir"])]

    def with_synonyms(self, name: str) -> Any:
        """`name`'s value, else (while it is unset) that of the first of its coarser synonyms
        that is set, in `name`'s unit: log.retention.ms, else .minutes, else .hours."""
        chain = BROKER_SYNONYMS.get(name)
        if chain is None or chain[0][0] != name:
            return self.values[name]
        for synonym, factor in chain:
            value = self.values[synonym]
            if value is not None:
                return value * factor if factor != 1 else value
        return None

    @property
    def log_roll_ms(self) -> int:
        return int(self.with_synonyms("log.roll.ms"))

    @property
    def log_retention_ms(self) -> int:
        """-1: forever."""
        return int(self.with_synonyms("log.retention.ms"))

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        timeout_ms = self.values["zookeeper.connection.timeout.ms"]
        return int(timeout_ms or self.values["zookeeper.session.timeout.ms"])


def read_properties(text: str) -> dict[str, str]:
    """Java .properties subset: `key=value`, `key: value`, `#`/`!` comments, continuations."""
    result: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\"):
            logical += line[:-1]
            continue
        logical += line
        match = _PROPERTY.match(logical)
        key, value = (match[1], match[2]) if match else (logical, "")
        result[key.strip()] = value.strip()
        logical = ""
    return result


def _listener_overrides(raw: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    overrides: dict[str, dict[str, Any]] = {}
    for name, text in raw.items():
        match = _LISTENER_OVERRIDE.match(name)
        if match is None:
            continue
        if _MECHANISM_JAAS.match(match["key"]):
            overrides.setdefault(match["listener"], {})[match["key"]] = text.strip()
            continue
        if match["key"] not in LISTENER_PREFIXABLE:
            continue
        try:
            value = CONFIG_DEFS[match["key"]].parse(text)
        except ValueError as error:
            raise ConfigError(f"invalid value {text!r} for {name}: {error}") from None
        overrides.setdefault(match["listener"], {})[match["key"]] = value
    return overrides


def build_config(raw: Mapping[str, str]) -> KafkaConfig:
    listener_overrides = _listener_overrides(raw)
    prefixed = {
        f"listener.name.{listener}.{key}"
        for listener, keys in listener_overrides.items()
        for key in keys
    }
    unknown = sorted(set(raw) - set(CONFIG_DEFS) - prefixed)
    if unknown:
        raise ConfigError(f"unknown broker config key(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for name, definition in CONFIG_DEFS.items():
        if name not in raw:
            values[name] = definition.default
            continue
        try:
            values[name] = definition.parse(raw[name])
        except ValueError as error:
            raise ConfigError(f"invalid value {raw[name]!r} for {name}: {error}") from None
    ignored = tuple(
        sorted(name for name in raw if name in CONFIG_DEFS and not CONFIG_DEFS[name].used)
    )
    config = KafkaConfig(values, ignored, frozenset(raw), dict(raw), listener_overrides)
    _validate(config)
    return config


def _validate(config: KafkaConfig) -> None:
    if config["broker.id"] is None or config["broker.id"] < 0:
        raise ConfigError("broker.id must be set to a non-negative integer")
    if not config["zookeeper.connect"]:
        raise ConfigError("zookeeper.connect must be set (host:port[,host:port...][/chroot])")
    try:
        listeners = config.listeners
        config.advertised_listeners  # noqa: B018 - parse to validate
    except ValueError as error:
        raise ConfigError(f"invalid listener: {error}") from None
    if len({e.listener_name for e in listeners}) != len(listeners):
        raise ConfigError("listeners: each listener name may appear only once")
    _validate_listener_protocols(config)
    _validate_metrics_listener(config)
    authorizer = config["authorizer.class.name"]
    if authorizer and authorizer != ACL_AUTHORIZER_CLASS:
        raise ConfigError(
            f"authorizer.class.name: unknown authorizer class {authorizer!r}"
            f" (this broker has {ACL_AUTHORIZER_CLASS})"
        )
    selector = config["replica.selector.class"]
    if selector and selector.strip() != RACK_AWARE_REPLICA_SELECTOR:
        raise ConfigError(
            f"replica.selector.class: unknown replica selector class {selector!r}"
            f" (this broker has {RACK_AWARE_REPLICA_SELECTOR})"
        )
    _require_range(config, "num.partitions", 1)
    _require_range(config, "default.replication.factor", 1)
    for name in _CHECKED_TOPIC_DEFAULTS:
        _require_range(config, name, _topic_minimum(name))
    _require_range(config, "socket.request.max.bytes", 1)
    _require_range(config, "fetch.max.bytes", 1024)
    _require_range(config, "max.incremental.fetch.session.cache.slots", 0)
    _require_range(config, "max.connections", 0)
    _require_range(config, "max.connections.per.ip", 0)
    for name in (
        "quota.window.num",
        "quota.window.size.seconds",
        "controller.quota.window.num",
        "controller.quota.window.size.seconds",
    ):
        _require_range(config, name, 1)
    _require_range(config, "message.max.decompressed.bytes", 1)
    try:
        parse_per_ip_overrides(config["max.connections.per.ip.overrides"])
    except ValueError as error:
        raise ConfigError(f"max.connections.per.ip.overrides: {error}") from None
    _require_range(config, "create.topics.max.partitions", 1)
    _require_range(config, "num.replica.fetchers", 1)
    _require_range(config, "offsets.topic.replication.factor", 1)
    _require_range(config, "offsets.topic.num.partitions", 1)
    _require_range(config, "offsets.topic.segment.bytes", 1)
    _require_range(config, "transaction.state.log.num.partitions", 1)
    _require_range(config, "transaction.state.log.replication.factor", 1)
    _require_range(config, "transaction.state.log.min.isr", 1)
    _require_range(config, "transaction.state.log.segment.bytes", 1)
    _require_range(config, "transaction.max.timeout.ms", 1)
    _require_range(config, "transaction.abort.timed.out.transaction.cleanup.interval.ms", 1)
    _require_range(config, "transactional.id.expiration.ms", 1)
    _require_range(config, "transaction.remove.expired.transaction.cleanup.interval.ms", 1)
    _require_range(config, "offsets.commit.timeout.ms", 1)
    _require_range(config, "offsets.retention.minutes", 1)
    _require_range(config, "offsets.retention.check.interval.ms", 1)
    _require_range(config, "replica.lag.time.max.ms", 1)
    _require_range(config, "replica.fetch.max.bytes", 0)
    _require_range(config, "replica.fetch.response.max.bytes", 0)
    _require_range(config, "replica.fetch.wait.max.ms", 0)
    _require_range(config, "replica.fetch.min.bytes", 1)
    _require_range(config, "replica.fetch.backoff.ms", 0)
    _require_range(config, "replica.high.watermark.checkpoint.interval.ms", 1)
    if config["replica.socket.timeout.ms"] < config["replica.fetch.wait.max.ms"]:
        # As Kafka requires: a long-polling fetch must not time out its own socket.
        raise ConfigError("replica.socket.timeout.ms must be at least replica.fetch.wait.max.ms")
    _require_range(config, "zookeeper.session.timeout.ms", 1)
    _require_range(config, "controlled.shutdown.max.retries", 0)
    _require_range(config, "controlled.shutdown.retry.backoff.ms", 0)
    _require_range(config, "controller.socket.timeout.ms", 1)
    _require_range(config, "log.retention.check.interval.ms", 1)
    # Kafka accepts any value; outside these bounds the check never or always fires, or the
    # timer cannot be armed, so refuse them at start-up.
    _require_range(config, "leader.imbalance.per.broker.percentage", 0)
    if config["leader.imbalance.per.broker.percentage"] > 100:
        raise ConfigError("leader.imbalance.per.broker.percentage must be at most 100")
    _require_range(config, "leader.imbalance.check.interval.seconds", 1)
    for name in TIMESTAMP_BOUND_CONFIGS:
        _require_range(config, name, _topic_minimum(name))
    timestamp_types = _topic_allowed("log.message.timestamp.type")
    if config["log.message.timestamp.type"] not in timestamp_types:
        raise ConfigError(f"log.message.timestamp.type must be {' or '.join(timestamp_types)}")


def _validate_listener_protocols(config: KafkaConfig) -> None:
    known = {e.listener_name for e in config.listeners}
    unknown = sorted({e.listener_name for e in config.advertised_listeners} - known)
    if unknown:
        raise ConfigError(
            f"advertised.listeners names {', '.join(unknown)} that listeners does not define"
        )
    try:
        protocols = config.listener_security_protocol_map
    except ValueError as error:
        raise ConfigError(f"listener.security.protocol.map: {error}") from None
    for endpoint in config.listeners + config.advertised_listeners:
        protocol = protocols.get(endpoint.listener_name)
        if protocol is None:
            raise ConfigError(
                f"listener {endpoint.listener_name} has no entry in listener.security.protocol.map"
            )
        if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
            raise ConfigError(
                f"listener {endpoint.listener_name} uses {protocol}; supported: "
                + ", ".join(sorted(SUPPORTED_SECURITY_PROTOCOLS))
            )
    names = {e.listener_name for e in config.listeners}
    if config.inter_broker_listener_name not in names:
        raise ConfigError(
            f"inter.broker.listener.name {config.inter_broker_listener_name} is not a listener"
        )
    _validate_tls(config)
    _validate_sasl(config)


def _validate_tls(config: KafkaConfig) -> None:
    """Every SSL listener (and the inter-broker client side) can build its TLS context."""
    from broker.network import tls  # here: tls needs this module's types, not the reverse

    try:
        for endpoint in config.listeners:
            if config.security_protocol(endpoint.listener_name) in TLS_PROTOCOLS:
                tls.server_context(config, endpoint.listener_name)
        inter_broker = config.inter_broker_listener_name
        if config.security_protocol(inter_broker) in TLS_PROTOCOLS:
            tls.client_context(config, inter_broker)
    except tls.TlsConfigError as error:
        raise ConfigError(str(error)) from None


def _validate_sasl(config: KafkaConfig) -> None:
    """Every SASL listener names supported mechanisms, each with a JAAS config, and the
    inter-broker side has its mechanism and credentials."""
    from broker.security import sasl_config  # as in _validate_tls

    try:
        for endpoint in config.listeners:
            if config.security_protocol(endpoint.listener_name) in SASL_PROTOCOLS:
                sasl_config.listener_settings(config, endpoint.listener_name)
        sasl_config.inter_broker_client(config)
    except sasl_config.SaslConfigError as error:
        raise ConfigError(str(error)) from None


def _validate_metrics_listener(config: KafkaConfig) -> None:
    text = config["metrics.prometheus.listener"]
    if not text:
        return
    _, separator, port = str(text).rpartition(":")
    if not separator or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"metrics.prometheus.listener must be host:port, got {text!r}")


def _topic_minimum(name: str) -> int:
    """The minimum of the topic config whose default broker config `name` supplies."""
    check = _TOPIC_CONFIG_OF_BROKER_DEFAULT[name].check
    if not isinstance(check, AtLeast):
        raise TypeError(f"the topic config defaulting to {name} has no minimum")
    return check.minimum


def _topic_allowed(name: str) -> tuple[str, ...]:
    """The values allowed for the topic config whose default broker config `name` supplies."""
    check = _TOPIC_CONFIG_OF_BROKER_DEFAULT[name].check
    if not isinstance(check, OneOf):
        raise TypeError(f"the topic config defaulting to {name} allows any value")
    return check.allowed


def _require_range(config: KafkaConfig, name: str, minimum: int) -> None:
    if int(config[name]) < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {config[name]}")


def load_config(path: Path, overrides: list[str]) -> KafkaConfig:
    try:
        raw = read_properties(path.read_text())
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep:
            raise ConfigError(f"--override expects key=value, got {override!r}")
        raw[key.strip()] = value.strip()
    return build_config(raw)
