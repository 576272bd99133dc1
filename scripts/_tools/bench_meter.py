"""The brokers' cost during a benchmark phase, read from /proc: CPU-seconds and peak RSS.

CPU is user + system time of every broker process (their threads included), in clock ticks
from /proc/PID/stat; RSS is VmHWM (the peak resident set) from /proc/PID/status.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
# /proc/PID/stat fields after the command name (which may hold spaces): utime and stime are
# the 14th and 15th fields of the whole line, so the 12th and 13th after ") ".
UTIME_INDEX_AFTER_NAME = 11
STIME_INDEX_AFTER_NAME = 12


def cpu_seconds(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    ticks = int(fields[UTIME_INDEX_AFTER_NAME]) + int(fields[STIME_INDEX_AFTER_NAME])
    return ticks / CLOCK_TICKS_PER_S


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass(frozen=True, slots=True)
class Sample:
    cpu_seconds: float


@dataclass(frozen=True, slots=True)
class PhaseMeter:
    """Measures the broker processes `pids` (all of one cluster)."""

    pids: tuple[int, ...]

    def sample(self) -> Sample:
        return Sample(cpu_seconds=sum(cpu_seconds(pid) for pid in self.pids))

    def figures_since(self, before: Sample, gigabytes: float) -> dict[str, float]:
        used_s = self.sample().cpu_seconds - before.cpu_seconds
        return {
            "broker_cpu_s": round(used_s, 2),
            "broker_cpu_s_per_gb": round(used_s / gigabytes, 1) if gigabytes > 0 else 0.0,
            "broker_peak_rss_mb": round(sum(peak_rss_mb(pid) for pid in self.pids)),
        }
