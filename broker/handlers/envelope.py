"""Envelope: v0 (Kafka 3.9), advertised as Kafka 3.9 advertises it in ZooKeeper mode.

A broker forwards a client's admin request to the controller wrapped in an Envelope (KIP-590)
only in a KRaft cluster or during a migration to KRaft, neither of which a ZooKeeper-mode
cluster of ours runs. So, as a ZooKeeper-mode Kafka broker without migration does, an Envelope
closes the connection with a log line.
"""

from __future__ import annotations

from typing import Any

from broker.network.context import RequestContext
from broker.network.errors import CloseConnectionError


async def handle(context: RequestContext, request: Any) -> Any:
    raise CloseConnectionError("it sent an Envelope request, but forwarding is not enabled")
