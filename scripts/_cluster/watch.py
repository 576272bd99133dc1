"""`status --watch`: the cluster, refreshed every interval, until Ctrl-C (or `--iterations`).

On a terminal it is a live Rich view (brokers with their controller mark, broker epoch,
leaders, under-replicated partitions, message and byte rates, ISR shrinks and expands;
ZooKeeper servers; the partitions without a full ISR or a live leader). When stdout is not a
terminal each tick prints a plain snapshot of `key=value` lines instead, for logs and tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .layout import load_state
from .watch_data import (
    BYTES_IN,
    BYTES_OUT,
    ISR_EXPANDS,
    ISR_SHRINKS,
    LEADERS,
    MESSAGES_IN,
    NETWORK_IDLE,
    REPLICAS,
    UNDER_REPLICATED,
    BrokerRow,
    ClusterSnapshot,
    Collector,
    PartitionProblem,
)

# Partitions listed by name under the tables; the rest are counted.
LISTED_PROBLEMS = 12
# Counters shown as a rate per second between two ticks: the metric, its plain snapshot key,
# its live view column and the live view's decimals (plain snapshots always show one).
RATES = (
    (MESSAGES_IN, "messages_in_per_s", "msgs in/s", 1),
    (BYTES_IN, "bytes_in_per_s", "bytes in/s", 0),
    (BYTES_OUT, "bytes_out_per_s", "bytes out/s", 0),
)


def watch(directory: Path, interval_s: float, iterations: int | None) -> None:
    load_state(directory)  # fails now, with the launcher's message, if DIR is no cluster
    try:
        asyncio.run(_watch(directory, interval_s, iterations, sys.stdout))
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a watch ends
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and nowhere to say it.
        with contextlib.suppress(OSError):
            sys.stdout.close()


async def _watch(directory: Path, interval_s: float, iterations: int | None, out: TextIO) -> None:
    collector = Collector(directory)
    live = Live(console=Console(file=out), auto_refresh=False) if out.isatty() else None
    previous: ClusterSnapshot | None = None
    taken = 0
    try:
        if live is not None:
            live.start()
        while True:
            snapshot = await collector.take()
            taken += 1
            if live is not None:
                live.update(rich_view(directory, snapshot, previous, interval_s), refresh=True)
            else:
                out.write(plain_view(taken, snapshot, previous))
                out.flush()
            previous = snapshot
            if iterations is not None and taken >= iterations:
                return
            await asyncio.sleep(interval_s)
    finally:
        if live is not None:
            live.stop()
        await collector.close()


def _rate(
    row: BrokerRow, previous: ClusterSnapshot | None, name: str, now_s: float
) -> float | None:
    """Per second since the previous snapshot; None without two readings (or after the
    broker restarted and its counters began again)."""
    now = _metric(row, name)
    before = None if previous is None else _previous_metric(previous, row.broker_id, name)
    if previous is None or now is None or before is None:
        return None
    elapsed_s = now_s - previous.taken_s
    delta = now - before
    if elapsed_s <= 0 or delta < 0:
        return None
    return delta / elapsed_s


def _metric(row: BrokerRow, name: str) -> float | None:
    return None if row.metrics is None else row.metrics.get(name)


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _yes_no(flag: bool | None) -> str:
    return "unknown" if flag is None else "yes" if flag else "no"


def _members(brokers: list[int]) -> str:
    return ",".join(map(str, brokers)) or "none"


# -- plain snapshots ---------------------------------------------------------------------


def plain_view(index: int, snapshot: ClusterSnapshot, previous: ClusterSnapshot | None) -> str:
    return "\n".join([*_plain_lines(index, snapshot, previous), "", ""])


def _plain_lines(
    index: int, snapshot: ClusterSnapshot, previous: ClusterSnapshot | None
) -> Iterator[str]:
    view = snapshot.view
    yield f"snapshot {index} at {snapshot.wall_time}"
    if view is None:
        yield "controller id=unknown epoch=unknown"
    else:
        controller = "none" if view.controller_id is None else view.controller_id
        epoch = "none" if view.controller_epoch is None else view.controller_epoch
        yield f"controller id={controller} epoch={epoch}"
    for row in snapshot.brokers:
        yield _plain_broker(row, snapshot, previous)
    for server in snapshot.zookeepers:
        yield f"zookeeper {server.server_id} alive={_yes_no(server.alive)} mode={server.mode}"
    if view is None:
        yield "partitions total=unknown under_replicated=unknown offline=unknown"
        return
    offline = [p for p in view.problems if p.offline]
    under = [p for p in view.problems if not p.offline]
    yield (
        f"partitions total={view.partition_count} under_replicated={len(under)}"
        f" offline={len(offline)}"
    )
    for problem in view.problems[:LISTED_PROBLEMS]:
        kind = "offline" if problem.offline else "under_replicated"
        yield (
            f"{kind} {problem.topic}-{problem.partition} leader={problem.leader}"
            f" isr={_members(problem.isr)} replicas={_members(problem.replicas)}"
        )


def _plain_broker(
    row: BrokerRow, snapshot: ClusterSnapshot, previous: ClusterSnapshot | None
) -> str:
    view = snapshot.view
    controller = None if view is None else view.controller_id == row.broker_id
    now_s = snapshot.taken_s
    fields = {
        "alive": _yes_no(row.alive),
        "registered": _yes_no(row.registered),
        "controller": _yes_no(controller),
        "epoch": "-" if row.broker_epoch is None else str(row.broker_epoch),
        "leaders": _number(_metric(row, LEADERS)),
        "partitions": _number(_metric(row, REPLICAS)),
        "under_replicated": _number(_metric(row, UNDER_REPLICATED)),
        **{key: _number(_rate(row, previous, metric, now_s), 1) for metric, key, _, _ in RATES},
        "isr_shrinks": _number(_metric(row, ISR_SHRINKS)),
        "isr_expands": _number(_metric(row, ISR_EXPANDS)),
        "idle": _number(_metric(row, NETWORK_IDLE), 2),
        "impl": row.impl,
    }
    return f"broker {row.broker_id} " + " ".join(f"{k}={v}" for k, v in fields.items())


# -- the live view ----------------------------------------------------------------------


def rich_view(
    directory: Path,
    snapshot: ClusterSnapshot,
    previous: ClusterSnapshot | None,
    interval_s: float,
) -> Group:
    view = snapshot.view
    if view is None:
        controller = Text("ZooKeeper unreachable: controller unknown", style="bold red")
    else:
        controller = Text.assemble(
            ("controller ", "bold"),
            (str(view.controller_id) if view.controller_id is not None else "none", "bold yellow"),
            f"  controller epoch {view.controller_epoch}",
        )
    header = Text.assemble((f"{directory}", "bold"), f"  {snapshot.wall_time}  ", controller)
    footer = Text(f"refreshing every {interval_s:g} s; Ctrl-C to quit", style="dim")
    return Group(
        header,
        _broker_table(snapshot, previous),
        _zookeeper_table(snapshot),
        _partition_summary(snapshot),
        footer,
    )


def _broker_table(snapshot: ClusterSnapshot, previous: ClusterSnapshot | None) -> Table:
    table = Table(title="Brokers", title_justify="left", expand=False)
    for column in (
        "id",
        "impl",
        "alive",
        "registered",
        "broker epoch",
        "leaders",
        "replicas",
        "URP",
        *(header for _, _, header, _ in RATES),
        "ISR shrinks",
        "ISR expands",
        "idle",
    ):
        table.add_column(
            column, justify="right" if column not in ("impl", "alive", "registered") else "left"
        )
    view = snapshot.view
    for row in snapshot.brokers:
        is_controller = view is not None and view.controller_id == row.broker_id
        under = _metric(row, UNDER_REPLICATED)
        table.add_row(
            Text(
                f"{row.broker_id}{' ♛' if is_controller else ''}",
                style="bold yellow" if is_controller else "",
            ),
            row.impl,
            _flag(row.alive),
            _flag(row.registered),
            "-" if row.broker_epoch is None else str(row.broker_epoch),
            _number(_metric(row, LEADERS)),
            _number(_metric(row, REPLICAS)),
            Text(_number(under), style="bold red" if under else ""),
            *(
                _number(_rate(row, previous, metric, snapshot.taken_s), digits)
                for metric, _, _, digits in RATES
            ),
            _count_with_change(row, previous, ISR_SHRINKS),
            _count_with_change(row, previous, ISR_EXPANDS),
            _number(_metric(row, NETWORK_IDLE), 2),
        )
    return table


def _count_with_change(row: BrokerRow, previous: ClusterSnapshot | None, name: str) -> Text:
    """The counter, and how much it grew since the previous refresh, highlighted."""
    count = _metric(row, name)
    before = None if previous is None else _previous_metric(previous, row.broker_id, name)
    if count is None or before is None or count <= before:
        return Text(_number(count))
    return Text(f"{count:.0f} (+{count - before:.0f})", style="bold yellow")


def _previous_metric(previous: ClusterSnapshot, broker_id: int, name: str) -> float | None:
    before = next((b for b in previous.brokers if b.broker_id == broker_id), None)
    return None if before is None else _metric(before, name)


def _flag(flag: bool | None) -> Text:
    if flag is None:
        return Text("unknown", style="dim")
    return Text("yes", style="green") if flag else Text("no", style="bold red")


def _zookeeper_table(snapshot: ClusterSnapshot) -> Table:
    table = Table(title="ZooKeeper", title_justify="left")
    table.add_column("server", justify="right")
    table.add_column("alive")
    table.add_column("mode")
    for server in snapshot.zookeepers:
        table.add_row(str(server.server_id), _flag(server.alive), server.mode)
    return table


def _partition_summary(snapshot: ClusterSnapshot) -> Group:
    view = snapshot.view
    if view is None:
        return Group(Text("partitions: unknown (ZooKeeper unreachable)", style="dim"))
    offline = sum(1 for p in view.problems if p.offline)
    under = len(view.problems) - offline
    summary = Text.assemble(
        ("Partitions ", "bold"),
        f"{view.partition_count} total, ",
        (f"{under} under-replicated", "bold red" if under else "green"),
        ", ",
        (f"{offline} offline", "bold red" if offline else "green"),
    )
    if not view.problems:
        return Group(summary)
    return Group(summary, _problem_table(view.problems))


def _problem_table(problems: list[PartitionProblem]) -> Table:
    table = Table(title_justify="left")
    for column in ("partition", "state", "leader", "ISR", "replicas"):
        table.add_column(column)
    for problem in problems[:LISTED_PROBLEMS]:
        table.add_row(
            f"{problem.topic}-{problem.partition}",
            Text("offline", style="bold red")
            if problem.offline
            else Text("under-replicated", style="yellow"),
            str(problem.leader),
            _members(problem.isr),
            _members(problem.replicas),
        )
    if len(problems) > LISTED_PROBLEMS:
        table.caption = f"and {len(problems) - LISTED_PROBLEMS} more"
    return table
