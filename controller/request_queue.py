"""Admin requests waiting for the controller's event task (ElectLeaders, ControlledShutdown).

A request handler `add`s its request and awaits the future; it also enqueues the matching
controller event. Events of one kind coalesce, so the event serves every request waiting when
it starts (`run_all`); one added meanwhile has enqueued the next event already.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

from controller.errors import NOT_CONTROLLER, UNKNOWN_SERVER_ERROR
from zk.errors import ControllerMovedError

RequestT = TypeVar("RequestT")
AnswerT = TypeVar("AnswerT")

# The answer to a request that could not be served: from a Kafka error code and a message.
ErrorAnswer = Callable[[RequestT, ErrorCode, str | None], AnswerT]


class RequestQueue(Generic[RequestT, AnswerT]):
    def __init__(
        self, max_pending_requests: int, error_answer: ErrorAnswer[RequestT, AnswerT]
    ) -> None:
        self._max_pending_requests = max_pending_requests
        self._error_answer = error_answer
        self._pending: list[tuple[RequestT, asyncio.Future[AnswerT]]] = []

    def add(self, request: RequestT) -> asyncio.Future[AnswerT] | None:
        """The future of the request's answer; None when too many requests wait already (the
        caller refuses it at once rather than let requests pile up behind a stuck controller)."""
        if len(self._pending) >= self._max_pending_requests:
            return None
        future: asyncio.Future[AnswerT] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        return future

    async def run_all(self, serve: Callable[[RequestT], Awaitable[AnswerT]]) -> None:
        """Serve every waiting request in arrival order, skipping those whose handler gave up
        waiting. If one fails, it and those behind it are answered with an error and the
        failure propagates to the controller's handling (which resigns when the controller
        moved, else reconciles everything)."""
        waiting, self._pending = self._pending, []
        for index, (request, future) in enumerate(waiting):
            if future.done():
                continue
            try:
                answer = await serve(request)
            except BaseException as error:
                self._answer_errors(waiting[index:], *_error_code_and_message(error))
                raise
            if not future.done():
                future.set_result(answer)

    def fail_all(self, error_code: ErrorCode) -> None:
        """Answer every waiting request with `error_code` (NOT_CONTROLLER on resignation)."""
        waiting, self._pending = self._pending, []
        self._answer_errors(waiting, error_code, None)

    def _answer_errors(
        self,
        requests: list[tuple[RequestT, asyncio.Future[AnswerT]]],
        error_code: ErrorCode,
        message: str | None,
    ) -> None:
        for request, future in requests:
            if not future.done():
                future.set_result(self._error_answer(request, error_code, message))


def _error_code_and_message(error: BaseException) -> tuple[ErrorCode, str | None]:
    if isinstance(error, Exception) and not isinstance(error, ControllerMovedError):
        return UNKNOWN_SERVER_ERROR, f"{type(error).__name__}: {error}"
    # Moved, or cancelled because the controller is stopping: another broker will answer.
    return NOT_CONTROLLER, None
