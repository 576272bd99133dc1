"""The brokers' state-change logs as they grow, parsed as `scripts/cluster events` does."""

from __future__ import annotations

import os
from pathlib import Path

from _cluster.errors import ClusterError
from _cluster.events import Event, ImplOf, broker_logs, labellers, read_events
from _cluster.layout import load_state


class StateChangeTail:
    """Returns, on each `poll`, the entries written since the last one (merged in time order).

    A file is re-read only when its size changed; a file that shrank (a new broker directory,
    a rewritten log) is read from its start again. The last entry of a file may still grow
    (a traceback continues it), so it is held back until a later entry or a quiet poll follows.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._sizes: dict[Path, int] = {}
        self._seen: dict[Path, int] = {}  # entries already returned per file

    def poll(self) -> list[Event]:
        fresh: list[Event] = []
        try:
            logs = broker_logs(self._directory)
        except OSError:
            return []
        impl_of = self._labellers()
        for writer, path in logs:
            try:
                size = os.stat(path).st_size
            except OSError:
                continue
            if size == self._sizes.get(path):
                continue
            if size < self._sizes.get(path, 0):
                self._seen[path] = 0
            self._sizes[path] = size
            try:
                entries = list(read_events(path, writer, impl_of.get(writer)))
            except OSError:
                continue
            seen = self._seen.get(path, 0)
            fresh.extend(entries[seen:])
            self._seen[path] = len(entries)
        fresh.sort(key=lambda event: event.timestamp)  # stable: file order within equal times
        return fresh

    def _labellers(self) -> dict[str, ImplOf]:
        """Who wrote what, in a mixed cluster (cluster.json is read again: `start --impl`
        changes it)."""
        try:
            return labellers(load_state(self._directory))
        except (ClusterError, OSError, KeyError, TypeError):
            return {}
