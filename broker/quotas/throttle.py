"""Throttling a client: its response goes out at once with `throttle_time_ms`, then its
connection is muted (not read) for that long, as Kafka 2.0+ does (KIP-219)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from broker.quotas.manager import ClientQuotaManager, now_ms, sanitize, user_name

if TYPE_CHECKING:
    from broker.network.context import RequestContext

INT32_MAX = 0x7FFFFFFF


class ChannelThrottle:
    """One connection's mute: the connection waits on it before reading its next request."""

    __slots__ = ("_until_s",)

    def __init__(self) -> None:
        self._until_s = 0.0

    def mute_for(self, throttle_time_ms: int) -> None:
        until_s = asyncio.get_running_loop().time() + throttle_time_ms / 1000
        self._until_s = max(self._until_s, until_s)

    async def wait(self) -> None:
        remaining_s = self._until_s - asyncio.get_running_loop().time()
        if remaining_s > 0:
            await asyncio.sleep(remaining_s)


def record_and_throttle(
    manager: ClientQuotaManager,
    principal: str,
    client_id: str,
    value: float,
    throttle: ChannelThrottle | None,
    *,
    unrecord_if_throttled: bool = False,
) -> int:
    """Count `value` for this client; when that takes it over its quota, mute its connection
    and return the throttle time for the response (0 otherwise)."""
    if not manager.enabled:
        return 0
    user = sanitize(user_name(principal))
    time_ms = now_ms()
    throttle_time_ms = manager.record_and_get_throttle_time_ms(user, client_id, value, time_ms)
    if throttle_time_ms <= 0:
        return 0
    if unrecord_if_throttled:
        manager.unrecord(user, client_id, value, time_ms)
    manager.record_throttle(user, client_id, throttle_time_ms, time_ms)
    if throttle is not None:
        throttle.mute_for(throttle_time_ms)
    return throttle_time_ms


def consumer_fetch_throttle_time_ms(context: RequestContext, response_bytes: int) -> int:
    """A consumer's fetch against its consumer_byte_rate quota. When throttled, Kafka answers
    with no data, so the bytes are taken back."""
    return record_and_throttle(
        context.services.quotas.fetch,
        context.principal,
        context.header.client_id or "",
        response_bytes,
        context.throttle,
        unrecord_if_throttled=True,
    )


def produce_throttle_time_ms(context: RequestContext) -> int:
    """A produce request's size against its producer_byte_rate quota."""
    return record_and_throttle(
        context.services.quotas.produce,
        context.principal,
        context.header.client_id or "",
        context.request_size_bytes,
        context.throttle,
    )


def consumer_fetch_max_bytes(context: RequestContext) -> int:
    """The most a consumer's fetch may return: what its quota allows over the window, so that
    one fetch is never throttled whatever came before (Kafka's getMaxValueInQuotaWindow)."""
    manager = context.services.quotas.fetch
    if not manager.enabled:
        return INT32_MAX
    user = sanitize(user_name(context.principal))
    allowed = manager.max_value_in_quota_window(user, context.header.client_id or "", now_ms())
    return int(min(allowed, INT32_MAX))
