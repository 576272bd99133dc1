"""One class per znode: path, encode and decode side by side, in Kafka's exact JSON.

Compact JSON (no spaces), keys in the order Kafka's JVM maps iterate (see json_order.py), and
decoders that accept every version Kafka 0.10-3.x writes (missing optional keys tolerated).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zk.json_order import java_properties_order, scala_mutable_hash_map_order


class ZnodeDecodeError(ValueError):
    """The znode content is not what Kafka writes there."""


def dump_json(value: Any) -> bytes:
    # Jackson writes UTF-8 without escaping non-ASCII characters.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def load_json_object(data: bytes | None, what: str) -> dict[str, Any]:
    if not data:
        raise ZnodeDecodeError(f"{what}: empty znode")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZnodeDecodeError(f"{what}: not JSON: {data!r}") from exc
    if not isinstance(value, dict):
        raise ZnodeDecodeError(f"{what}: not a JSON object: {data!r}")
    return value


def _ordered(values: Mapping[str, Any], order: Iterable[str]) -> dict[str, Any]:
    return {key: values[key] for key in order}


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ZnodeDecodeError(f"{what}: missing or bad {key!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise ZnodeDecodeError(f"{what}: bad {key!r}: {value!r}") from exc


def _optional_int(obj: Mapping[str, Any], key: str, default: int, what: str) -> int:
    """Like `_int`, but a missing or null key means `default`."""
    return default if obj.get(key) is None else _int(obj, key, what)


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(item, int) and not isinstance(item, bool) for item in value
    ):
        raise ZnodeDecodeError(f"{what}: expected a list of integers, got {value!r}")
    return list(value)


# --------------------------------------------------------------------------- ids


def uuid_to_kafka_string(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding (22 chars)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def kafka_string_to_uuid(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"not a Kafka Uuid string: {text!r}")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def new_kafka_uuid() -> str:
    """A random id as Kafka makes them: never the reserved zero / metadata ids, and never one
    starting with '-' (Kafka avoids those because command-line tools would read them as flags)."""
    while True:
        candidate = uuid.uuid4()
        text = uuid_to_kafka_string(candidate)
        if not text.startswith("-") and candidate.int > 1:
            return text


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    host: str | None  # host of the first PLAINTEXT endpoint (None when there is none)
    port: int  # its port, -1 when there is none
    endpoints: list[str]  # "LISTENER://host:port" in listener order
    listener_security_protocol_map: dict[str, str]
    rack: str | None
    timestamp_ms: int
    jmx_port: int = -1
    features: dict[str, dict[str, int]] = field(default_factory=dict)
    version: int = 5

    @classmethod
    def create(
        cls,
        broker_id: int,
        endpoints: Sequence[str],
        listener_security_protocol_map: Mapping[str, str],
        timestamp_ms: int,
        rack: str | None = None,
        jmx_port: int = -1,
    ) -> BrokerRegistration:
        """Derive the legacy top-level host/port like Kafka: from the first PLAINTEXT endpoint."""
        host: str | None = None
        port = -1
        for endpoint in endpoints:
            listener, endpoint_host, endpoint_port = parse_endpoint(endpoint)
            if listener_security_protocol_map.get(listener, listener) == "PLAINTEXT":
                host, port = endpoint_host, endpoint_port
                break
        return cls(
            broker_id=broker_id,
            host=host,
            port=port,
            endpoints=list(endpoints),
            listener_security_protocol_map=dict(listener_security_protocol_map),
            rack=rack,
            timestamp_ms=timestamp_ms,
            jmx_port=jmx_port,
        )

    def endpoint_for(self, listener: str) -> tuple[str, int] | None:
        for endpoint in self.endpoints:
            name, host, port = parse_endpoint(endpoint)
            if name == listener:
                return host, port
        return None


def parse_endpoint(endpoint: str) -> tuple[str, str, int]:
    """'PLAINTEXT://host:9092' -> ('PLAINTEXT', 'host', 9092); IPv6 hosts may be bracketed."""
    listener, separator, address = endpoint.partition("://")
    host, colon, port_text = address.rpartition(":")
    if not separator or not colon:
        raise ZnodeDecodeError(f"bad endpoint {endpoint!r}")
    try:
        port = int(port_text)
    except ValueError as exc:
        raise ZnodeDecodeError(f"bad endpoint port in {endpoint!r}") from exc
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return listener, host, port


@dataclass(frozen=True)
class TopicAssignment:
    topic_id: str | None  # None for topics created before Kafka 2.8 (znode versions 1-2)
    partitions: dict[int, list[int]]  # partition -> replicas, first = preferred leader
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionState:
    leader: int  # -1 = no leader
    leader_epoch: int
    isr: list[int]
    controller_epoch: int


# --------------------------------------------------------------------------- znodes


class ClusterIdZNode:
    @staticmethod
    def path() -> str:
        return "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return dump_json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes) -> str:
        obj = load_json_object(data, "/cluster/id")
        cluster_id = obj.get("id")
        if not isinstance(cluster_id, str):
            raise ZnodeDecodeError(f"/cluster/id: no id in {data!r}")
        return cluster_id


NO_KRAFT_CONTROLLER_EPOCH = -1


class ControllerZNode:
    @staticmethod
    def path() -> str:
        return "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int) -> bytes:
        # Version 2 (Kafka 3.4+, KIP-866) adds the KRaft controller epoch; a ZooKeeper-mode
        # controller writes -1. Older readers only look at "brokerid".
        return dump_json(
            {
                "version": 2,
                "brokerid": broker_id,
                "timestamp": str(timestamp_ms),
                "kraftControllerEpoch": NO_KRAFT_CONTROLLER_EPOCH,
            }
        )

    @staticmethod
    def decode(data: bytes) -> int:
        # Kafka 0.8 wrote the bare broker id; accept that too.
        text = data.decode("utf-8", "replace").strip() if data else ""
        if text.lstrip("-").isdigit():
            return int(text)
        return _int(load_json_object(data, "/controller"), "brokerid", "/controller")


class ControllerEpochZNode:
    @staticmethod
    def path() -> str:
        return "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("ascii")

    @staticmethod
    def decode(data: bytes) -> int:
        try:
            return int(data.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError) as exc:
            raise ZnodeDecodeError(f"/controller_epoch: not an integer: {data!r}") from exc


class BrokerIdsZNode:
    @staticmethod
    def path() -> str:
        return "/brokers/ids"


class BrokerSequenceIdZNode:
    @staticmethod
    def path() -> str:
        return "/brokers/seqid"


class BrokerIdZNode:
    _BASE_KEYS = ("version", "host", "port", "endpoints", "jmx_port", "timestamp")

    @staticmethod
    def path(broker_id: int) -> str:
        return f"/brokers/ids/{broker_id}"

    @classmethod
    def encode(cls, registration: BrokerRegistration) -> bytes:
        values: dict[str, Any] = {
            "version": registration.version,
            "host": registration.host,
            "port": registration.port,
            "endpoints": list(registration.endpoints),
            "jmx_port": registration.jmx_port,
            "timestamp": str(registration.timestamp_ms),
        }
        if registration.rack is not None and registration.version >= 3:
            values["rack"] = registration.rack
        if registration.version >= 4:
            values["listener_security_protocol_map"] = dict(
                registration.listener_security_protocol_map
            )
        if registration.version >= 5:
            values["features"] = {
                name: dict(versions) for name, versions in registration.features.items()
            }
        order = scala_mutable_hash_map_order(values, initial_entries=len(cls._BASE_KEYS))
        return dump_json(_ordered(values, order))

    @staticmethod
    def decode(broker_id: int, data: bytes) -> BrokerRegistration:
        what = f"/brokers/ids/{broker_id}"
        obj = load_json_object(data, what)
        version = _int(obj, "version", what)
        host = obj.get("host")
        port = _optional_int(obj, "port", -1, what)
        if version < 1:
            raise ZnodeDecodeError(f"{what}: unsupported registration version {version}")
        if version == 1:
            if not isinstance(host, str):
                raise ZnodeDecodeError(f"{what}: version 1 without host")
            endpoints = [f"PLAINTEXT://{host}:{port}"]
        else:
            raw_endpoints = obj.get("endpoints")
            if not isinstance(raw_endpoints, list) or not all(
                isinstance(item, str) for item in raw_endpoints
            ):
                raise ZnodeDecodeError(f"{what}: bad endpoints")
            endpoints = list(raw_endpoints)
        raw_map = obj.get("listener_security_protocol_map")
        if isinstance(raw_map, dict):
            protocol_map = {str(key): str(value) for key, value in raw_map.items()}
        else:
            # Before version 4 the listener name was the security protocol name.
            protocol_map = {parse_endpoint(item)[0]: parse_endpoint(item)[0] for item in endpoints}
        rack = obj.get("rack")
        return BrokerRegistration(
            broker_id=broker_id,
            host=host if isinstance(host, str) else None,
            port=port,
            endpoints=endpoints,
            listener_security_protocol_map=protocol_map,
            rack=rack if isinstance(rack, str) else None,
            timestamp_ms=_optional_int(obj, "timestamp", -1, what),
            jmx_port=_optional_int(obj, "jmx_port", -1, what),
            features=BrokerIdZNode._decode_features(obj.get("features"), what),
            version=version,
        )

    @staticmethod
    def _decode_features(raw: Any, what: str) -> dict[str, dict[str, int]]:
        """{"feature": {"min_version": 1, "max_version": 7}}; absent before version 5."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise ZnodeDecodeError(f"{what}: features is not an object: {raw!r}")
        features: dict[str, dict[str, int]] = {}
        for name, versions in raw.items():
            if not isinstance(versions, dict):
                raise ZnodeDecodeError(f"{what}: bad version range of feature {name!r}")
            features[str(name)] = {
                str(key): _int(versions, key, f"{what} feature {name!r}") for key in versions
            }
        return features


class TopicsZNode:
    @staticmethod
    def path() -> str:
        return "/brokers/topics"


class TopicZNode:
    _BASE_KEYS = ("version", "partitions", "adding_replicas", "removing_replicas")

    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{topic}"

    @staticmethod
    def _replica_map(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
        # Kafka fills an empty Scala mutable.HashMap partition by partition.
        values = {str(partition): list(replicas) for partition, replicas in assignment.items()}
        return _ordered(values, scala_mutable_hash_map_order(values))

    @classmethod
    def encode(cls, assignment: TopicAssignment) -> bytes:
        values: dict[str, Any] = {
            "version": 3,
            "partitions": cls._replica_map(assignment.partitions),
            "adding_replicas": cls._replica_map(
                {p: r for p, r in assignment.adding_replicas.items() if r}
            ),
            "removing_replicas": cls._replica_map(
                {p: r for p, r in assignment.removing_replicas.items() if r}
            ),
        }
        if assignment.topic_id is not None:
            values["topic_id"] = assignment.topic_id
        order = scala_mutable_hash_map_order(values, initial_entries=len(cls._BASE_KEYS))
        return dump_json(_ordered(values, order))

    @staticmethod
    def _decode_replica_map(value: Any, what: str) -> dict[int, list[int]]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ZnodeDecodeError(f"{what}: expected an object, got {value!r}")
        try:
            return {int(key): _int_list(replicas, what) for key, replicas in value.items()}
        except ValueError as exc:
            raise ZnodeDecodeError(f"{what}: bad partition number in {value!r}") from exc

    @classmethod
    def decode(cls, topic: str, data: bytes) -> TopicAssignment:
        what = cls.path(topic)
        obj = load_json_object(data, what)
        topic_id = obj.get("topic_id")
        return TopicAssignment(
            topic_id=topic_id if isinstance(topic_id, str) else None,
            partitions=cls._decode_replica_map(obj.get("partitions"), what),
            adding_replicas=cls._decode_replica_map(obj.get("adding_replicas"), what),
            removing_replicas=cls._decode_replica_map(obj.get("removing_replicas"), what),
        )


class TopicPartitionsZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{topic}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"/brokers/topics/{topic}/partitions/{partition}"


class TopicPartitionStateZNode:
    # Kafka builds this from an immutable 5-entry Scala map; its iteration order, as seen in
    # every Kafka-written state znode, is this one.
    _ORDER = ("controller_epoch", "leader", "version", "leader_epoch", "isr")

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"/brokers/topics/{topic}/partitions/{partition}/state"

    @classmethod
    def encode(cls, state: PartitionState) -> bytes:
        values: dict[str, Any] = {
            "version": 1,
            "leader": state.leader,
            "leader_epoch": state.leader_epoch,
            "controller_epoch": state.controller_epoch,
            "isr": list(state.isr),
        }
        return dump_json(_ordered(values, cls._ORDER))

    @staticmethod
    def decode(data: bytes, what: str = "partition state") -> PartitionState:
        obj = load_json_object(data, what)
        return PartitionState(
            leader=_int(obj, "leader", what),
            leader_epoch=_int(obj, "leader_epoch", what),
            isr=_int_list(obj.get("isr"), what),
            controller_epoch=_int(obj, "controller_epoch", what),
        )


class ConfigEntityZNode:
    """/config/<entity_type>/<name>: topics, brokers, users, clients, ips."""

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"/config/{entity_type}/{entity_name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        values = {str(key): str(value) for key, value in config.items()}
        ordered = _ordered(values, java_properties_order(values))
        return dump_json({"version": 1, "config": ordered})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        # Kafka treats a missing or empty config znode as "no overrides".
        if not data:
            return {}
        obj = load_json_object(data, "config")
        config = obj.get("config")
        if not isinstance(config, dict):
            return {}
        return {str(key): str(value) for key, value in config.items()}


class ConfigEntityChangeNotificationZNode:
    @staticmethod
    def path() -> str:
        return "/config/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    SEQUENCE_PREFIX = "config_change_"

    @classmethod
    def create_path(cls) -> str:
        return f"/config/changes/{cls.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(entity_path: str) -> bytes:
        return dump_json({"version": 2, "entity_path": entity_path})

    @staticmethod
    def decode(data: bytes) -> str:
        obj = load_json_object(data, "config change")
        entity_path = obj.get("entity_path")
        if isinstance(entity_path, str):
            return entity_path
        # Version 1 notifications carried entity_type + entity_name.
        entity_type, entity_name = obj.get("entity_type"), obj.get("entity_name")
        if isinstance(entity_type, str) and isinstance(entity_name, str):
            return f"{entity_type}/{entity_name}"
        raise ZnodeDecodeError(f"config change: no entity in {data!r}")


class DeleteTopicsZNode:
    @staticmethod
    def path() -> str:
        return "/admin/delete_topics"


class DeleteTopicsTopicZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"/admin/delete_topics/{topic}"


def _encode_partition_list(partitions: Iterable[tuple[str, int]]) -> bytes:
    return dump_json(
        {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": partition} for topic, partition in partitions
            ],
        }
    )


def _decode_partition_list(data: bytes, what: str) -> list[tuple[str, int]]:
    obj = load_json_object(data, what)
    items = obj.get("partitions")
    if not isinstance(items, list):
        raise ZnodeDecodeError(f"{what}: no partitions list")
    result: list[tuple[str, int]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise ZnodeDecodeError(f"{what}: bad entry {item!r}")
        result.append((item["topic"], _int(item, "partition", what)))
    return result


class IsrChangeNotificationZNode:
    @staticmethod
    def path() -> str:
        return "/isr_change_notification"


class IsrChangeNotificationSequenceZNode:
    SEQUENCE_PREFIX = "isr_change_"

    @classmethod
    def create_path(cls) -> str:
        return f"/isr_change_notification/{cls.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _encode_partition_list(partitions)

    @staticmethod
    def decode(data: bytes) -> list[tuple[str, int]]:
        return _decode_partition_list(data, "isr change notification")


class PreferredReplicaElectionZNode:
    @staticmethod
    def path() -> str:
        return "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _encode_partition_list(partitions)

    @staticmethod
    def decode(data: bytes) -> list[tuple[str, int]]:
        return _decode_partition_list(data, "preferred replica election")


class ReassignPartitionsZNode:
    @staticmethod
    def path() -> str:
        return "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignment: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
        return dump_json(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": partition, "replicas": list(replicas)}
                    for (topic, partition), replicas in reassignment.items()
                ],
            }
        )

    @staticmethod
    def decode(data: bytes) -> dict[tuple[str, int], list[int]]:
        what = "/admin/reassign_partitions"
        obj = load_json_object(data, what)
        items = obj.get("partitions")
        if not isinstance(items, list):
            raise ZnodeDecodeError(f"{what}: no partitions list")
        result: dict[tuple[str, int], list[int]] = {}
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
                raise ZnodeDecodeError(f"{what}: bad entry {item!r}")
            key = (item["topic"], _int(item, "partition", what))
            result[key] = _int_list(item.get("replicas"), what)
        return result


class ProducerIdBlockZNode:
    @staticmethod
    def path() -> str:
        return "/latest_producer_id_block"

    @staticmethod
    def encode(broker_id: int, block_start: int, block_end: int) -> bytes:
        return dump_json(
            {
                "version": 1,
                "broker": broker_id,
                "block_start": str(block_start),
                "block_end": str(block_end),
            }
        )

    @staticmethod
    def decode(data: bytes) -> tuple[int, int, int]:
        """(broker_id, block_start, block_end)"""
        what = "/latest_producer_id_block"
        obj = load_json_object(data, what)
        return (
            _int(obj, "broker", what),
            _int(obj, "block_start", what),
            _int(obj, "block_end", what),
        )


class FeatureZNode:
    """/feature: the cluster's finalized features (KIP-584). A ZooKeeper-mode controller of
    Kafka 2.7+ creates it at failover with status enabled; Kafka 3.3+ writes version 2 (no
    min_version_level). We finalize no features, so "features" stays empty."""

    VERSION = 2
    STATUS_DISABLED = 0
    STATUS_ENABLED = 1
    # Kafka builds it from a 3-entry Scala mutable.Map; this is that map's iteration order.
    _ORDER = ("features", "version", "status")

    @staticmethod
    def path() -> str:
        return "/feature"

    @classmethod
    def encode(cls, status: int, features: Mapping[str, int]) -> bytes:
        values: dict[str, Any] = {
            "version": cls.VERSION,
            "status": status,
            "features": {name: {"max_version_level": level} for name, level in features.items()},
        }
        return dump_json(_ordered(values, cls._ORDER))

    @staticmethod
    def decode(data: bytes) -> tuple[int, int, dict[str, int]]:
        """(version, status, {feature: max version level}); version 1 also carried a min."""
        what = "/feature"
        obj = load_json_object(data, what)
        raw_features = obj.get("features") or {}
        if not isinstance(raw_features, dict):
            raise ZnodeDecodeError(f"{what}: features is not an object: {data!r}")
        features = {}
        for name, levels in raw_features.items():
            if not isinstance(levels, dict):
                raise ZnodeDecodeError(f"{what}: bad levels of feature {name!r}")
            features[str(name)] = _int(levels, "max_version_level", what)
        return _int(obj, "version", what), _int(obj, "status", what), features


class LogDirEventNotificationZNode:
    @staticmethod
    def path() -> str:
        return "/log_dir_event_notification"


class LogDirEventNotificationSequenceZNode:
    """A broker's notice that one of its log dirs failed (Kafka's
    LogDirEventNotificationSequenceZNode): `{"version":1,"broker":1,"event":1}`."""

    SEQUENCE_PREFIX = "log_dir_event_"
    LOG_DIR_FAILURE_EVENT = 1

    @classmethod
    def create_path(cls) -> str:
        return f"/log_dir_event_notification/{cls.SEQUENCE_PREFIX}"

    @classmethod
    def encode(cls, broker_id: int) -> bytes:
        return dump_json({"version": 1, "broker": broker_id, "event": cls.LOG_DIR_FAILURE_EVENT})

    @staticmethod
    def decode(data: bytes) -> int:
        """The broker the notice is about."""
        return _int(load_json_object(data, "log dir event notification"), "broker", "log dir event")


class OfflineReplicasZNode:
    """Ours (Kafka's controller learns this from LeaderAndIsr responses, which our brokers do
    not take): the replicas a broker holds in failed log dirs, ephemeral, written before the
    broker's log dir event notification and before it registers on a new session.
    `{"version":1,"partitions":[{"topic":"t","partition":0}]}`."""

    @staticmethod
    def parent_path() -> str:
        return "/brokers/offline_replicas"

    @classmethod
    def path(cls, broker_id: int) -> str:
        return f"{cls.parent_path()}/{broker_id}"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _encode_partition_list(partitions)

    @staticmethod
    def decode(data: bytes) -> list[tuple[str, int]]:
        return _decode_partition_list(data, "offline replicas")


class ConsumerPathZNode:
    @staticmethod
    def path() -> str:
        return "/consumers"


CONFIG_ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips")

# What Kafka creates at start-up (KafkaZkClient's persistent paths).
PERSISTENT_PATHS: tuple[str, ...] = (
    ConsumerPathZNode.path(),
    BrokerIdsZNode.path(),
    TopicsZNode.path(),
    ConfigEntityChangeNotificationZNode.path(),
    DeleteTopicsZNode.path(),
    BrokerSequenceIdZNode.path(),
    IsrChangeNotificationZNode.path(),
    ProducerIdBlockZNode.path(),
    LogDirEventNotificationZNode.path(),
    *(f"/config/{entity_type}" for entity_type in CONFIG_ENTITY_TYPES),
)
