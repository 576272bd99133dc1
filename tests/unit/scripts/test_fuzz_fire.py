"""scripts/fuzz tells a connection the broker refused from one that only took too long (a
loaded machine), and counts them apart."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools.fuzz_fire import CONNECT_TIMED_OUT, REFUSED, Streams, fire_one


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (TimeoutError(), CONNECT_TIMED_OUT),
        (ConnectionRefusedError(), REFUSED),
        (ConnectionResetError(), REFUSED),
        (asyncio.IncompleteReadError(b"", 4), REFUSED),
        (ValueError("undecodable SASL answer"), REFUSED),
    ],
)
def test_a_failed_connection_is_refused_or_timed_out(error: Exception, outcome: str) -> None:
    async def failing_open(address: str) -> Streams:
        raise error

    assert asyncio.run(fire_one("127.0.0.1:1", b"", 1.0, failing_open)) == outcome
