"""scripts/cluster keeps the contract in CLUSTER_CONTRACT.md (output, exit codes, processes)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import (
    ClusterFactory,
    ClusterHandle,
    ClusterStatus,
    run_cluster_command,
    wait_until,
)

# Short sessions so a hard-killed broker's registration expires quickly.
FAST_SESSION = {"zookeeper.session.timeout.ms": "4000"}
STATE_CHANGE_TIMEOUT_S = 60.0


def _all_brokers_registered(status: ClusterStatus) -> bool:
    return all(broker.alive and broker.registered for broker in status.brokers.values())


@pytest.fixture(scope="module")
def ensemble(make_cluster_module: ClusterFactory) -> ClusterHandle:
    """Three ZooKeeper servers (three JVMs) for both ensemble tests: the restart test leaves
    the ensemble whole again."""
    return make_cluster_module(brokers=1, zookeepers=3)


def test_up_prints_exactly_bootstrap_servers_and_zookeeper_connect(cluster: ClusterHandle) -> None:
    ports = [cluster.port_base + offset for offset in range(3)]
    assert cluster.up_stdout.splitlines() == [
        "bootstrap.servers=" + ",".join(f"127.0.0.1:{port}" for port in ports),
        f"zookeeper.connect=127.0.0.1:{cluster.zk_port_base}",
    ]


def test_second_up_on_running_dir_fails_and_leaves_cluster_running(
    cluster: ClusterHandle,
) -> None:
    before = cluster.status()
    result = run_cluster_command("up", "--dir", str(cluster.dir), "--brokers", "3")
    assert result.returncode != 0
    assert "already running" in result.stderr
    assert result.stdout == ""
    after = cluster.status()
    assert {i: b.pid for i, b in after.brokers.items()} == {
        i: b.pid for i, b in before.brokers.items()
    }
    assert _all_brokers_registered(after)


def test_status_lists_every_broker_zookeeper_server_and_the_controller(
    cluster: ClusterHandle,
) -> None:
    status = cluster.status()
    assert sorted(status.brokers) == [1, 2, 3]
    assert _all_brokers_registered(status)
    assert all(broker.pid is not None for broker in status.brokers.values())
    assert list(status.zookeepers) == [1]
    assert status.zookeepers[1].alive
    assert status.zookeepers[1].mode == "standalone"
    assert status.controller_id in (1, 2, 3)
    assert status.controller_epoch is not None and status.controller_epoch >= 1


def test_killed_broker_deregisters_and_start_brings_it_back(
    make_cluster: ClusterFactory,
) -> None:
    handle = make_cluster(brokers=2, overrides=FAST_SESSION)
    old_pid = handle.status().brokers[2].pid

    handle.kill(2)
    wait_until(
        lambda: not handle.status().brokers[2].registered,
        STATE_CHANGE_TIMEOUT_S,
        "broker 2 to leave /brokers/ids after SIGTERM",
    )
    assert not handle.status().brokers[2].alive

    handle.start(2)  # returns once broker 2 is registered again
    status = handle.status()
    assert status.brokers[2].alive and status.brokers[2].registered
    assert status.brokers[2].pid != old_pid
    assert status.brokers[1].registered


def test_start_after_sigkill_waits_out_the_stale_registration(
    make_cluster: ClusterFactory,
) -> None:
    handle = make_cluster(brokers=1, overrides=FAST_SESSION)
    handle.kill(1, "KILL")
    wait_until(
        lambda: not handle.status().brokers[1].alive, STATE_CHANGE_TIMEOUT_S, "broker 1 to die"
    )

    handle.start(1)

    status = handle.status()
    assert status.brokers[1].alive and status.brokers[1].registered


def test_stopped_broker_still_counts_as_alive_and_resumes_on_cont(
    make_cluster: ClusterFactory,
) -> None:
    handle = make_cluster(brokers=1)
    handle.kill(1, "STOP")
    assert handle.status().brokers[1].alive
    handle.kill(1, "CONT")
    assert handle.status().brokers[1].registered


def test_three_zookeeper_servers_form_an_ensemble_with_one_leader(ensemble: ClusterHandle) -> None:
    handle = ensemble
    status = handle.status()
    assert sorted(status.zookeepers) == [1, 2, 3]
    modes = sorted(server.mode or "" for server in status.zookeepers.values())
    assert modes == ["follower", "follower", "leader"]
    assert handle.up_stdout.splitlines()[1] == f"zookeeper.connect={handle.zk_connect}"
    assert _all_brokers_registered(status)


def test_ensemble_survives_losing_and_restarting_one_server(ensemble: ClusterHandle) -> None:
    handle = ensemble
    handle.kill_zookeeper(1, "KILL")
    wait_until(
        lambda: not handle.status().zookeepers[1].alive,
        STATE_CHANGE_TIMEOUT_S,
        "zookeeper 1 to die",
    )
    wait_until(
        lambda: (
            sorted(z.mode or "" for z in handle.status().zookeepers.values())
            == ["down", "follower", "leader"]
        ),
        STATE_CHANGE_TIMEOUT_S,
        "the two remaining servers to keep a quorum",
    )

    handle.start_zookeeper(1)

    wait_until(
        lambda: handle.status().zookeepers[1].mode in ("follower", "leader"),
        STATE_CHANGE_TIMEOUT_S,
        "zookeeper 1 to rejoin the ensemble",
    )
    assert _all_brokers_registered(handle.status())


def test_down_exits_zero_when_processes_are_already_dead(make_cluster: ClusterFactory) -> None:
    handle = make_cluster(brokers=1)
    handle.kill(1, "KILL")
    handle.kill_zookeeper(1, "KILL")
    wait_until(
        lambda: (
            not any(
                process.alive
                for process in [
                    *handle.status().brokers.values(),
                    *handle.status().zookeepers.values(),
                ]
            )
        ),
        STATE_CHANGE_TIMEOUT_S,
        "every process to die",
    )

    assert handle.down(wipe=False).returncode == 0
    assert handle.down(wipe=True).returncode == 0
    assert not handle.dir.exists()
    assert handle.down(wipe=True).returncode == 0  # nothing left: still fine


def test_down_stops_every_process(make_cluster: ClusterFactory) -> None:
    handle = make_cluster(brokers=2)
    pids = [b.pid for b in handle.status().brokers.values()]
    pids += [z.pid for z in handle.status().zookeepers.values()]

    assert handle.down(wipe=False).returncode == 0

    assert all(pid is not None and not _pid_running(pid) for pid in pids)
    assert not any(p.alive for p in handle.status().brokers.values())


def test_up_without_java_says_java_is_missing(tmp_path: Path) -> None:
    # A PATH holding only the Python interpreter: the launcher runs, java is not found.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bin_dir)}
    env.pop("ZOOKEEPER_HOME", None)
    assert shutil.which("java", path=str(bin_dir)) is None

    result = run_cluster_command("up", "--dir", str(tmp_path / "cluster"), env=env)

    assert result.returncode != 0
    assert "Java" in result.stderr and "PATH" in result.stderr
    assert not (tmp_path / "cluster").exists()


def _pid_running(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return False
    state = stat.read_text().rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")
