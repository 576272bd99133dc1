"""The broker's collector policy: large young generation, survivors of a full collection
frozen, and handed back to the collector on a timer."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterator

import pytest

from broker.gc_policy import YOUNG_GENERATION_THRESHOLD, GcPolicy

CHECK_S = 0.01


async def _until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(CHECK_S)


@pytest.fixture(autouse=True)
def _leave_the_collector_as_found() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_the_young_generation_is_large_while_running_and_restored_after() -> None:
    before = gc.get_threshold()

    async def run() -> tuple[int, int, int]:
        policy = GcPolicy(check_interval_s=CHECK_S)
        policy.start()
        during = gc.get_threshold()
        await policy.stop()
        return during

    assert asyncio.run(run())[0] == YOUNG_GENERATION_THRESHOLD
    assert gc.get_threshold() == before


def test_what_survives_a_full_collection_is_frozen() -> None:
    async def run() -> int:
        policy = GcPolicy(check_interval_s=CHECK_S)
        policy.start()
        assert gc.get_freeze_count() == 0
        gc.collect()
        await _until(lambda: gc.get_freeze_count() > 0)
        frozen = gc.get_freeze_count()
        await policy.stop()
        return frozen

    assert asyncio.run(run()) > 0
    assert gc.get_freeze_count() == 0  # stop() hands everything back


def test_young_collections_freeze_nothing() -> None:
    async def run() -> int:
        policy = GcPolicy(check_interval_s=CHECK_S)
        policy.start()
        gc.collect(0)
        gc.collect(1)
        await asyncio.sleep(CHECK_S * 10)
        frozen = gc.get_freeze_count()
        await policy.stop()
        return frozen

    assert asyncio.run(run()) == 0


def test_frozen_objects_go_back_to_the_collector_on_a_timer() -> None:
    async def run() -> None:
        policy = GcPolicy(unfreeze_interval_s=0.2, check_interval_s=CHECK_S)
        policy.start()
        gc.collect()
        await _until(lambda: gc.get_freeze_count() > 0)
        await _until(lambda: gc.get_freeze_count() == 0)
        await policy.stop()

    asyncio.run(run())
