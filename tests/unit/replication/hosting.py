"""Preparing replicas' logs from synchronous test code.

The broker only prepares logs off its event loop (`ReplicaManager.prepare_logs`, awaited by the
reconcile pass); tests that drive `apply_state` directly prepare them first with this, which
runs the same coroutine to completion on a loop of its own in another thread (the caller,
even inside a running loop, waits, so nothing else touches the registry meanwhile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from broker.replication.replica_manager import ReplicaManager


def prepare_now(
    manager: ReplicaManager, topic: str, topic_id: str, partitions: Sequence[int]
) -> list[int]:
    """Prepare the logs of `partitions`; returns those that became ready."""
    ready: list[int] = []

    async def prepare() -> None:
        await manager.prepare_logs(topic, topic_id, partitions, ready.extend)

    with ThreadPoolExecutor(1) as executor:
        executor.submit(asyncio.run, prepare()).result()
    return sorted(ready)
