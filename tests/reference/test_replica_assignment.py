"""Differential: our replica placement (controller/assignment.py) gives exactly the assignment
Kafka 3.9's AdminUtils.assignReplicasToBrokers gives (tests/reference/jvm/ReplicaAssignment.java,
run on `make reference`'s jars), rack-unaware and rack-aware, for every start index (Kafka's
random draw made fixed), with and without a start partition id (CreatePartitions), and the same
refusals (Kafka's exception class, our error code)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from controller.assignment import assign_replicas_to_brokers
from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REPLICATION_FACTOR,
    UNKNOWN_SERVER_ERROR,
    ApiError,
)

PROBE = Path(__file__).parent / "jvm" / "ReplicaAssignment.java"
PROBE_TIMEOUT_S = 120

Racks = dict[int, str | None]
# (brokers and racks, partitions, replication factor, start partition id)
LAYOUTS: list[tuple[Racks, int, int, int]] = [
    ({1: None, 2: None, 3: None, 4: None, 5: None}, 10, 3, -1),
    ({1: "rack-0", 2: "rack-1", 3: "rack-2", 4: "rack-0", 5: "rack-1", 6: "rack-2"}, 12, 3, -1),
    ({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}, 7, 3, 0),
    ({0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 13, 3, -1),
    ({0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}, 6, 4, -1),
    ({0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}, 6, 5, -1),
    ({6: "r1", 7: "r2", 8: "r2", 9: "r3", 10: "r3", 11: "r1"}, 12, 2, 12),
    ({1: "r1", 2: "r1", 3: "r1"}, 4, 2, 3),
]
CASES = [
    (racks, partitions, replication_factor, start, start_partition)
    for racks, partitions, replication_factor, start_partition in LAYOUTS
    for start in range(len(racks))
]
# Refusals: Kafka's exception and our error code.
REFUSALS: list[tuple[Racks, int, int, str, int]] = [
    ({1: "a", 2: None, 3: "b"}, 3, 2, "AdminOperationException", UNKNOWN_SERVER_ERROR),
    ({1: "a", 2: "b"}, 3, 3, "InvalidReplicationFactorException", INVALID_REPLICATION_FACTOR),
    ({1: "a", 2: "b"}, 0, 1, "InvalidPartitionsException", INVALID_PARTITIONS),
    ({1: "a", 2: "b"}, 3, 0, "InvalidReplicationFactorException", INVALID_REPLICATION_FACTOR),
]


def _line(racks: Racks, partitions: int, rf: int, start: int, start_partition: int) -> str:
    brokers = ",".join(f"{broker}:{rack or ''}" for broker, rack in racks.items())
    return f"{brokers} {partitions} {rf} {start} {start_partition}"


def _format(assignment: dict[int, list[int]]) -> str:
    return ";".join(
        f"{partition}={','.join(map(str, replicas))}"
        for partition, replicas in sorted(assignment.items())
    )


@pytest.fixture(scope="module")
def kafka_answers(reference_lib: Path) -> list[str]:
    """Kafka's answer to every case, then to every refusal, one line each."""
    lines = [_line(*case) for case in CASES]
    lines += [_line(racks, p, rf, -1, -1) for racks, p, rf, _, _ in REFUSALS]
    result = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{reference_lib}/*", str(PROBE)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    answers = result.stdout.splitlines()
    assert len(answers) == len(lines), result.stdout
    return answers


def test_every_placement_is_kafkas(kafka_answers: list[str]) -> None:
    for index, (racks, partitions, rf, start, start_partition) in enumerate(CASES):
        ours = assign_replicas_to_brokers(
            list(racks),
            partitions,
            rf,
            fixed_start_index=start,
            start_partition_id=start_partition,
            racks=racks,
        )
        assert _format(ours) == kafka_answers[index], CASES[index]


def test_refusals_are_kafkas(kafka_answers: list[str]) -> None:
    for index, (racks, partitions, rf, exception, code) in enumerate(REFUSALS):
        assert kafka_answers[len(CASES) + index] == f"error {exception}"
        with pytest.raises(ApiError) as raised:
            assign_replicas_to_brokers(list(racks), partitions, rf, racks=racks)
        assert raised.value.error_code == code
