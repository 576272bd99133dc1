"""The broker's collector policy: what middle collections promote is collected and frozen
within a check interval; frozen objects go back to the collector on a timer."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Callable, Iterator

import pytest

from broker.process.gc_policy import OLDEST_GENERATION, GcPolicy

CHECK_S = 0.01


class _Node:
    """A container the collector tracks, and that can refer to itself."""

    me: object = None


async def _until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(CHECK_S)


@pytest.fixture(autouse=True)
def _leave_the_collector_as_found() -> Iterator[None]:
    yield
    gc.unfreeze()


def _frozen_cycle() -> weakref.ref[_Node]:
    """Cyclic garbage the collector cannot see: frozen while alive, then dropped."""
    node = _Node()
    node.me = node
    gc.freeze()
    return weakref.ref(node)


def test_what_a_middle_collection_promotes_is_collected_and_frozen() -> None:
    full_collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == OLDEST_GENERATION:
            full_collections.append(1)

    async def run() -> int:
        policy = GcPolicy(check_interval_s=CHECK_S)
        policy.start()
        gc.collect(1)  # promotes the survivors of the two younger generations
        await _until(lambda: gc.get_freeze_count() > 0)
        frozen = gc.get_freeze_count()
        await policy.stop()
        return frozen

    gc.callbacks.append(count)
    try:
        assert asyncio.run(run()) > 0
    finally:
        gc.callbacks.remove(count)
    assert full_collections  # the policy's own full collection, before it froze


def test_nothing_promoted_means_no_full_collection() -> None:
    full_collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == OLDEST_GENERATION:
            full_collections.append(1)

    policy = GcPolicy()
    gc.collect()  # nothing left in the middle generation's count
    gc.callbacks.append(count)
    try:
        policy.collect_promoted()
    finally:
        gc.callbacks.remove(count)
    assert not full_collections
    assert gc.get_freeze_count() == 0


def test_a_frozen_cycle_is_freed_once_handed_back() -> None:
    ref = _frozen_cycle()
    gc.collect()
    assert ref() is not None  # frozen: the collector does not look at it
    GcPolicy().hand_back_frozen()
    assert ref() is None


def test_frozen_objects_are_handed_back_on_a_timer() -> None:
    async def run() -> None:
        policy = GcPolicy(unfreeze_interval_s=0.1, check_interval_s=CHECK_S)
        policy.start()
        ref = _frozen_cycle()
        await _until(lambda: ref() is None)
        await policy.stop()

    asyncio.run(run())
