"""Topics, and a cluster of the example's own when the user did not name one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "cluster"
# Away from `make up`'s defaults (9092, 2181), so both can run side by side.
PORT_BASE = 19092
ZK_PORT_BASE = 12181
CLUSTER_COMMAND_TIMEOUT_S = 120.0
TOPIC_TIMEOUT_S = 30.0
REPLICATION_FACTOR = 3


def _cluster(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLUSTER_SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=CLUSTER_COMMAND_TIMEOUT_S,
        check=False,
    )


def start_cluster(
    directory: Path, port_base: int = PORT_BASE, zk_port_base: int = ZK_PORT_BASE
) -> str:
    """`scripts/cluster up` in `directory`; returns bootstrap.servers."""
    result = _cluster(
        "up",
        "--dir",
        str(directory),
        "--port-base",
        str(port_base),
        "--zk-port-base",
        str(zk_port_base),
    )
    if result.returncode != 0:
        raise RuntimeError(f"scripts/cluster up failed: {result.stderr.strip()}")
    for line in result.stdout.splitlines():
        if line.startswith("bootstrap.servers="):
            return line.split("=", 1)[1]
    raise RuntimeError(f"scripts/cluster up printed no bootstrap.servers: {result.stdout}")


def stop_cluster(directory: Path) -> None:
    _cluster("down", "--dir", str(directory), "--wipe")


def ensure_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=TOPIC_TIMEOUT_S).topics
    wanted = [
        NewTopic(name, count, min(REPLICATION_FACTOR, len(admin.list_topics().brokers)))
        for name, count in partitions.items()
        if name not in existing
    ]
    if not wanted:
        return
    for future in admin.create_topics(wanted, operation_timeout=TOPIC_TIMEOUT_S).values():
        try:
            future.result()
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
