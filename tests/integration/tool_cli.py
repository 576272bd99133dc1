"""Running the installed console tools (`.venv/bin/kafka-*`) as a person would, for tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.integration.conftest import ClusterHandle

BIN_DIR = Path(sys.executable).parent
TOOL_TIMEOUT_S = 90.0
# A port nothing listens on (connections are refused at once).
UNREACHABLE_BOOTSTRAP = "127.0.0.1:1"


def run_tool(
    name: str, *args: str, stdin: str | None = None, timeout_s: float = TOOL_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN_DIR / name), *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def run_cluster_tool(
    cluster: ClusterHandle, name: str, *args: str, config_flag: str = "--command-config"
) -> subprocess.CompletedProcess[str]:
    """`name` against a (secured) cluster: its bootstrap servers and the client.properties the
    launcher writes (`config_flag` names it for tools that spell the option differently)."""
    client_config = str(cluster.dir / "client.properties")
    return run_tool(
        name, "--bootstrap-server", cluster.bootstrap, config_flag, client_config, *args
    )


def add_scram_user(
    cluster: ClusterHandle, user: str, mechanism: str = "SCRAM-SHA-512"
) -> tuple[str, str]:
    """Give `user` a SCRAM credential (password `<user>-secret`) with kafka-configs, as the
    cluster's admin; (user, password)."""
    password = f"{user}-secret"
    credential = f"{mechanism}=[password={password}]"
    entity = ("--entity-type", "users", "--entity-name", user)
    ok(run_cluster_tool(cluster, "kafka-configs", "--alter", *entity, "--add-config", credential))
    return user, password


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """stdout of a run that must have succeeded (its stderr in the failure message)."""
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """A failure as the tools promise it: non-zero exit, one stderr line, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
