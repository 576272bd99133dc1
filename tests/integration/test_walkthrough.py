"""Runs docs/walkthrough.md, block by block, so that it never rots.

Each ```sh block of the walkthrough is preceded by `<!-- walkthrough [retry] [expect="RE"] -->`.
The blocks run in order, in bash from the repository root, sharing exported variables. Only the
cluster's location changes: `scripts/cluster` gets this test's `--dir` (and ports reserved
for `up`), and the default addresses 127.0.0.1:9092.. / :2181.. and /tmp/ are rewritten to match.
A block must exit 0 and, with `expect`, print a match of the regular expression; a `retry`
block is re-run until both hold, within a bound (it waits on the cluster, e.g. for a ZooKeeper
session to expire).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts._cluster.ports import reserve_cluster_ports
from tests.integration.conftest import REPO_ROOT

WALKTHROUGH = REPO_ROOT / "docs" / "walkthrough.md"
DEFAULT_BROKER_PORT = 9092
DEFAULT_ZOOKEEPER_PORT = 2181
ZOOKEEPER_COUNT = 1
BROKER_COUNT = 3
BLOCK_TIMEOUT_S = 180.0
WALKTHROUGH_TIMEOUT_S = 900
# Bounds every wait on the cluster (a retry block): a SIGKILLed broker's ZooKeeper session
# (6 s in the walkthrough) expiring and the controller acting on it, a reassignment, a consumer
# joining; generous, because a loaded 2-CPU machine can take many times the usual.
RETRY_BOUND_S = 120.0
RETRY_PAUSE_S = 1.0

_BLOCK = re.compile(r"<!-- walkthrough(?P<attributes>[^>]*)-->\s*```sh\n(?P<body>.*?)```", re.S)
_EXPECT = re.compile(r'expect="(?P<pattern>(?:[^"\\]|\\.)*)"')

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Block:
    body: str
    expect: str | None
    retry: bool


def walkthrough_blocks() -> list[Block]:
    blocks = []
    for match in _BLOCK.finditer(WALKTHROUGH.read_text()):
        attributes = match["attributes"]
        expect = _EXPECT.search(attributes)
        blocks.append(
            Block(
                body=match["body"],
                expect=expect["pattern"] if expect else None,
                retry=" retry" in f" {attributes}",
            )
        )
    return blocks


def localize(body: str, directory: Path, broker_base: int, zookeeper_base: int) -> str:
    def port(match: re.Match[str]) -> str:
        number = int(match[1])
        if DEFAULT_BROKER_PORT <= number < DEFAULT_BROKER_PORT + BROKER_COUNT:
            return f"127.0.0.1:{broker_base + number - DEFAULT_BROKER_PORT}"
        if DEFAULT_ZOOKEEPER_PORT <= number < DEFAULT_ZOOKEEPER_PORT + ZOOKEEPER_COUNT:
            return f"127.0.0.1:{zookeeper_base + number - DEFAULT_ZOOKEEPER_PORT}"
        raise AssertionError(f"walkthrough uses an unexpected address {match[0]}")

    body = re.sub(r"127\.0\.0\.1:(\d+)", port, body)
    body = body.replace("/tmp/", f"{directory}/")
    body = re.sub(
        r"scripts/cluster up\b",
        f"scripts/cluster up --port-base {broker_base} --zk-port-base {zookeeper_base}",
        body,
    )
    return re.sub(r"scripts/cluster (\w+)", rf"scripts/cluster \1 --dir {directory}/cluster", body)


def run_block(body: str, environment: Path) -> subprocess.CompletedProcess[str]:
    # allexport: variables a block sets (CONTROLLER=...) reach the next blocks.
    script = f"set -aeo pipefail\nsource {environment}\n{body}\nexport -p > {environment}\n"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
        check=False,
    )


def _succeeded(result: subprocess.CompletedProcess[str], expect: str | None) -> bool:
    if result.returncode != 0:
        return False
    return expect is None or re.search(expect, result.stdout) is not None


def run_until_done(block: Block, body: str, environment: Path) -> None:
    deadline = time.monotonic() + (RETRY_BOUND_S if block.retry else 0.0)
    while True:
        result = run_block(body, environment)
        if _succeeded(result, block.expect):
            return
        if time.monotonic() >= deadline:
            pytest.fail(
                f"walkthrough block failed (exit {result.returncode}"
                f"{', expected /' + block.expect + '/' if block.expect else ''}):\n{body}\n"
                f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
            )
        time.sleep(RETRY_PAUSE_S)


# The ports stay reserved until the cluster is down, through every broker's kill and
# restart, so no other test's cluster can take one meanwhile.
@pytest.mark.timeout(WALKTHROUGH_TIMEOUT_S)
def test_walkthrough_runs(tmp_path: Path) -> None:
    blocks = walkthrough_blocks()
    assert len(blocks) >= 10, "the walkthrough blocks of docs/walkthrough.md were not found"
    environment = tmp_path / "environment.sh"
    environment.write_text("")
    with reserve_cluster_ports(BROKER_COUNT, ZOOKEEPER_COUNT) as ports:
        try:
            for block in blocks:
                body = localize(block.body, tmp_path, ports.port_base, ports.zk_port_base)
                run_until_done(block, body, environment)
        finally:
            subprocess.run(
                ["scripts/cluster", "down", "--dir", str(tmp_path / "cluster")],
                cwd=REPO_ROOT,
                capture_output=True,
                timeout=BLOCK_TIMEOUT_S,
                check=False,
            )
