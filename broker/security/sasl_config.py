"""SASL settings from the broker config: each SASL listener's mechanisms and PLAIN users,
and the mechanism and credentials this broker uses towards the others.

As in Kafka, every enabled mechanism of a listener needs that listener's JAAS config,
`listener.name.<listener>.<mechanism>.sasl.jaas.config` (both lower case); the PLAIN users are
its PlainLoginModule's `user_<name>="<password>"` options, and the inter-broker listener's
`username` / `password` options are what this broker authenticates to the others with.
Kafka's other JAAS sources (a `java.security.auth.login.config` file) are not read
(DEVIATIONS.md, "Security").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.network.sasl import (
    PLAIN,
    SASL_PROTOCOLS,
    SUPPORTED_MECHANISMS,
    ListenerSasl,
    SaslClientConfig,
    ScramLookup,
    TokenLookup,
)
from broker.security import jaas, scram

if TYPE_CHECKING:
    from broker.config.kafka_config import KafkaConfig

log = logging.getLogger(__name__)
_USER_PREFIX = "user_"


class SaslConfigError(ValueError):
    """A SASL listener cannot be set up; the message names the key."""


def _no_scram_users(mechanism: str, user: str) -> scram.ScramCredential | None:
    return None


def _no_tokens(mechanism: str, token_id: str) -> tuple[scram.ScramCredential, str] | None:
    return None


def enabled_mechanisms(config: KafkaConfig, listener_name: str) -> tuple[str, ...]:
    mechanisms = tuple(config.for_listener(listener_name, "sasl.enabled.mechanisms"))
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise SaslConfigError(
            f"listener {listener_name}: sasl.enabled.mechanisms"
            f" {','.join(mechanisms) or '(empty)'}: supported are"
            f" {', '.join(SUPPORTED_MECHANISMS)}"
        )
    return mechanisms


def login_modules(
    config: KafkaConfig, listener_name: str, mechanism: str
) -> list[jaas.LoginModule]:
    key = f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = config.listener_jaas_config(listener_name, mechanism)
    if text is None:
        raise SaslConfigError(f"listener {listener_name}: {mechanism} is enabled; set {key}")
    try:
        modules = jaas.parse_jaas_config(text)
    except jaas.JaasConfigError as error:
        raise SaslConfigError(f"{key}: {error}") from None
    if len(modules) != 1:
        raise SaslConfigError(f"{key}: {len(modules)} login modules, should be 1")
    return modules


def listener_settings(
    config: KafkaConfig,
    listener_name: str,
    scram_lookup: ScramLookup = _no_scram_users,
    token_lookup: TokenLookup = _no_tokens,
) -> ListenerSasl:
    mechanisms = enabled_mechanisms(config, listener_name)
    plain_users: dict[str, str] = {}
    for mechanism in mechanisms:
        modules = login_modules(config, listener_name, mechanism)
        if mechanism == PLAIN:
            plain_users = {
                name.removeprefix(_USER_PREFIX): value
                for module in modules
                if module.class_name == jaas.PLAIN_LOGIN_MODULE
                for name, value in module.options.items()
                if name.startswith(_USER_PREFIX)
            }
    return ListenerSasl(mechanisms, plain_users, scram_lookup, token_lookup)


def warn_ignored(config: KafkaConfig) -> None:
    if config["sasl.jaas.config"]:
        log.warning(
            "sasl.jaas.config is ignored on a broker: set"
            " listener.name.<listener>.<mechanism>.sasl.jaas.config (as Kafka warns)"
        )


def inter_broker_client(config: KafkaConfig) -> SaslClientConfig | None:
    """The mechanism and credentials to authenticate to other brokers with (None: the
    inter-broker listener has no SASL)."""
    listener_name = config.inter_broker_listener_name
    if config.security_protocol(listener_name) not in SASL_PROTOCOLS:
        return None
    mechanism = str(config["sasl.mechanism.inter.broker.protocol"])
    if mechanism not in enabled_mechanisms(config, listener_name):
        raise SaslConfigError(
            f"sasl.mechanism.inter.broker.protocol ({mechanism}) must be included in"
            " sasl.enabled.mechanisms when SASL is used for inter-broker communication"
        )
    modules = login_modules(config, listener_name, mechanism)
    username = modules[0].options.get("username")
    password = modules[0].options.get("password")
    if not username or password is None:
        raise SaslConfigError(
            f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config needs"
            " username and password options for inter-broker authentication"
        )
    return SaslClientConfig(mechanism, username, password)
