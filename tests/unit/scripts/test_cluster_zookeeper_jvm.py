"""How scripts/cluster runs ZooKeeper's JVM: the jars it needs of pyspark's, and
SERVER_JVMFLAGS as zkServer.sh reads it; the reference brokers' KAFKA_JVM_PERFORMANCE_OPTS."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts._cluster import kafka_reference, zookeeper


def _touch_jars(directory: Path, patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        name = pattern.replace("[0-9]*", "3.9.5").replace("*", "1.0")
        (directory / name).touch()


def test_pyspark_classpath_names_only_the_jars_zookeeper_needs(tmp_path: Path) -> None:
    _touch_jars(tmp_path, zookeeper.PYSPARK_ZOOKEEPER_JARS)
    (tmp_path / "spark-core_2.13-4.0.0.jar").touch()
    entries = zookeeper._pyspark_classpath(tmp_path).split(":")
    assert len(entries) == len(zookeeper.PYSPARK_ZOOKEEPER_JARS)
    assert str(tmp_path / "zookeeper-3.9.5.jar") in entries
    assert not any("spark-core" in entry for entry in entries)


def test_pyspark_classpath_falls_back_to_the_whole_directory(tmp_path: Path) -> None:
    _touch_jars(tmp_path, zookeeper.PYSPARK_ZOOKEEPER_JARS[:-1])
    assert zookeeper._pyspark_classpath(tmp_path) == f"{tmp_path}/*"


def test_zookeeper_adds_server_jvmflags_as_zkserver_sh_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SERVER_JVMFLAGS", raising=False)
    defaults = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    assert zookeeper.server_jvm_options() == defaults
    # Appended, so that a flag given there wins over a default (HotSpot takes the last one).
    monkeypatch.setenv("SERVER_JVMFLAGS", "-XX:TieredStopAtLevel=4 -Dx=a")
    assert zookeeper.server_jvm_options() == [*defaults, "-XX:TieredStopAtLevel=4", "-Dx=a"]


def test_reference_brokers_take_kafka_jvm_performance_opts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAFKA_JVM_PERFORMANCE_OPTS", raising=False)
    assert "-XX:+UseG1GC" in kafka_reference.jvm_performance_options()
    monkeypatch.setenv("KAFKA_JVM_PERFORMANCE_OPTS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
    expected = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    assert kafka_reference.jvm_performance_options() == expected


def test_reference_brokers_map_the_class_archive_only_when_it_exists(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(kafka_reference, "REFERENCE_LIB", tmp_path)
    assert kafka_reference.class_sharing_options() == []
    (tmp_path / "kafka.jsa").touch()
    assert kafka_reference.class_sharing_options() == [
        f"-XX:SharedArchiveFile={tmp_path / 'kafka.jsa'}"
    ]
