"""DescribeClientQuotas and AlterClientQuotas over ZooKeeper, as Kafka's ZkAdminManager does
them: the same filters, checks, error messages and znode writes.

Entities are maps of entity type (`user`, `client-id`, `ip`) to a name, None naming the
default (`<default>` in ZooKeeper). Names are sanitized into znode names as Kafka's Sanitizer
does. An alteration rewrites the entity's whole config znode (SCRAM credentials of a user
included) and then notifies every broker through `/config/changes`.
"""

from __future__ import annotations

import asyncio
import enum
import ipaddress
import math
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kio.schema.errors import ErrorCode

from broker.quotas.manager import CLIENTS, DEFAULT, LONG_QUOTA_KEYS, QUOTA_CONFIG_KEYS, USERS
from broker.security import scram
from zk.kafka_zk import KafkaZk

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
IPS = "ips"
CONNECTION_CREATION_RATE = "connection_creation_rate"
QUOTA_KEYS = frozenset(QUOTA_CONFIG_KEYS.values())
# DescribeClientQuotas match types.
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2

# An entity: entity type -> name (None: the default).
Entity = dict[str, str | None]


class QuotaRequestError(Exception):
    def __init__(self, error_code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def _invalid(message: str) -> QuotaRequestError:
    return QuotaRequestError(ErrorCode.invalid_request, message)


class _Any(enum.Enum):
    """A filter component matching any specified (non-default) name."""

    SPECIFIED = 0


ANY = _Any.SPECIFIED


@dataclass(frozen=True, slots=True)
class FilterComponent:
    entity_type: str
    match: str | _Any | None  # a name, None for the default, ANY for any specified name


def component_of(entity_type: str, match_type: int, match: str | None) -> FilterComponent:
    if match_type == MATCH_EXACT:
        if match is None:
            raise QuotaRequestError(ErrorCode.unknown_server_error, None)
        return FilterComponent(entity_type, match)
    if match_type == MATCH_DEFAULT:
        return FilterComponent(entity_type, None)
    if match_type == MATCH_SPECIFIED:
        return FilterComponent(entity_type, ANY)
    raise QuotaRequestError(ErrorCode.unknown_server_error, None)


def sanitize_entity_name(name: str | None) -> str:
    return DEFAULT if name is None else scram.sanitize(name)


def desanitize_entity_name(name: str) -> str | None:
    return None if name == DEFAULT else scram.desanitize(name)


def quota_values(configs: Mapping[str, str], keys: frozenset[str]) -> dict[str, float]:
    values: dict[str, float] = {}
    for key, text in configs.items():
        if key not in keys:
            continue
        try:
            values[key] = float(text)
        except ValueError:
            # Kafka's IllegalStateException: the whole request fails, with no message.
            raise QuotaRequestError(ErrorCode.unknown_server_error, None) from None
    return values


class ClientQuotaAdmin:
    def __init__(self, kafka_zk: KafkaZk) -> None:
        self._kafka_zk = kafka_zk

    # -- DescribeClientQuotas -----------------------------------------------------------------

    async def describe(
        self, components: Sequence[FilterComponent], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        user: FilterComponent | None = None
        client: FilterComponent | None = None
        ip: FilterComponent | None = None
        for component in components:
            if component.entity_type == USER:
                if user is not None:
                    raise _invalid("Duplicate user filter component entity type")
                user = component
            elif component.entity_type == CLIENT_ID:
                if client is not None:
                    raise _invalid("Duplicate client filter component entity type")
                client = component
            elif component.entity_type == IP:
                if ip is not None:
                    raise _invalid("Duplicate ip filter component entity type")
                ip = component
            elif component.entity_type == "":
                raise _invalid("Unexpected empty filter component entity type")
            else:
                raise QuotaRequestError(
                    ErrorCode.unsupported_version,
                    f"Custom entity type '{component.entity_type}' not supported",
                )
        if (user is not None or client is not None) and ip is not None:
            raise _invalid(
                "Invalid entity filter component combination, IP filter component should not"
                " be used with user or clientId filter component."
            )
        found: list[tuple[Entity, dict[str, float]]] = []
        if ip is None:
            found += await self._describe_user_client(user, client, strict)
        if user is None and client is None:
            found += await self._describe_ips(ip, strict)
        return found

    async def _describe_user_client(
        self,
        user_filter: FilterComponent | None,
        client_filter: FilterComponent | None,
        strict: bool,
    ) -> list[tuple[Entity, dict[str, float]]]:
        exact_user = user_filter is not None and user_filter.match is not ANY
        exact_client = client_filter is not None and client_filter.match is not ANY
        exclude_user = strict and user_filter is None
        exclude_client = strict and client_filter is None
        user = None if user_filter is None or user_filter.match is ANY else user_filter.match
        client = (
            None if client_filter is None or client_filter.match is ANY else client_filter.match
        )
        zk = self._kafka_zk
        # (user part, client part, configs); a part is absent (ABSENT) or a name (None: default)
        entries: list[tuple[str | _Absent | None, str | _Absent | None, dict[str, str]]] = []
        if exact_user and exclude_client:
            configs = await zk.get_entity_config(USERS, sanitize_entity_name(user))
            entries.append((user, ABSENT, configs))
        elif not exclude_user and not exact_client:
            for name in await zk.get_entity_names(USERS):
                configs = await zk.get_entity_config(USERS, name)
                entries.append((desanitize_entity_name(name), ABSENT, configs))
        if exclude_user and exact_client:
            configs = await zk.get_entity_config(CLIENTS, sanitize_entity_name(client))
            entries.append((ABSENT, client, configs))
        elif not exact_user and not exclude_client:
            for name in await zk.get_entity_names(CLIENTS):
                configs = await zk.get_entity_config(CLIENTS, name)
                entries.append((ABSENT, desanitize_entity_name(name), configs))
        if exact_user and exact_client:
            path = f"{sanitize_entity_name(user)}/{CLIENTS}/{sanitize_entity_name(client)}"
            entries.append((user, client, await zk.get_entity_config(USERS, path)))
        elif not exclude_user and not exclude_client:
            for user_name in await zk.get_entity_names(USERS):
                for client_name in await zk.get_entity_names(f"{USERS}/{user_name}/{CLIENTS}"):
                    path = f"{user_name}/{CLIENTS}/{client_name}"
                    entries.append(
                        (
                            desanitize_entity_name(user_name),
                            desanitize_entity_name(client_name),
                            await zk.get_entity_config(USERS, path),
                        )
                    )
        found: dict[tuple[str | _Absent | None, str | _Absent | None], dict[str, float]] = {}
        for user_part, client_part, configs in entries:
            values = quota_values(configs, QUOTA_KEYS)
            if (
                values
                and _matches(user_filter, user_part, strict)
                and _matches(client_filter, client_part, strict)
            ):
                found[(user_part, client_part)] = values
        result: list[tuple[Entity, dict[str, float]]] = []
        for (user_part, client_part), values in found.items():
            entity: Entity = {}
            if user_part is not ABSENT:
                entity[USER] = user_part
            if client_part is not ABSENT:
                entity[CLIENT_ID] = client_part
            result.append((entity, values))
        return result

    async def _describe_ips(
        self, ip_filter: FilterComponent | None, strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        exact = ip_filter is not None and ip_filter.match is not ANY
        every = (ip_filter is not None and ip_filter.match is ANY) or (
            ip_filter is None and not strict
        )
        zk = self._kafka_zk
        entries: list[tuple[str | None, dict[str, str]]] = []
        if exact and ip_filter is not None and not isinstance(ip_filter.match, _Any):
            name = ip_filter.match
            entries.append((name, await zk.get_entity_config(IPS, sanitize_entity_name(name))))
        elif every:
            for name in await zk.get_entity_names(IPS):
                entries.append(
                    (desanitize_entity_name(name), await zk.get_entity_config(IPS, name))
                )
        result: list[tuple[Entity, dict[str, float]]] = []
        for name, configs in entries:
            values = quota_values(configs, frozenset({CONNECTION_CREATION_RATE}))
            if values:
                result.append(({IP: name}, values))
        return result

    # -- AlterClientQuotas --------------------------------------------------------------------

    async def alter(
        self, entity: Entity, ops: Sequence[tuple[str, float | None]], validate_only: bool
    ) -> None:
        """Apply `ops` (key, value; None removes) to one entity, or raise QuotaRequestError."""
        entity_type, path, keys = await _entity_znode(entity)
        configs = await self._kafka_zk.get_entity_config(entity_type, path)
        for key, value in ops:
            if value is None:
                configs.pop(key, None)
                continue
            kind = keys.get(key)
            if kind is None:
                raise _invalid(f"Invalid configuration key {key}")
            if kind == "DOUBLE":
                configs[key] = java_double_text(value)
            elif kind in ("LONG", "INT"):
                epsilon = 1e-6
                whole = _java_long(value + epsilon)
                if abs(whole - value) > epsilon:
                    raise _invalid(f"Configuration {key} must be a {kind} value")
                configs[key] = str(whole)
            else:
                # Kafka's IllegalStateException for a key it cannot set this way (SCRAM).
                raise QuotaRequestError(ErrorCode.unknown_server_error, None)
        if not validate_only:
            await self._kafka_zk.change_entity_config(entity_type, path, configs)


class _Absent(enum.Enum):
    ABSENT = 0


ABSENT = _Absent.ABSENT


def _matches(component: FilterComponent | None, name: str | _Absent | None, strict: bool) -> bool:
    if component is None:
        return name is ABSENT or not strict
    if component.match is ANY:
        return name is not ABSENT
    return name is not ABSENT and name == component.match


JAVA_LONG_MAX = 2**63 - 1
JAVA_LONG_MIN = -(2**63)

# Config key -> Kafka's ConfigDef type, for each kind of entity.
CLIENT_KEYS = {key: ("LONG" if key in LONG_QUOTA_KEYS else "DOUBLE") for key in QUOTA_KEYS}
USER_KEYS = {**CLIENT_KEYS, **{mechanism: "STRING" for mechanism in scram.SCRAM_MECHANISMS}}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}


async def _entity_znode(entity: Entity) -> tuple[str, str, dict[str, str]]:
    """(entity type, sanitized znode name under /config/<type>, its keys and their types)."""
    if not entity:
        raise _invalid("Invalid empty client quota entity")
    user: str | None = None
    client: str | None = None
    ip: str | None = None
    for entity_type, name in entity.items():
        sanitized = sanitize_entity_name(name)
        if entity_type == USER:
            user = sanitized
        elif entity_type == CLIENT_ID:
            client = sanitized
        elif entity_type == IP:
            ip = sanitized
        else:
            raise _invalid(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise _invalid(f"Empty {entity_type} not supported")
    if ip is None and user is not None and client is not None:
        return USERS, f"{user}/{CLIENTS}/{client}", CLIENT_KEYS
    if ip is None and user is not None:
        return USERS, user, USER_KEYS
    if ip is None and client is not None:
        return CLIENTS, client, CLIENT_KEYS
    if ip is not None and user is None and client is None:
        if not await _is_valid_ip_entity(ip):
            raise _invalid(f"{ip} is not a valid IP or resolvable host.")
        return IPS, ip, IP_KEYS
    if ip is not None:
        raise _invalid(
            "Invalid quota entity combination, IP entity should not be used with user/client"
            " ID entity."
        )
    raise _invalid("Invalid client quota entity")


async def _is_valid_ip_entity(ip: str) -> bool:
    """Kafka's Ip.isValidIpEntity: the default, an address, or a host name that resolves."""
    if ip == DEFAULT:
        return True
    try:
        ipaddress.ip_address(ip)
        return True
    except ValueError:
        pass
    try:
        await asyncio.get_running_loop().getaddrinfo(ip, None)
    except (OSError, UnicodeError, socket.gaierror):
        return False
    return True


def _java_long(value: float) -> int:
    """Scala's Double.toLong: NaN is 0, and values beyond a long's range are clamped to it
    (so a fuzzed NaN, infinity or 1e300 is judged as Kafka judges it, never an exception)."""
    if math.isnan(value):
        return 0
    if value >= JAVA_LONG_MAX:
        return JAVA_LONG_MAX
    if value <= JAVA_LONG_MIN:
        return JAVA_LONG_MIN
    return int(value)


def java_double_text(value: float) -> str:
    """Java's Double.toString: plain between 1e-3 and 1e7, else computerized scientific
    notation ("1.0E7"), always with a fraction digit."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    magnitude = abs(value)
    if value == 0 or 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if "." in text or "e" in text else f"{text}.0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    scientific_exponent = len(digits) - 1 + int(exponent)
    fraction = "".join(str(d) for d in digits[1:]) or "0"
    return f"{'-' if sign else ''}{digits[0]}.{fraction}E{scientific_exponent}"
