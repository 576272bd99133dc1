"""DescribeConfigs as a tool sees it, normalised per cluster, and the differences between two
clusters' answers.

Requests go over the wire (DescribeConfigs v4, as `kafka-configs --describe` sends it), so the
same request reaches both clusters, including for the resource name "" (the cluster-wide
broker default), which kafka-python refuses to name. Normalising replaces only what is
specific to one cluster: its directory (log.dirs) and its listener and ZooKeeper ports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.integration.conftest import ClusterHandle
from tests.integration.wire import WireClient

DESCRIBE_CONFIGS = 32
INCREMENTAL_ALTER_CONFIGS = 44
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
SET_OPERATION = 0
REQUEST_TIMEOUT_S = 60.0
# What each aspect of an entry is called in a difference.
ASPECTS = ("value", "source", "read_only", "sensitive", "synonyms", "type")


@dataclass(frozen=True)
class Entry:
    """One config of a DescribeConfigs answer. Synonyms are (name, value, source) triples."""

    value: str | None
    source: int
    read_only: bool
    sensitive: bool
    synonyms: tuple[tuple[str, str | None, int], ...]
    type: int

    def aspect(self, name: str) -> object:
        return getattr(self, name)


@dataclass(frozen=True)
class Answer:
    error_code: int
    entries: dict[str, Entry]


def describe(
    cluster: ClusterHandle,
    broker_id: int,
    resource_type: int,
    resource_name: str,
    include_synonyms: bool,
) -> Answer:
    """One resource's configs, asked of broker `broker_id` (a topic's configs depend on the
    broker answering: its dynamic and static settings supply the defaults)."""
    request = {
        "resources": [
            {
                "resource_type": resource_type,
                "resource_name": resource_name,
                "configuration_keys": None,
            }
        ],
        "include_synonyms": include_synonyms,
        "include_documentation": False,
    }
    address = f"127.0.0.1:{cluster.broker_port(broker_id)}"
    with WireClient.to(address, timeout_s=REQUEST_TIMEOUT_S) as client:
        response = client.request(DESCRIBE_CONFIGS, 4, request)
    (result,) = response.results
    entries = {
        config.name: Entry(
            value=_normalised(cluster, config.value),
            source=int(config.config_source),
            read_only=bool(config.read_only),
            sensitive=bool(config.is_sensitive),
            synonyms=tuple(
                (s.name, _normalised(cluster, s.value), int(s.source)) for s in config.synonyms
            ),
            type=int(config.config_type),
        )
        for config in result.configs
    }
    return Answer(int(result.error_code), entries)


def alter_broker_configs(
    cluster: ClusterHandle, broker_id: int, resource_name: str, configs: dict[str, str]
) -> None:
    """IncrementalAlterConfigs SET of broker configs (resource name "" for the cluster-wide
    default), sent to broker `broker_id`."""
    resource = {
        "resource_type": BROKER_RESOURCE,
        "resource_name": resource_name,
        "configs": [
            {"name": name, "config_operation": SET_OPERATION, "value": value}
            for name, value in configs.items()
        ],
    }
    address = f"127.0.0.1:{cluster.broker_port(broker_id)}"
    with WireClient.to(address, timeout_s=REQUEST_TIMEOUT_S) as client:
        response = client.request(
            INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}
        )
    errors = [(int(r.error_code), r.error_message) for r in response.responses]
    assert errors == [(0, None)], f"{cluster.dir}: {errors}"


def _normalised(cluster: ClusterHandle, value: str | None) -> str | None:
    if value is None:
        return None
    value = value.replace(str(cluster.dir), "<cluster dir>")
    ports = [cluster.broker_port(i) for i in cluster.broker_ids]
    ports += [cluster.zk_port_base + n for n in range(cluster.zookeeper_count)]
    for port in ports:
        value = value.replace(f":{port}", ":<port>")
    return value


@dataclass(frozen=True)
class Difference:
    """`aspect` is "only in kafka", "only in ours", "error code" or one of ASPECTS."""

    resource: str
    config: str
    aspect: str
    detail: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.resource}: {self.config} [{self.aspect}] {self.detail}"


def differences(resource: str, kafka: Answer, ours: Answer) -> list[Difference]:
    if kafka.error_code != ours.error_code:
        detail = f"kafka={kafka.error_code} ours={ours.error_code}"
        return [Difference(resource, "", "error code", detail)]
    found = []
    for name in sorted(kafka.entries.keys() | ours.entries.keys()):
        theirs, mine = kafka.entries.get(name), ours.entries.get(name)
        if mine is None:
            found.append(Difference(resource, name, "only in kafka", f"{theirs}"))
        elif theirs is None:
            found.append(Difference(resource, name, "only in ours", f"{mine}"))
        else:
            found.extend(
                Difference(
                    resource,
                    name,
                    aspect,
                    f"kafka={theirs.aspect(aspect)!r} ours={mine.aspect(aspect)!r}",
                )
                for aspect in ASPECTS
                if theirs.aspect(aspect) != mine.aspect(aspect)
            )
    return found
