"""Client quotas, per broker: Kafka's ClientQuotaManager with its default quota callback.

Quotas are configs of users, client ids, (user, client id) pairs and their defaults, stored
in `/config/users/<user>`, `/config/clients/<client-id>` and
`/config/users/<user>/clients/<client-id>` (`<default>` for a default). Every broker reads all
of them at start-up and re-reads one when a `/config/changes` notification names it (Kafka's
UserConfigHandler and ClientIdConfigHandler).

A client's usage is counted in one sensor per metric tags (user, client-id): clients matched
by the same quota entity share its sensor, so a user quota caps all that user's clients
together. Which entity applies follows Kafka's order:

1. /config/users/<user>/clients/<client-id>
2. /config/users/<user>/clients/<default>
3. /config/users/<user>
4. /config/users/<default>/clients/<client-id>
5. /config/users/<default>/clients/<default>
6. /config/users/<default>
7. /config/clients/<client-id>
8. /config/clients/<default>

User names are kept sanitized (as in their znode names) and client ids too; the metric tags
carry the sanitized user and the client id as the client sent it, as Kafka's do.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.quotas.sensor import QuotaSensor, QuotaWindow, SampledAvg
from broker.security import scram
from zk.errors import ZkError
from zk.znodes import ZnodeDecodeError

if TYPE_CHECKING:
    from zk.kafka_zk import KafkaZk

log = logging.getLogger(__name__)

DEFAULT = "<default>"  # Kafka's ZooKeeperInternals.DEFAULT_STRING
USERS = "users"
CLIENTS = "clients"
# Sensors unused for an hour are dropped (Kafka's InactiveSensorExpirationTimeSeconds).
INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000


class QuotaType(enum.Enum):
    PRODUCE = "Produce"
    FETCH = "Fetch"
    REQUEST = "Request"
    CONTROLLER_MUTATION = "ControllerMutation"


# The config key of each quota type, and whether Kafka stores it as a LONG (else a DOUBLE).
QUOTA_CONFIG_KEYS: dict[QuotaType, str] = {
    QuotaType.PRODUCE: "producer_byte_rate",
    QuotaType.FETCH: "consumer_byte_rate",
    QuotaType.REQUEST: "request_percentage",
    QuotaType.CONTROLLER_MUTATION: "controller_mutation_rate",
}
LONG_QUOTA_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate"})

# Kafka's QuotaTypes bits: which kinds of entity ever had a quota (never cleared, as in Kafka).
CLIENT_ID_QUOTA_ENABLED = 1
USER_QUOTA_ENABLED = 2
USER_CLIENT_ID_QUOTA_ENABLED = 4


@functools.lru_cache(maxsize=4096)
def sanitize(name: str) -> str:
    return scram.sanitize(name)


def user_name(principal: str) -> str:
    """The name part of a principal ("User:alice" -> "alice")."""
    _, _, name = principal.partition(":")
    return name


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A quota's owner: sanitized names or DEFAULT, None where the entity has no such part."""

    user: str | None
    client_id: str | None


class QuotaOverrides:
    """The quotas of one type, by entity, and Kafka's choice of entity for a client."""

    def __init__(self) -> None:
        self.quotas: dict[QuotaEntity, float] = {}
        self.enabled = 0

    def update(self, entity: QuotaEntity, bound: float | None) -> None:
        if entity.user is not None:
            self.enabled |= (
                USER_CLIENT_ID_QUOTA_ENABLED if entity.client_id is not None else USER_QUOTA_ENABLED
            )
        elif entity.client_id is not None:
            self.enabled |= CLIENT_ID_QUOTA_ENABLED
        if bound is None:
            self.quotas.pop(entity, None)
        else:
            self.quotas[entity] = bound

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """(user, client-id) tags of the sensor that counts this client: the entity whose
        quota applies, walked in Kafka's order."""
        enabled = self.enabled
        if enabled in (0, CLIENT_ID_QUOTA_ENABLED):
            return "", client_id
        if enabled == USER_QUOTA_ENABLED:
            return user, ""
        if enabled == USER_CLIENT_ID_QUOTA_ENABLED:
            return user, client_id
        quotas = self.quotas
        client = sanitize(client_id)
        if QuotaEntity(user, client) in quotas or QuotaEntity(user, DEFAULT) in quotas:
            return user, client_id
        if QuotaEntity(user, None) in quotas:
            return user, ""
        if QuotaEntity(DEFAULT, client) in quotas or QuotaEntity(DEFAULT, DEFAULT) in quotas:
            return user, client_id
        if QuotaEntity(DEFAULT, None) in quotas:
            return user, ""
        return "", client_id

    def limit(self, user: str, client_id: str) -> float | None:
        """The bound for a sensor's tags, None when no quota applies."""
        quotas = self.quotas
        if user and client_id:
            client = sanitize(client_id)
            for entity in (
                QuotaEntity(user, client),
                QuotaEntity(user, DEFAULT),
                QuotaEntity(DEFAULT, client),
                QuotaEntity(DEFAULT, DEFAULT),
            ):
                if entity in quotas:
                    return quotas[entity]
        elif user:
            for entity in (QuotaEntity(user, None), QuotaEntity(DEFAULT, None)):
                if entity in quotas:
                    return quotas[entity]
        elif client_id:
            client = sanitize(client_id)
            for entity in (QuotaEntity(None, client), QuotaEntity(None, DEFAULT)):
                if entity in quotas:
                    return quotas[entity]
        return None


class ClientSensors:
    __slots__ = ("client_id", "last_record_ms", "quota", "throttle_time", "user")

    def __init__(self, user: str, client_id: str, window: QuotaWindow, now_ms: int) -> None:
        self.user = user
        self.client_id = client_id
        self.quota = QuotaSensor(window)
        self.throttle_time = SampledAvg()
        self.last_record_ms = now_ms


class ClientQuotaManager:
    """One quota type's sensors and quotas (Kafka's ClientQuotaManager)."""

    def __init__(self, quota_type: QuotaType, window: QuotaWindow) -> None:
        self.quota_type = quota_type
        self.window = window
        self.overrides = QuotaOverrides()
        self._sensors: dict[tuple[str, str], ClientSensors] = {}

    @property
    def enabled(self) -> bool:
        return self.overrides.enabled != 0

    def sensors(self, user: str, client_id: str, now_ms: int) -> ClientSensors:
        tags = self.overrides.metric_tags(user, client_id)
        sensors = self._sensors.get(tags)
        if sensors is None:
            self._expire_inactive(now_ms)
            sensors = self._sensors[tags] = ClientSensors(*tags, self.window, now_ms)
        sensors.last_record_ms = now_ms
        return sensors

    def _expire_inactive(self, now_ms: int) -> None:
        stale = [
            tags
            for tags, sensors in self._sensors.items()
            if now_ms - sensors.last_record_ms > INACTIVE_SENSOR_EXPIRATION_MS
        ]
        for tags in stale:
            del self._sensors[tags]

    def bound(self, sensors: ClientSensors) -> float:
        limit = self.overrides.limit(sensors.user, sensors.client_id)
        return math.inf if limit is None else limit

    def record_and_get_throttle_time_ms(
        self, user: str, client_id: str, value: float, now_ms: int
    ) -> int:
        """Count `value` for this client (only once some quota of this type exists, as
        Kafka); the throttle time when that takes it over its quota, else 0."""
        if not self.enabled:
            return 0
        sensors = self.sensors(user, client_id, now_ms)
        return sensors.quota.record_and_get_throttle_time_ms(value, now_ms, self.bound(sensors))

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch answers with no data)."""
        if self.enabled:
            self.sensors(user, client_id, now_ms).quota.rate.record(-value, now_ms)

    def record_throttle(
        self, user: str, client_id: str, throttle_time_ms: int, now_ms: int
    ) -> None:
        self.sensors(user, client_id, now_ms).throttle_time.record(throttle_time_ms, now_ms)

    def max_value_in_quota_window(self, user: str, client_id: str, now_ms: int) -> float:
        """The most one request may take without being throttled whatever came before
        (Kafka's getMaxValueInQuotaWindow: a fetch's max bytes is capped to it)."""
        if not self.enabled:
            return math.inf
        sensors = self.sensors(user, client_id, now_ms)
        window_s = self.window.window_ms / 1000
        return self.bound(sensors) * (self.window.samples - 1) * window_s

    def update_quota(self, entity: QuotaEntity, bound: float | None) -> None:
        if bound is None:
            log.info("removing %s quota for %s", self.quota_type.value, entity)
        else:
            log.info("changing %s quota for %s to %s", self.quota_type.value, entity, bound)
        self.overrides.update(entity, bound)

    def snapshot(self, now_ms: int) -> Iterator[tuple[str, str, float, float]]:
        """(user, client-id, byte-rate, throttle-time) of every sensor, for the metrics."""
        for (user, client_id), sensors in list(self._sensors.items()):
            yield (
                user,
                client_id,
                sensors.quota.rate.measure(now_ms),
                sensors.throttle_time.measure(now_ms),
            )


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ClientQuotas:
    """The broker's quota managers (Kafka's QuotaManagers) and the config handler that feeds
    them from ZooKeeper (Kafka's QuotaConfigHandler)."""

    def __init__(
        self, kafka_zk: KafkaZk, window: QuotaWindow, controller_window: QuotaWindow
    ) -> None:
        self._kafka_zk = kafka_zk
        self._refreshing: set[asyncio.Task[None]] = set()
        self.managers = {
            QuotaType.PRODUCE: ClientQuotaManager(QuotaType.PRODUCE, window),
            QuotaType.FETCH: ClientQuotaManager(QuotaType.FETCH, window),
            QuotaType.REQUEST: ClientQuotaManager(QuotaType.REQUEST, window),
            QuotaType.CONTROLLER_MUTATION: ClientQuotaManager(
                QuotaType.CONTROLLER_MUTATION, controller_window
            ),
        }
        self.produce = self.managers[QuotaType.PRODUCE]
        self.fetch = self.managers[QuotaType.FETCH]

    async def load_all(self) -> None:
        """Every user, (user, client id) and client id config, at start-up."""
        users = await self._kafka_zk.get_entity_names(USERS)
        for user in users:
            await self._refresh(USERS, user)
            for client in await self._kafka_zk.get_entity_names(f"{USERS}/{user}/{CLIENTS}"):
                await self._refresh(USERS, f"{user}/{CLIENTS}/{client}")
        for client in await self._kafka_zk.get_entity_names(CLIENTS):
            await self._refresh(CLIENTS, client)

    def on_user_changed(self, entity_path: str) -> None:
        """A /config/changes notification named users/<user>[/clients/<client-id>]."""
        self._schedule(USERS, entity_path)

    def on_client_changed(self, entity_path: str) -> None:
        self._schedule(CLIENTS, entity_path)

    def _schedule(self, entity_type: str, name: str) -> None:
        task = asyncio.get_running_loop().create_task(
            self._refresh_logged(entity_type, name), name=f"quota-{entity_type}-{name}"
        )
        # Held until done: the loop keeps only a weak reference to a task.
        self._refreshing.add(task)
        task.add_done_callback(self._refreshing.discard)

    async def _refresh_logged(self, entity_type: str, name: str) -> None:
        try:
            await self._refresh(entity_type, name)
        except ZkError:
            log.warning("reading the quotas of %s/%s failed", entity_type, name, exc_info=True)

    async def _refresh(self, entity_type: str, name: str) -> None:
        entity = entity_of(entity_type, name)
        if entity is None:
            log.error("ignoring quota config of an invalid entity path %s/%s", entity_type, name)
            return
        try:
            configs = await self._kafka_zk.get_entity_config(entity_type, name)
        except ZnodeDecodeError as error:
            log.error("ignoring malformed config of %s/%s: %s", entity_type, name, error)
            configs = {}
        self.update(entity, configs)

    def update(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        for quota_type, manager in self.managers.items():
            manager.update_quota(entity, quota_bound(configs, QUOTA_CONFIG_KEYS[quota_type]))


def entity_of(entity_type: str, name: str) -> QuotaEntity | None:
    """The entity a config znode under /config/<entity_type> names (`<user>`,
    `<user>/clients/<client-id>` or `<client-id>`, sanitized)."""
    parts = name.split("/")
    if entity_type == CLIENTS and len(parts) == 1:
        return QuotaEntity(None, parts[0])
    if entity_type == USERS and len(parts) == 1:
        return QuotaEntity(parts[0], None)
    if entity_type == USERS and len(parts) == 3 and parts[1] == CLIENTS:
        return QuotaEntity(parts[0], parts[2])
    return None


def quota_bound(configs: Mapping[str, str], key: str) -> float | None:
    text = configs.get(key)
    if text is None:
        return None
    try:
        return float(int(text)) if key in LONG_QUOTA_KEYS else float(text)
    except ValueError:
        log.error("ignoring malformed quota %s=%s", key, text)
        return None
