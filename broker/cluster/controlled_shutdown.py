"""Controlled shutdown, the broker's side (Kafka's KafkaServer.controlledShutdown).

On SIGTERM, before anything stops, a broker with `controlled.shutdown.enable` asks the
controller (found in its metadata view, as Kafka reads its metadata cache) to move leadership
off it, with ControlledShutdown v3 over the inter-broker listener. It keeps serving meanwhile,
so clients learn the new leaders from it and from the others. Up to
`controlled.shutdown.max.retries` attempts, `controlled.shutdown.retry.backoff.ms` apart, each
bounded by `controller.socket.timeout.ms`; then the normal shutdown goes on whatever happened.

Two shortcuts Kafka does not take (DEVIATIONS.md), both only end a wait early: the back-off
ends as soon as a new controller appears, and when no other replica of the partitions still
led here is registered any more (the rest of the cluster is stopping too), retrying cannot
help, so the broker stops at once instead of sleeping through its retries.
"""

from __future__ import annotations

import functools
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.network.broker_client import BrokerClient, BrokerClientError
from broker.network.sasl import SaslClientConfig
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import request_class
from zk.cluster_watch import ClusterView

log = logging.getLogger(__name__)

# Our brokers all speak v3 (Kafka pins the version with inter.broker.protocol.version).
CONTROLLED_SHUTDOWN_VERSION = 3
# Partitions named in one log line.
MAX_LOGGED_PARTITIONS = 20

TopicPartition = tuple[str, int]
AddressOf = Callable[[int], tuple[str, int] | None]
# Wait until the condition holds after a metadata change, or the timeout (seconds) passes.
WaitForMetadata = Callable[[Callable[[], bool], float], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class ControlledShutdownConfig:
    broker_id: int
    max_retries: int  # controlled.shutdown.max.retries
    retry_backoff_ms: int  # controlled.shutdown.retry.backoff.ms
    socket_timeout_ms: int  # controller.socket.timeout.ms
    ssl_context: ssl.SSLContext | None = None  # the controller's inter-broker listener is SSL
    sasl: SaslClientConfig | None = None  # ... or SASL: this broker's mechanism and user


@dataclass(frozen=True, slots=True)
class _Outcome:
    controller_id: int | None
    error: str | None = None  # why the attempt failed; None when the controller answered NONE
    remaining: list[TopicPartition] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.error is None and not self.remaining


@dataclass(slots=True)
class ControlledShutdown:
    config: ControlledShutdownConfig
    view: Callable[[], ClusterView]
    address_of: AddressOf
    broker_epoch: Callable[[], int]
    wait_for_metadata: WaitForMetadata

    async def run(self) -> bool:
        """True once the controller has moved every partition it could off this broker."""
        log.info("Starting controlled shutdown of broker %d", self.config.broker_id)
        started_s = time.monotonic()
        for attempt in range(1, self.config.max_retries + 1):
            outcome = await self._attempt()
            if outcome.succeeded:
                elapsed_ms = (time.monotonic() - started_s) * 1000
                log.info("Controlled shutdown succeeded after %.0f ms", elapsed_ms)
                return True
            self._log_failure(attempt, outcome)
            if outcome.remaining and not self._others_could_lead(outcome.remaining):
                log.info("No other replica of those partitions is registered")
                break
            if attempt == self.config.max_retries:
                break
            await self.wait_for_metadata(
                functools.partial(self._worth_retrying_now, outcome),
                self.config.retry_backoff_ms / 1000,
            )
            if outcome.remaining and not self._others_could_lead(outcome.remaining):
                log.info("No other replica of those partitions is registered any more")
                break
            log.warning("Retrying controlled shutdown after the previous attempt failed...")
        log.warning(
            "Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed"
        )
        return False

    async def _attempt(self) -> _Outcome:
        controller_id = self.view().controller_id
        if controller_id is None:
            return _Outcome(None, "no controller in the metadata view")
        address = self.address_of(controller_id)
        if address is None:
            return _Outcome(controller_id, f"controller {controller_id} is not registered")
        timeout_ms = self.config.socket_timeout_ms
        request = adapter.build(
            request_class(ApiKey.CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION),
            {"broker_id": self.config.broker_id, "broker_epoch": self.broker_epoch()},
        )
        client = BrokerClient(
            address[0],
            address[1],
            client_id=f"broker-{self.config.broker_id}-controlled-shutdown",
            connect_timeout_ms=timeout_ms,
            request_timeout_ms=timeout_ms,
            ssl_context=self.config.ssl_context,
            sasl=self.config.sasl,
        )
        try:
            response = await client.send(request)
        except BrokerClientError as error:
            return _Outcome(controller_id, f"request to controller {controller_id}: {error}")
        finally:
            await client.close()
        remaining = [(p.topic_name, int(p.partition_index)) for p in response.remaining_partitions]
        if response.error_code != ErrorCode.none:
            return _Outcome(controller_id, response.error_code.name, remaining)
        return _Outcome(controller_id, None, remaining)

    def _log_failure(self, attempt: int, outcome: _Outcome) -> None:
        if outcome.error is not None:
            log.info("Controlled shutdown attempt %d failed: %s", attempt, outcome.error)
            return
        log.info(
            "Remaining partitions to move: %s%s",
            ",".join(f"{t}-{p}" for t, p in outcome.remaining[:MAX_LOGGED_PARTITIONS]),
            " ..." if len(outcome.remaining) > MAX_LOGGED_PARTITIONS else "",
        )

    def _others_could_lead(self, partitions: list[TopicPartition]) -> bool:
        """Some partition has another replica that is registered (it could take over)."""
        view = self.view()
        for topic, partition in partitions:
            assignment = view.topics.get(topic)
            replicas = [] if assignment is None else assignment.partitions.get(partition, [])
            if any(r != self.config.broker_id and r in view.brokers for r in replicas):
                return True
        return False

    def _worth_retrying_now(self, outcome: _Outcome) -> bool:
        """A new controller took over, or nobody is left to take the partitions."""
        controller_id = self.view().controller_id
        if controller_id is not None and controller_id != outcome.controller_id:
            return True
        return bool(outcome.remaining) and not self._others_could_lead(outcome.remaining)
