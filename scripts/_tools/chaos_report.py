"""Unavailability per fault, the summary (JSON) and the table a person reads.

Unavailability of a fault is the longest time, over all partitions, between acknowledgements
from the fault's start until the next fault (or the end of producing): the window's first gap
runs from the fault's start, and a gap still open at the window's end runs to that partition's
next acknowledgement. Producers write every partition steadily, so between faults a partition's
gaps are a few milliseconds.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from typing import Any

from .chaos_faults import Fault
from .chaos_produce import Ack, FleetResult
from .chaos_replicas import Divergence
from .chaos_txn_check import TxnCheck
from .chaos_verify import RecordCheck


def ack_times(acks: list[Ack]) -> dict[int, list[float]]:
    times: dict[int, list[float]] = defaultdict(list)
    for ack in acks:
        times[ack.partition].append(ack.at)
    return {partition: sorted(values) for partition, values in times.items()}


def longest_gap_ms(times: list[float], start: float, end: float, finish: float) -> float:
    """Longest gap in `times` seen from `start` through `end`; a gap open at `end` closes at the
    next acknowledgement, or at `finish` (producing stopped) if none came."""
    first = bisect.bisect_right(times, start)
    after = bisect.bisect_right(times, end)
    closing = times[after] if after < len(times) else finish
    points = [start, *times[first:after], closing]
    return max(b - a for a, b in itertools.pairwise(points)) * 1000


def measure_unavailability(
    faults: list[Fault], times: dict[int, list[float]], partitions: int, finish: float
) -> None:
    for index, fault in enumerate(faults):
        end = faults[index + 1].started_at if index + 1 < len(faults) else finish
        gaps = [
            longest_gap_ms(times.get(partition, []), fault.started_at, end, finish)
            for partition in range(partitions)
        ]
        fault.unavailability_ms = max(gaps, default=0.0)


def _by_kind(faults: list[Fault]) -> dict[str, dict[str, Any]]:
    kinds: dict[str, dict[str, Any]] = {}
    for fault in faults:
        row = kinds.setdefault(
            fault.kind, {"faults": 0, "longest_unavailability_ms": 0, "longest_recovery_ms": 0}
        )
        row["faults"] += 1
        row["longest_unavailability_ms"] = max(
            row["longest_unavailability_ms"], round(fault.unavailability_ms)
        )
        row["longest_recovery_ms"] = max(row["longest_recovery_ms"], round(fault.recovery_ms or 0))
    return dict(sorted(kinds.items()))


def summary(
    settings: dict[str, Any],
    faults: list[Fault],
    fleet: FleetResult,
    records: RecordCheck,
    divergences: list[Divergence],
    settled: bool,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        **settings,
        **_fault_figures(faults, divergences, settled),
        "produced": fleet.produced,
        "acked": records.acked,
        "acked_without_offset": records.acked_without_offset,
        "failed": sum(fleet.failed.values()),
        "failed_by_error": fleet.failed,
        "unresolved": fleet.unresolved,
        "producer_fatal_errors": fleet.fatal_errors,
        "stored": records.stored,
        "unacknowledged_stored": records.unacknowledged,
        "lost": records.lost,
        "duplicated": records.duplicated,
        "resent_after_epoch_bump": records.resent_after_epoch_bump,
        "reordered": records.reordered,
        "read_complete": records.read_complete,
        "samples": records.samples,
    }
    result["ok"] = passed(result)
    return result


def _fault_figures(
    faults: list[Fault], divergences: list[Divergence], settled: bool
) -> dict[str, Any]:
    """What both checkers report about the faults and the replicas."""
    kinds = _by_kind(faults)
    return {
        "faults": len(faults),
        "faults_by_kind": {kind: row["faults"] for kind, row in kinds.items()},
        "longest_unavailability_ms": {
            kind: row["longest_unavailability_ms"] for kind, row in kinds.items()
        },
        "longest_recovery_ms": {kind: row["longest_recovery_ms"] for kind, row in kinds.items()},
        "divergent": len(divergences),
        "divergent_partitions": [d.describe() for d in divergences],
        "recovered": all(fault.recovered_at is not None for fault in faults),
        "fault_errors": sum(fault.error is not None for fault in faults),
        "settled": settled,
        "fault_log": [_fault_entry(fault) for fault in faults],
    }


def _fault_entry(fault: Fault) -> dict[str, Any]:
    recovery = fault.recovery_ms
    return {
        "kind": fault.kind,
        "target": fault.target,
        "unavailability_ms": round(fault.unavailability_ms),
        "recovery_ms": None if recovery is None else round(recovery),
        "error": fault.error,
    }


def passed(result: dict[str, Any]) -> bool:
    problems = (result["lost"], result["duplicated"], result["reordered"])
    return not any(problems) and _cluster_ok(result)


def _cluster_ok(result: dict[str, Any]) -> bool:
    return (
        not result["divergent"]
        and result["writable"]
        and not result["fault_errors"]
        and result["recovered"]
        and result["settled"]
        and result["read_complete"]
    )


def _columns(rows: list[list[str]]) -> list[str]:
    """Plain-text columns: the first left-aligned (names), the rest right-aligned (numbers)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _with_details(total: int, by_name: dict[str, int]) -> str:
    details = ", ".join(f"{name} {count}" for name, count in sorted(by_name.items()))
    return f"{total} ({details})" if details else str(total)


def table(result: dict[str, Any]) -> str:
    return _render(
        result,
        [
            ("acked", result["acked"]),
            ("acked without offset", result["acked_without_offset"]),
            ("lost", result["lost"]),
            ("duplicated", result["duplicated"]),
            ("re-sent after a client epoch bump", result["resent_after_epoch_bump"]),
            ("reordered", result["reordered"]),
            ("divergent partitions", result["divergent"]),
            ("failed deliveries", _with_details(result["failed"], result["failed_by_error"])),
            ("unresolved deliveries", result["unresolved"]),
            ("stored, never acked", result["unacknowledged_stored"]),
            ("producer fatal errors", len(result["producer_fatal_errors"])),
        ],
    )


def _render(result: dict[str, Any], checks: list[tuple[str, object]]) -> str:
    """The faults per kind, the checker's own lines (`checks`), then what every run shows."""
    rows = [["fault kind", "faults", "longest unavailability ms", "longest recovery ms"]]
    for kind, count in result["faults_by_kind"].items():
        unavailable = result["longest_unavailability_ms"][kind]
        rows.append([kind, str(count), str(unavailable), str(result["longest_recovery_ms"][kind])])
    rows.append(["total", str(result["faults"]), "", ""])
    totals = [
        ("brokers (1, 2, ...)", ",".join(result.get("impls") or [])),
        *checks,
        ("all partitions writable", "yes" if result["writable"] else "NO"),
        ("faults gone wrong", result["fault_errors"]),
        ("recovered after each fault", "yes" if result["recovered"] else "NO"),
        ("settled (full ISR, same bytes)", "yes" if result["settled"] else "NO"),
        ("read complete", "yes" if result["read_complete"] else "NO"),
        ("result", "PASS" if result["ok"] else "FAIL"),
    ]
    lines = [*_columns(rows), "", *_columns([[name, str(value)] for name, value in totals])]
    lines += [f"divergent {divergence}" for divergence in result["divergent_partitions"]]
    for problem, samples in result["samples"].items():
        lines += [f"{problem}: {sample}" for sample in samples]
    for entry in result["fault_log"]:
        if entry["error"]:
            lines.append(f"fault {entry['kind']} on {entry['target']}: {entry['error']}")
    return "\n".join(lines)


def txn_summary(
    settings: dict[str, Any],
    faults: list[Fault],
    check: TxnCheck,
    client_errors: list[str],
    divergences: list[Divergence],
    settled: bool,
) -> dict[str, Any]:
    """`--transactional`: the fault figures and the transactions' check (chaos_txn_check)."""
    result: dict[str, Any] = {
        **settings,
        **_fault_figures(faults, divergences, settled),
        **check.as_dict(),
        "client_errors": client_errors,
    }
    result["ok"] = check.problems == 0 and _cluster_ok(result)
    return result


def txn_table(result: dict[str, Any], check_rows: list[tuple[str, object]]) -> str:
    return _render(
        result,
        [
            *check_rows,
            ("divergent partitions", result["divergent"]),
            ("client errors", len(result["client_errors"])),
        ],
    )
