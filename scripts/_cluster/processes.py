"""Start detached processes and observe them by pid across launcher invocations.

Processes outlive the launcher (each gets its own session), so later commands only have
the pid from cluster.json. A pid counts as ours only while /proc still shows the start
time recorded at spawn, and a zombie counts as dead (its parent may never reap it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

SIGNALS_BY_NAME: dict[str, signal.Signals] = {
    "TERM": signal.SIGTERM,
    "KILL": signal.SIGKILL,
    "STOP": signal.SIGSTOP,
    "CONT": signal.SIGCONT,
}
POLL_INTERVAL_S = 0.1


def spawn(command: list[str], log_path: Path, cwd: Path, env: dict[str, str]) -> int:
    """Start `command` in its own session with stdout+stderr appended to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process.pid


def _proc_stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces and parentheses; fields after it
    # start behind the last ')'.
    return text[text.rindex(")") + 2 :].split()


def start_ticks_of(pid: int) -> int | None:
    """Process start time in clock ticks since boot (Linux); None elsewhere or if gone."""
    fields = _proc_stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def is_alive(pid: int | None, start_ticks: int | None) -> bool:
    if pid is None:
        return False
    if Path("/proc/self/stat").exists():
        fields = _proc_stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
            return False
        return start_ticks is None or int(fields[19]) == start_ticks
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_if_child(pid: int) -> None:
    """Collect the exit status of a process we started in this run, so it does not linger."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def send_signal(pid: int, signal_number: signal.Signals) -> bool:
    """Send a signal; False if the process was already gone."""
    try:
        os.kill(pid, signal_number)
    except ProcessLookupError:
        return False
    return True


def wait_for_exit(pid: int, start_ticks: int | None, timeout_s: float) -> bool:
    """True once the process is gone, False if it is still alive after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        reap_if_child(pid)
        if not is_alive(pid, start_ticks):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)


def stop_all(processes: list[tuple[int, int | None]], grace_s: float) -> None:
    """SIGTERM every process, then SIGKILL whatever is still alive after `grace_s`."""
    alive = [(pid, ticks) for pid, ticks in processes if is_alive(pid, ticks)]
    for pid, _ in alive:
        send_signal(pid, signal.SIGTERM)
        # A stopped process would hold SIGTERM pending forever.
        send_signal(pid, signal.SIGCONT)
    deadline = time.monotonic() + grace_s
    for pid, ticks in alive:
        wait_for_exit(pid, ticks, max(0.0, deadline - time.monotonic()))
    for pid, ticks in alive:
        if is_alive(pid, ticks):
            send_signal(pid, signal.SIGKILL)
            wait_for_exit(pid, ticks, grace_s)


def tail(path: Path, line_count: int = 20) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(lines[-line_count:])
