"""LoopSlice yields to the event loop once its slice of loop time is spent, and not before."""

from __future__ import annotations

import asyncio

import pytest

from zk.loop_slice import LoopSlice, TurnGate


class _Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def monotonic(self) -> float:
        return self.now_s


def test_pause_yields_only_once_the_slice_is_spent() -> None:
    clock = _Clock()

    async def scenario() -> None:
        ran: list[bool] = []
        work = LoopSlice(slice_ms=20, clock=clock.monotonic)
        asyncio.get_running_loop().call_soon(ran.append, True)
        clock.now_s += 0.019
        await work.pause_if_spent()
        assert ran == []  # 19 ms of 20: no yield, the other callback still waits
        clock.now_s += 0.001
        await work.pause_if_spent()
        assert ran == [True]  # spent: the loop ran the other callback
        clock.now_s += 0.005
        assert not work.spent()  # a new slice started after the yield

    asyncio.run(scenario())


def test_a_slice_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LoopSlice(slice_ms=0)


def test_a_turn_gate_lets_one_task_through_per_turn() -> None:
    async def scenario() -> list[tuple[int, int]]:
        gate = TurnGate()
        turn = 0
        entered: list[tuple[int, int]] = []  # (task, turn it passed the gate in)

        def next_turn() -> None:
            nonlocal turn
            turn += 1
            if turn < 10:
                asyncio.get_running_loop().call_soon(next_turn)

        async def task(index: int) -> None:
            await gate.enter()
            entered.append((index, turn))

        asyncio.get_running_loop().call_soon(next_turn)
        await asyncio.gather(*(task(index) for index in range(3)))
        return entered

    entered = asyncio.run(scenario())
    assert [index for index, _ in entered] == [0, 1, 2]  # in order
    turns = [turn for _, turn in entered]
    assert len(set(turns)) == 3, entered  # each in a turn of its own
