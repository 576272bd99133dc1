"""`up --set zookeeper.set.acl=true`: ZooKeeper with SASL DIGEST-MD5, the brokers logged in to it.

Kafka refuses `zookeeper.set.acl=true` unless its ZooKeeper session is authenticated, so with
that override the launcher sets ZooKeeper security up the way Kafka's documentation does:

- every ZooKeeper server gets `authProvider.sasl=...SASLAuthenticationProvider` in zoo.cfg
  and `-Djava.security.auth.login.config=DIR/zookeeper_jaas.conf`, whose `Server` section
  knows the user `kafka` / `kafka-secret`;
- every broker gets `-Djava.security.auth.login.config=DIR/kafka_server_jaas.conf` (ours in
  KAFKA_OPTS, as kafka-server-start.sh passes it; Kafka's on its java command line), whose
  `Client` section logs in as that user. Its znodes are then `sasl:kafka` cdrwa plus world
  read (only `sasl:kafka` under /config/users and /config/brokers).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from broker.security.zk_client_security import (
    DEFAULT_ZK_LOGIN_CONTEXT_NAME,
    DIGEST_LOGIN_MODULE,
    JAVA_LOGIN_CONFIG_PARAM,
    KAFKA_OPTS_ENV,
)
from zk.zk_security import ZkSaslCredentials

ZK_USER = "kafka"
ZK_PASSWORD = "kafka-secret"
SET_ACL_KEY = "zookeeper.set.acl"
SASL_AUTH_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
SERVER_JAAS_FILE = "zookeeper_jaas.conf"
CLIENT_JAAS_FILE = "kafka_server_jaas.conf"


def enabled(overrides: Mapping[str, str]) -> bool:
    return overrides.get(SET_ACL_KEY, "").strip().lower() == "true"


def server_jaas(directory: Path) -> Path:
    return directory / SERVER_JAAS_FILE


def client_jaas(directory: Path) -> Path:
    return directory / CLIENT_JAAS_FILE


def write(directory: Path) -> None:
    """The ZooKeeper servers' and the brokers' JAAS files."""
    server_jaas(directory).write_text(
        "// Written by scripts/cluster: the user the brokers log in to ZooKeeper as.\n"
        f"Server {{\n    {DIGEST_LOGIN_MODULE} required\n"
        f'    user_{ZK_USER}="{ZK_PASSWORD}";\n}};\n'
    )
    client_jaas(directory).write_text(
        "// Written by scripts/cluster: how the brokers log in to ZooKeeper.\n"
        f"{DEFAULT_ZK_LOGIN_CONTEXT_NAME} {{\n    {DIGEST_LOGIN_MODULE} required\n"
        f'    username="{ZK_USER}"\n    password="{ZK_PASSWORD}";\n}};\n'
    )


def zoo_cfg_lines() -> list[str]:
    return [f"authProvider.sasl={SASL_AUTH_PROVIDER}"]


def server_jvm_options(directory: Path) -> list[str]:
    return [f"-D{JAVA_LOGIN_CONFIG_PARAM}={server_jaas(directory)}"]


def broker_jvm_options(directory: Path) -> list[str]:
    return [f"-D{JAVA_LOGIN_CONFIG_PARAM}={client_jaas(directory)}"]


def broker_env(directory: Path) -> dict[str, str]:
    """Our brokers read the JVM options of KAFKA_OPTS (broker.security.zk_client_security)."""
    return {KAFKA_OPTS_ENV: " ".join(broker_jvm_options(directory))}


def credentials() -> ZkSaslCredentials:
    """The launcher's own ZooKeeper writes (the admin's SCRAM credentials) as the brokers."""
    return ZkSaslCredentials(ZK_USER, ZK_PASSWORD)
