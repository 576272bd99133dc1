"""The broker process itself: clear start-up errors for bad configs and duplicate ids."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from scripts._cluster.ports import reserve_port
from tests.integration.conftest import ClusterHandle, wait_until

START_TIMEOUT_S = 60


def _run_broker(properties: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "broker", str(properties)]
    for override in overrides:
        args += ["--override", override]
    return subprocess.run(args, capture_output=True, text=True, timeout=START_TIMEOUT_S)


def _properties(tmp_path: Path, zk_connect: str, broker_id: int, port: int) -> Path:
    path = tmp_path / "server.properties"
    path.write_text(
        f"broker.id={broker_id}\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={tmp_path / 'data'}\n"
        f"zookeeper.connect={zk_connect}\n"
    )
    return path


def test_unknown_config_key_is_a_clear_start_up_error(tmp_path: Path) -> None:
    properties = _properties(tmp_path, "127.0.0.1:1", 1, 1)
    result = _run_broker(properties, "log.segmnet.bytes=1000")
    assert result.returncode == 2
    assert "unknown broker config key(s): log.segmnet.bytes" in result.stderr


def test_invalid_config_value_is_a_clear_start_up_error(tmp_path: Path) -> None:
    properties = _properties(tmp_path, "127.0.0.1:1", 1, 1)
    result = _run_broker(properties, "num.partitions=zero")
    assert result.returncode == 2
    assert "invalid value 'zero' for num.partitions" in result.stderr


def test_cleaner_config_below_its_bound_is_a_clear_start_up_error(tmp_path: Path) -> None:
    properties = _properties(tmp_path, "127.0.0.1:1", 1, 1)
    result = _run_broker(properties, "log.cleaner.dedupe.buffer.size=10")
    assert result.returncode == 2
    assert "log.cleaner.dedupe.buffer.size must be at least 1 MiB" in result.stderr
    assert "Traceback" not in result.stderr


def test_second_broker_with_a_registered_id_refuses_to_start(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    taken_id = cluster.broker_ids[0]
    with reserve_port() as free_port:
        properties = _properties(tmp_path, cluster.zk_connect, taken_id, free_port.base)
        result = _run_broker(properties)
    assert result.returncode == 1
    assert f"broker {taken_id} failed to start" in result.stderr
    assert "registered by another ZooKeeper session" in result.stderr
    assert cluster.status().brokers[taken_id].registered


def test_log_dir_of_another_broker_is_refused(cluster: ClusterHandle, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    other = cluster.dir / f"broker-{cluster.broker_ids[0]}" / "data" / "meta.properties"
    (data / "meta.properties").write_text(other.read_text())
    with reserve_port() as free_port:
        properties = _properties(tmp_path, cluster.zk_connect, 77, free_port.base)
        result = _run_broker(properties)
    assert result.returncode == 1
    assert "broker 77 failed to start" in result.stderr
    assert "broker.id" in result.stderr


def test_a_sigtermed_broker_shuts_down_cleanly_and_exits_zero(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    """The process ends without the interpreter's teardown: nothing it wrote may be lost, and
    its exit code is still 0."""
    port = cluster.broker_port(cluster.broker_count + 7)
    properties = _properties(tmp_path, cluster.zk_connect, 78, port)
    stderr_path = tmp_path / "broker.log"
    env = {**os.environ, "LOG_DIR": str(tmp_path / "logs")}
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "broker", str(properties)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )
        try:
            wait_until(
                lambda: (
                    "broker 78 started" in stderr_path.read_text() or process.poll() is not None
                ),
                START_TIMEOUT_S,
                "broker 78 to start",
            )
            assert process.poll() is None, stderr_path.read_text()[-3000:]
            process.send_signal(signal.SIGTERM)
            assert process.wait(START_TIMEOUT_S) == 0, stderr_path.read_text()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    log_lines = stderr_path.read_text().splitlines()
    assert "INFO broker 78 shut down (broker.server)" in log_lines[-1], log_lines[-5:]
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "logs" / "state-change.log").exists()
