"""scripts/_cluster/ports.py: a reserved port is never handed out twice until it is released.

flock treats two opens of one file as two holders even in one process, so one process can
stand in for two workers."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from scripts._cluster import ports
from scripts._cluster.layout import ELECTION_PORT_OFFSET, METRICS_PORT_OFFSET, QUORUM_PORT_OFFSET

# One block: a second reservation has nowhere else to go.
ONE_BLOCK = (ports.SINGLE_PORT_RANGE[0], ports.SINGLE_PORT_RANGE[0] + ports.BLOCK_SIZE)


@pytest.fixture(autouse=True)
def lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ports, "LOCK_DIR", tmp_path)
    return tmp_path


def test_a_reserved_block_is_not_handed_out_again_until_released() -> None:
    first = ports.reserve([0, 1], ONE_BLOCK)
    with pytest.raises(ports.NoFreePorts):
        ports.reserve([0], ONE_BLOCK)
    first.release()
    with ports.reserve([0], ONE_BLOCK) as second:
        assert second.base == first.base


def test_a_port_bound_by_someone_else_is_skipped() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", ONE_BLOCK[0]))
        with pytest.raises(ports.NoFreePorts):
            ports.reserve([0], ONE_BLOCK)


def test_cluster_ports_cover_metrics_quorum_and_election_ports() -> None:
    brokers, zookeepers = ports.cluster_port_offsets(3, 3)
    assert brokers == [0, 1, 2, *(METRICS_PORT_OFFSET + n for n in range(3))]
    assert zookeepers[3:] == [
        *(QUORUM_PORT_OFFSET + n for n in range(3)),
        *(ELECTION_PORT_OFFSET + n for n in range(3)),
    ]
    with ports.reserve_cluster_ports(3, 3) as reserved:
        assert reserved.port_base % ports.BLOCK_SIZE == 0
        broker_blocks = {reserved.port_base // 10, (reserved.port_base + 100) // 10}
        for block in broker_blocks:
            # Another worker cannot take any block the cluster's ports fall in.
            assert ports._lock_block(block) is None
    for block in broker_blocks:
        lock = ports._lock_block(block)
        assert lock is not None
        lock.close()


def test_the_ranges_do_not_overlap_and_lie_below_the_ephemeral_ports() -> None:
    room = ports.BLOCK_SIZE
    assert ports.BROKER_PORT_RANGE[1] + METRICS_PORT_OFFSET + room <= ports.ZOOKEEPER_PORT_RANGE[0]
    assert ports.ZOOKEEPER_PORT_RANGE[1] + ELECTION_PORT_OFFSET + room <= ports.SINGLE_PORT_RANGE[0]
    assert ports.SINGLE_PORT_RANGE[1] <= 32768  # Linux's first ephemeral port
