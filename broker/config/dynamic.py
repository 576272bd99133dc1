"""Dynamic broker configs (Kafka's DynamicBrokerConfig in ZooKeeper mode).

AlterConfigs / IncrementalAlterConfigs for a BROKER resource write `/config/brokers/<id>` (one
broker; the request must reach that broker, as in Kafka) or `/config/brokers/<default>` (the
resource name "": every broker), `{"version":1,"config":{...}}`, then a
`/config/changes/config_change_` notification naming `brokers/<id>` or `brokers/<default>`.
Every broker re-reads both znodes when notified (and at start-up, before opening its logs)
and applies them at once. Precedence: per-broker dynamic > dynamic default > static
(server.properties / --override) > Kafka's default.

Dynamic here (`DYNAMIC_CONFIGS`): the broker-level defaults of topic configs, which Kafka's
DynamicLogConfig updates (including the inert ones) and min.insync.replicas; per broker only,
advertised.listeners and the listeners' SSL and SASL settings (Kafka's DynamicListenerConfig),
with the key and trust material only per listener (`listener.name.<listener>.ssl.keystore.
location`...), which that listener then reloads. The rest, including keys Kafka could update
(thread counts, log cleaner and connection settings), answer INVALID_REQUEST "Cannot update
these configs dynamically". Password-typed keys are refused as Kafka refuses them without
`password.encoder.secret`, which this broker does not have (DEVIATIONS.md, "Security").
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.config.kafka_config import (
    CONFIG_DEFS,
    TLS_PROTOCOLS,
    ConfigError,
    KafkaConfig,
    build_config,
)
from broker.network import tls
from controller.topic_config_defs import DYNAMIC_SERVER_DEFAULTS
from zk.client import ZkClient
from zk.errors import NodeExistsError, NoNodeError, ZkError
from zk.znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ZnodeDecodeError,
)

log = logging.getLogger(__name__)

BROKERS_ENTITY_TYPE = "brokers"
DEFAULT_ENTITY = "<default>"  # ZooKeeper's name for the cluster-wide default ("" in requests)

# The SSL and SASL keys of Kafka 3.9's DynamicListenerConfig.ReconfigurableConfigs (not
# principal.builder.class: no Java classes here). Kafka applies them to listeners added later
# and leaves existing ones as they are; listeners are not added at runtime here, so storing
# them is all there is to do. The Kerberos and login-refresh keys have no effect anyway.
# Kafka's list also holds the key and trust store keys: those are tls.RECONFIGURABLE_CONFIGS,
# which PER_BROKER_CONFIGS adds.
LISTENER_SECURITY_CONFIGS = frozenset(
    {
        "ssl.protocol",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.enabled.protocols",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.endpoint.identification.algorithm",
        "ssl.secure.random.implementation",
        "ssl.client.auth",
        "ssl.engine.factory.class",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.jaas.config",
        "sasl.enabled.mechanisms",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
    }
)
# Dynamic only per broker (Kafka's DynamicBrokerConfig.PerBrokerConfigs): a cluster-wide
# default of these, or of any listener-prefixed key, is refused. A new advertised.listeners is
# written to /brokers/ids/<id>. The key and trust material (tls.RECONFIGURABLE_CONFIGS, Kafka's
# SslConfigs.RECONFIGURABLE_CONFIGS) is dynamic only with a listener prefix; the listener then
# accepts new connections with it.
PER_BROKER_CONFIGS = (
    frozenset({"advertised.listeners"}) | LISTENER_SECURITY_CONFIGS | tls.RECONFIGURABLE_CONFIGS
)
# Besides those, the broker-level defaults of topic configs (the topic config table says
# which): each log takes them unless its topic overrides them (applied by rebuilding the
# default LogConfig and every log's config), or they are read per request
# (min.insync.replicas), or they are inert here (compression.type, log.flush.*,
# log.preallocate, log.roll.jitter.ms, log.message.downconversion.enable) and storing them is
# all there is to apply, as Kafka's DynamicLogConfig updates them too.
DYNAMIC_CONFIGS = DYNAMIC_SERVER_DEFAULTS | PER_BROKER_CONFIGS
if DYNAMIC_CONFIGS - set(CONFIG_DEFS):
    raise ImportError(f"not broker configs: {sorted(DYNAMIC_CONFIGS - set(CONFIG_DEFS))}")
# Kafka's DynamicPasswordConfigs: stored encrypted with password.encoder.secret.
_PASSWORD_CONFIGS = frozenset(
    name for name in DYNAMIC_CONFIGS if CONFIG_DEFS[name].config_type == "PASSWORD"
)
_LISTENER_PREFIX = re.compile(r"^listener\.name\.[^.]*\..+$")
RELOAD_RETRY_S = 1.0  # after ZooKeeper failed a reload; nothing else would trigger another


@dataclass(frozen=True, slots=True)
class DynamicOverrides:
    """The two dynamic layers over the static config."""

    default: Mapping[str, str] = field(default_factory=dict)
    broker: Mapping[str, str] = field(default_factory=dict)


def entity_name(resource_name: str) -> str:
    return resource_name or DEFAULT_ENTITY


def effective_config(static: KafkaConfig, overrides: DynamicOverrides) -> KafkaConfig:
    """The config the broker runs with; `explicit_keys` and `originals` stay the static ones
    (DescribeConfigs tells the layers apart). Raises ConfigError for an invalid value."""
    merged = {**static.originals, **overrides.default, **overrides.broker}
    built = build_config(merged)
    return dataclasses.replace(
        built,
        ignored_keys=static.ignored_keys,
        explicit_keys=static.explicit_keys,
        originals=static.originals,
    )


def check_update(
    static: KafkaConfig,
    overrides: DynamicOverrides,
    per_broker: bool,
    before: DynamicOverrides | None = None,
) -> None:
    """Kafka's DynamicBrokerConfig.validate: only dynamic keys, the key and trust material only
    per listener, values of the right type, per-broker keys only per broker; then, per broker,
    what its listeners would refuse to reconfigure (`before`: the layers now in force).
    Raises ConfigError with Kafka's message."""
    changed = overrides.broker if per_broker else overrides.default
    plain = {name for name in changed if _LISTENER_PREFIX.match(name) is None}
    _refuse("Cannot update these configs dynamically", plain - DYNAMIC_CONFIGS)
    _refuse(
        "These security configs can be dynamically updated only per-listener using the"
        " listener prefix",
        plain & tls.RECONFIGURABLE_CONFIGS,
    )
    after = effective_config(static, overrides)
    if not per_broker:
        _refuse(
            "Cannot update these configs at default cluster level, broker id must be specified",
            (plain & PER_BROKER_CONFIGS) | (set(changed) - plain),
        )
        return
    try:
        _check_listeners(effective_config(static, before or DynamicOverrides()), after)
    except ConfigError as error:
        # Kafka's processReconfiguration says no more to the client; the reason is logged.
        log.info("refusing a dynamic broker config update: %s", error)
        raise ConfigError("Invalid dynamic configuration") from None


def _refuse(message: str, names: set[str]) -> None:
    if names:
        raise ConfigError(f"{message}: Set({', '.join(sorted(names))})")


def check_passwords(changed: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's toPersistentProps: a password-typed key is stored encrypted with
    password.encoder.secret, which this broker does not have, so it is refused as Kafka
    refuses it without one."""
    if not any(name.endswith(tuple(_PASSWORD_CONFIGS)) for name in changed):
        return
    if not per_broker:
        raise ConfigError("Password config can be defined only at broker level")
    raise ConfigError("Password encoder secret not configured")


def _check_listeners(before: KafkaConfig, after: KafkaConfig) -> None:
    """Kafka's DynamicListenerConfig and SslFactory checks for this broker's listeners: only
    their key and trust material may change, and a new keystore keeps the certificate's
    subject and subject alternative names."""
    for endpoint in before.listeners:
        name = endpoint.listener_name
        if _fixed_settings(before, name) != _fixed_settings(after, name):
            raise ConfigError(
                f"Configs cannot be updated dynamically for existing listener {name},"
                " restart broker or create a new listener for update"
            )
        if before.security_protocol(name) not in TLS_PROTOCOLS:
            continue
        old, new = tls.keystore_identity(before, name), tls.keystore_identity(after, name)
        if old is not None and new is not None and old != new:
            raise ConfigError(
                f"listener {name}: Keystore DistinguishedName or SubjectAltNames do not match:"
                f" existing={{DN={old[0]}, SAN={list(old[1])}}},"
                f" new={{DN={new[0]}, SAN={list(new[1])}}}"
            )


def _fixed_settings(config: KafkaConfig, listener_name: str) -> dict[str, object]:
    overrides = config.listener_overrides.get(listener_name.lower(), {})
    return {key: value for key, value in overrides.items() if key not in tls.RECONFIGURABLE_CONFIGS}


def _decode(found: tuple[bytes, object] | None, path: str) -> dict[str, str]:
    if found is None:
        return {}
    try:
        return ConfigEntityZNode.decode(found[0])
    except ZnodeDecodeError as error:
        log.error("ignoring malformed %s: %s", path, error)
        return {}


async def read_overrides(zk_client: ZkClient, broker_id: int) -> DynamicOverrides:
    paths = [
        ConfigEntityZNode.path(BROKERS_ENTITY_TYPE, DEFAULT_ENTITY),
        ConfigEntityZNode.path(BROKERS_ENTITY_TYPE, str(broker_id)),
    ]
    default, broker = await zk_client.get_many(paths)
    return DynamicOverrides(_decode(default, paths[0]), _decode(broker, paths[1]))


async def write_overrides(zk_client: ZkClient, entity: str, configs: Mapping[str, str]) -> None:
    """AdminZkClient.changeBrokerConfig's two writes, in its order."""
    path = ConfigEntityZNode.path(BROKERS_ENTITY_TYPE, entity)
    data = ConfigEntityZNode.encode(configs)
    try:
        await zk_client.set(path, data)
    except NoNodeError:
        try:
            await zk_client.create(path, data, makepath=True)
        except NodeExistsError:
            await zk_client.set(path, data)
    await zk_client.create(
        ConfigEntityChangeNotificationSequenceZNode.create_path(),
        ConfigEntityChangeNotificationSequenceZNode.encode(f"{BROKERS_ENTITY_TYPE}/{entity}"),
        sequence=True,
        makepath=True,
    )


async def alter_broker_config(
    zk_client: ZkClient,
    static: KafkaConfig,
    resource_name: str,
    change: Callable[[dict[str, str]], Mapping[str, str | None]],
    validate_only: bool,
) -> tuple[ErrorCode, str | None]:
    """One BROKER resource of AlterConfigs / IncrementalAlterConfigs (ZkAdminManager's
    alterBrokerConfigs): `change` turns the entity's current dynamic configs into the new set."""
    if resource_name and resource_name != str(static.broker_id):
        return ErrorCode.invalid_request, (
            f"Unexpected broker id, expected {static.broker_id}, but received {resource_name}"
        )
    current = await read_overrides(zk_client, static.broker_id)
    per_broker = bool(resource_name)
    before = current.broker if per_broker else current.default
    updated = {k: v for k, v in change(dict(before)).items() if v is not None}
    if per_broker:
        overrides = DynamicOverrides(current.default, updated)
    else:
        overrides = DynamicOverrides(updated, current.broker)
    try:
        check_update(static, overrides, per_broker, current)
        if not validate_only:
            check_passwords(updated, per_broker)
    except ConfigError as error:
        resource = f"ConfigResource(type=BROKER, name='{resource_name}')"
        return ErrorCode.invalid_request, f"Invalid config value for resource {resource}: {error}"
    if not validate_only:
        await write_overrides(zk_client, entity_name(resource_name), updated)
    return ErrorCode.none, None


class DynamicBrokerConfig:
    """This broker's dynamic layers; `apply` gets each new effective config."""

    def __init__(
        self, static: KafkaConfig, zk_client: ZkClient, apply: Callable[[KafkaConfig], None]
    ) -> None:
        self.static = static
        self.overrides = DynamicOverrides()
        self._zk_client = zk_client
        self._apply = apply
        self._lock = asyncio.Lock()  # one reload at a time, applied in the order read
        self._reloads: set[asyncio.Task[None]] = set()

    async def load(self) -> None:
        """Read both layers and apply them (start-up, and after each notification)."""
        async with self._lock:
            overrides = await read_overrides(self._zk_client, self.static.broker_id)
            if overrides == self.overrides:
                return
            try:
                config = effective_config(self.static, overrides)
            except ConfigError as error:
                # Written around the validation (by hand, or by another version): keep what
                # runs now rather than stop, as Kafka does.
                log.error("ignoring invalid dynamic broker configs %s: %s", overrides, error)
                return
            self.overrides = overrides
            log.info("dynamic broker configs now default=%s broker=%s", *_both(overrides))
            self._apply(config)

    def on_entity_changed(self, name: str) -> None:
        """A /config/changes notification named `brokers/<name>`."""
        if name in (DEFAULT_ENTITY, str(self.static.broker_id)):
            self._schedule_reload()

    def _schedule_reload(self) -> None:
        task = asyncio.get_running_loop().create_task(self._reload(), name="dynamic-config")
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)

    async def _reload(self) -> None:
        try:
            await self.load()
        except ZkError:
            log.warning("reading dynamic broker configs failed; retrying", exc_info=True)
            asyncio.get_running_loop().call_later(RELOAD_RETRY_S, self._schedule_reload)


def _both(overrides: DynamicOverrides) -> tuple[dict[str, str], dict[str, str]]:
    return dict(overrides.default), dict(overrides.broker)
