"""The broker's shutdown runs its steps one after another: a failing step must not stop the
rest, and a slow one is named in the log (the exit has a 5 s budget)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable

log = logging.getLogger("broker.server")


# A shutdown step that takes longer is logged with its time: the exit has a 5 s budget.
SLOW_SHUTDOWN_STEP_MS = 100


async def stop_quietly(name: str, step: Awaitable[object]) -> None:
    """Await one shutdown step; its failure is logged and the shutdown goes on."""
    started = time.monotonic()
    try:
        await step
    except Exception:
        log.exception("shutdown step failed (%s); continuing", name)
    took_ms = (time.monotonic() - started) * 1000
    if took_ms >= SLOW_SHUTDOWN_STEP_MS:
        log.info("shutdown: stopping the %s took %.0f ms", name, took_ms)
