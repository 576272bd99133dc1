"""The Java AdminClient probe (tests/integration/jvm/AdminProbe.java) for the differential test
in test_jvm_tools.py: compiling it, running it against one cluster and normalising its output.

The probe prints one JSON line per Admin call, `{"call": NAME, "result": ...}` or
`{"call": NAME, "error": EXCEPTION_CLASS}`, with everything sorted that a Java hash map would
otherwise order. Besides jvm_tools.common (broker addresses, the cluster directory), the
normaliser hides only values that legitimately differ between two healthy clusters, each after
checking the rule it obeys:

- topic ids and the cluster id are random: each must be a 22-character base64 UUID, and each
  distinct topic id becomes `<topic id N>` in order of appearance, so that a describe by id
  that returned another topic's id would still show;
- the controller is whichever broker created /controller first: it must be one of the nodes;
- a group's coordinator leads the group's __consumer_offsets partition, which Kafka places
  from a random broker: it must equal that leader, as the probe also printed it;
- a consumer's member id is its client id, a dash and a random UUID;
- a log dir's total and usable bytes are the disk's: usable must not exceed total.

One documented deviation is taken out: the topic configs Kafka added after 3.0, which our
brokers do not have (DEVIATIONS.md, "Configuration"; tests/reference/test_describe_configs.py
compares the full lists). They are dropped from a topic's configs only while Kafka shows them
at their default, so that a probe which set one would still show the difference.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.jvm_tools import FAST_START_JVM_OPTS, ClusterView, common

SOURCE = Path(__file__).resolve().parent / "jvm" / "AdminProbe.java"
MAIN_CLASS = "AdminProbe"
COMPILE_TIMEOUT_S = 120.0
# The probe bounds each of its own waits at 30 s; its slowest path is a few of them.
RUN_TIMEOUT_S = 150.0
# Kafka 3.9's config/tools-log4j.properties: client warnings to stderr, stdout left to the probe.
LOG4J_PROPERTIES = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""

# DEVIATIONS.md, "Configuration": topic configs added after Kafka 3.0 (tiered storage, KIP-405;
# compression levels, KIP-390), which our brokers neither accept nor describe.
TOPIC_CONFIGS_AFTER_3_0 = frozenset(
    {
        "remote.storage.enable", "local.retention.ms", "local.retention.bytes",
        "remote.log.copy.disable", "remote.log.delete.on.disable", "compression.gzip.level",
        "compression.lz4.level", "compression.zstd.level",
    }
)  # fmt: skip
_KAFKA_UUID = re.compile(r"^[A-Za-z0-9_-]{22}$")
_JAVA_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class ProbeError(Exception):
    pass


def java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / name if java_home else None
    found = str(candidate) if candidate and candidate.exists() else shutil.which(name)
    if found is None:
        raise ProbeError(f"{name} is not on PATH (a JDK 17+ is needed); or set JAVA_HOME")
    return found


def compile_probe(reference_lib: Path, out_dir: Path, *also: Path) -> Path:
    """`javac` the probe, and the sources `also` (one javac start for all), into out_dir
    (with the probe's log4j config); returns out_dir."""
    result = subprocess.run(
        [
            java_tool("javac"),
            # javac is a JVM too: the start-up flags halve its CPU time on a busy machine.
            *(f"-J{option}" for option in FAST_START_JVM_OPTS.split()),
            *("-d", str(out_dir), "-cp", f"{reference_lib}/*", str(SOURCE)),
            *map(str, also),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMPILE_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise ProbeError(f"javac failed:\n{result.stdout}\n{result.stderr}")
    (out_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
    return out_dir


@dataclass(frozen=True)
class ProbeRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_probe(classes: Path, reference_lib: Path, bootstrap: str) -> ProbeRun:
    command = [
        java_tool("java"),
        *FAST_START_JVM_OPTS.split(),
        f"-Dlog4j.configuration=file:{classes / 'log4j.properties'}",
        "-cp",
        f"{classes}:{reference_lib}/*",
        MAIN_CLASS,
        bootstrap,
    ]
    started = time.monotonic()
    try:
        result = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        return ProbeRun(
            -9,
            _text(expired.stdout),
            _text(expired.stderr) + f"\n(killed after {RUN_TIMEOUT_S:.0f} s)",
            time.monotonic() - started,
        )
    return ProbeRun(result.returncode, result.stdout, result.stderr, time.monotonic() - started)


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


def normalised(run: ProbeRun, view: ClusterView) -> list[dict[str, Any]]:
    """The probe's lines, parsed, with the rewrites of the module docstring. A line that is
    not JSON is kept as a string, so that it shows in the comparison."""
    lines: list[dict[str, Any]] = []
    for text in common(run.stdout, view).splitlines():
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = {"not json": text}
        lines.append(parsed if isinstance(parsed, dict) else {"not an object": parsed})
    topic_ids: dict[str, str] = {}
    node_ids: set[object] = set()
    for line in lines:
        result = line.get("result")
        if not isinstance(result, dict):
            continue
        call = line.get("call")
        if call == "describeCluster":
            node_ids = {node.get("id") for node in result.get("nodes", [])}
            _cluster(result, node_ids)
        elif call == "createTopics" or str(call).startswith("describeTopics"):
            for topic in result.values():
                for key in ("topicId", "requestedId"):
                    if isinstance(topic, dict) and key in topic:
                        topic[key] = _topic_id(topic[key], topic_ids)
                if isinstance(topic, dict) and isinstance(topic.get("config"), dict):
                    _without_later_configs(topic["config"])
        elif call == "describeConfigs":
            _without_later_configs(result)
        elif str(call).startswith("describeConsumerGroups"):
            _group(result, node_ids)
        elif call == "describeLogDirs":
            for log_dirs in result.values():
                for log_dir in log_dirs.values():
                    _disk_bytes(log_dir)
    return lines


def _cluster(result: dict[str, Any], node_ids: set[object]) -> None:
    if result.get("controller") in node_ids:
        result["controller"] = "<one of the nodes>"
    if _KAFKA_UUID.match(str(result.get("clusterId"))):
        result["clusterId"] = "<22-character id>"


def _topic_id(value: object, seen: dict[str, str]) -> object:
    if not isinstance(value, str) or not _KAFKA_UUID.match(value):
        return value
    return seen.setdefault(value, f"<topic id {len(seen) + 1}>")


def _without_later_configs(configs: dict[str, Any]) -> None:
    for name in TOPIC_CONFIGS_AFTER_3_0:
        entry = configs.get(name)
        if isinstance(entry, dict) and entry.get("source") == "DEFAULT_CONFIG":
            del configs[name]


def _group(result: dict[str, Any], node_ids: set[object]) -> None:
    coordinator = result.get("coordinator")
    if coordinator in node_ids and coordinator == result.get("offsetsPartitionLeader"):
        hidden = "<leader of the group's __consumer_offsets partition>"
        result["coordinator"] = result["offsetsPartitionLeader"] = hidden
    for member in result.get("members", []):
        prefix = f"{member.get('clientId')}-"
        member_id = str(member.get("consumerId"))
        if member_id.startswith(prefix) and _JAVA_UUID.match(member_id[len(prefix) :]):
            member["consumerId"] = "<client id>-<uuid>"


def _disk_bytes(log_dir: dict[str, Any]) -> None:
    total, usable = log_dir.get("totalBytes"), log_dir.get("usableBytes")
    if isinstance(total, int) and isinstance(usable, int) and 0 <= usable <= total:
        log_dir["totalBytes"] = log_dir["usableBytes"] = "<the disk's>"
