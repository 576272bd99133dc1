"""The queue of admin requests waiting for the controller's event task."""

from __future__ import annotations

import asyncio

import pytest

from controller.errors import NOT_CONTROLLER, UNKNOWN_SERVER_ERROR
from controller.request_queue import RequestQueue
from zk.errors import ControllerMovedError

Answer = tuple[int, str | None, str]


def _error_answer(request: str, error_code: int, message: str | None) -> Answer:
    return error_code, message, request


def _queue(max_pending_requests: int = 10) -> RequestQueue[str, Answer]:
    return RequestQueue(max_pending_requests, _error_answer)


def test_requests_are_served_in_arrival_order() -> None:
    async def scenario() -> None:
        queue = _queue()
        futures = [queue.add(name) for name in ("a", "b", "c")]
        served: list[str] = []

        async def serve(request: str) -> Answer:
            served.append(request)
            return 0, None, request

        await queue.run_all(serve)
        assert served == ["a", "b", "c"]
        assert [f.result() for f in futures if f is not None] == [
            (0, None, "a"),
            (0, None, "b"),
            (0, None, "c"),
        ]

    asyncio.run(scenario())


def test_a_full_queue_refuses_at_once() -> None:
    async def scenario() -> None:
        queue = _queue(max_pending_requests=1)
        assert queue.add("a") is not None
        assert queue.add("b") is None

    asyncio.run(scenario())


def test_a_request_whose_handler_gave_up_is_not_served() -> None:
    async def scenario() -> None:
        queue = _queue()
        abandoned, kept = queue.add("abandoned"), queue.add("kept")
        assert abandoned is not None and kept is not None
        abandoned.cancel()
        served: list[str] = []

        async def serve(request: str) -> Answer:
            served.append(request)
            return 0, None, request

        await queue.run_all(serve)
        assert served == ["kept"]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ControllerMovedError("moved"), (NOT_CONTROLLER, None)),
        (RuntimeError("broken"), (UNKNOWN_SERVER_ERROR, "RuntimeError: broken")),
    ],
)
def test_a_failure_answers_the_request_and_those_behind_it_then_propagates(
    error: Exception, expected: tuple[int, str | None]
) -> None:
    async def scenario() -> None:
        queue = _queue()
        futures = [queue.add(name) for name in ("ok", "fails", "behind")]

        async def serve(request: str) -> Answer:
            if request == "fails":
                raise error
            return 0, None, request

        with pytest.raises(type(error)):
            await queue.run_all(serve)
        answers = [f.result() for f in futures if f is not None]
        assert answers == [(0, None, "ok"), (*expected, "fails"), (*expected, "behind")]

    asyncio.run(scenario())


def test_fail_all_answers_every_waiting_request() -> None:
    async def scenario() -> None:
        queue = _queue()
        futures = [queue.add(name) for name in ("a", "b")]
        queue.fail_all(NOT_CONTROLLER)
        assert [f.result() for f in futures if f is not None] == [
            (NOT_CONTROLLER, None, "a"),
            (NOT_CONTROLLER, None, "b"),
        ]

        async def serve(request: str) -> Answer:
            raise AssertionError(f"{request} was answered already")

        await queue.run_all(serve)  # nothing left to serve

    asyncio.run(scenario())
