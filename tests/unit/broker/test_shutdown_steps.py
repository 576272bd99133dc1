"""A shutdown step's failure is logged and the shutdown goes on; a slow step is named."""

from __future__ import annotations

import asyncio
import logging

import pytest

from broker.process.shutdown_steps import SLOW_SHUTDOWN_STEP_MS, stop_quietly


async def _slow() -> None:
    await asyncio.sleep(SLOW_SHUTDOWN_STEP_MS / 1000 + 0.05)


async def _failing() -> None:
    raise OSError("disk gone")


def test_a_slow_step_is_logged_with_its_name(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="broker.server"):
        asyncio.run(stop_quietly("replica fetchers", _slow()))
    assert any("stopping the replica fetchers took" in record.message for record in caplog.records)


def test_a_failing_step_is_logged_and_does_not_raise(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="broker.server"):
        asyncio.run(stop_quietly("controller", _failing()))  # returns: the shutdown goes on
    failures = [r for r in caplog.records if "shutdown step failed (controller)" in r.message]
    assert failures and failures[0].exc_info is not None
