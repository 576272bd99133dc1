"""`make reference` dumps a class-data-sharing archive of Kafka's classes
(reference/kafka.classlist), and Kafka's tools and brokers, as our scripts run them, map it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from scripts._cluster import kafka_reference

REPO_ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = REPO_ROOT / "reference" / "lib" / "kafka.jsa"


def test_kafka_tools_start_from_the_archive(reference_lib: Path) -> None:
    assert ARCHIVE.exists(), f"`make reference` did not dump {ARCHIVE}"
    # -Xshare:on makes a JVM that cannot map its archive fail instead of going on without it.
    env = dict(os.environ, KAFKA_OPTS="-Xshare:on")
    result = subprocess.run(
        [str(REPO_ROOT / "scripts" / "kafka-jvm"), "kafka-topics", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("3.9."), result.stdout


def test_kafka_brokers_map_the_archive(reference_lib: Path, tmp_path: Path) -> None:
    command = kafka_reference.kafka_command("java", tmp_path, tmp_path / "server.properties")
    # A JVM option: before the main class, whose arguments follow it.
    assert (
        f"-XX:SharedArchiveFile={ARCHIVE}" in command[: command.index(kafka_reference.MAIN_CLASS)]
    )
