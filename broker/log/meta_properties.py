"""`meta.properties` in each log dir: which broker and cluster the data belongs to.

A Java-properties file (version=0 in ZooKeeper mode). A broker must refuse to start on data
written under another broker.id or for another cluster, instead of silently mixing them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.log.checkpoints import fsync_directory

META_PROPERTIES = "meta.properties"


class MetaPropertiesError(Exception):
    """meta.properties is unreadable or disagrees with this broker's identity."""


class InconsistentBrokerIdError(MetaPropertiesError):
    pass


class InconsistentClusterIdError(MetaPropertiesError):
    pass


@dataclass(frozen=True, slots=True)
class MetaProperties:
    broker_id: int
    cluster_id: str | None
    version: int = 0


def _parse_properties(text: str) -> dict[str, str]:
    properties: dict[str, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = line.partition("=")
        properties[key.strip()] = value.strip()
    return properties


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    """None when the file does not exist (a fresh log dir)."""
    path = log_dir / META_PROPERTIES
    try:
        properties = _parse_properties(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    try:
        return MetaProperties(
            broker_id=int(properties["broker.id"]),
            cluster_id=properties.get("cluster.id") or None,
            version=int(properties.get("version", "0")),
        )
    except (KeyError, ValueError) as error:
        raise MetaPropertiesError(f"{path} is malformed: {error}") from error


def write_meta_properties(log_dir: Path, meta: MetaProperties) -> None:
    lines = ["#", f"#{time.strftime('%a %b %d %H:%M:%S %Z %Y')}"]
    if meta.cluster_id is not None:
        lines.append(f"cluster.id={meta.cluster_id}")
    lines += [f"version={meta.version}", f"broker.id={meta.broker_id}"]
    path = log_dir / META_PROPERTIES
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    fsync_directory(log_dir)


def check_meta_properties(meta: MetaProperties, broker_id: int, cluster_id: str | None) -> None:
    """Raise if stored identity differs from this broker's."""
    if meta.broker_id != broker_id:
        raise InconsistentBrokerIdError(
            f"this broker is configured with broker.id {broker_id}, but its log dirs hold data "
            f"of broker.id {meta.broker_id}; configure the matching id, or empty log.dirs to "
            "start a new broker"
        )
    if cluster_id is not None and meta.cluster_id is not None and meta.cluster_id != cluster_id:
        raise InconsistentClusterIdError(
            f"the log dirs belong to cluster {meta.cluster_id}, but ZooKeeper says this is "
            f"cluster {cluster_id}; is zookeeper.connect pointing at the wrong ensemble?"
        )


def ensure_meta_properties(log_dirs: Sequence[Path], broker_id: int, cluster_id: str) -> None:
    """Check every log dir's meta.properties, then write it where missing (Kafka's start-up)."""
    missing: list[Path] = []
    for log_dir in log_dirs:
        meta = read_meta_properties(log_dir)
        if meta is None:
            missing.append(log_dir)
        else:
            check_meta_properties(meta, broker_id, cluster_id)
    for log_dir in missing:
        log_dir.mkdir(parents=True, exist_ok=True)
        write_meta_properties(log_dir, MetaProperties(broker_id, cluster_id))
