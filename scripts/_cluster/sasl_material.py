"""`up --security sasl_plaintext|sasl_ssl`: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 on every
broker's listener, a super user `admin` / `admin-secret` whom the brokers also use among
themselves (SCRAM-SHA-512; in `super.users`), and DIR/client.properties with Kafka's client keys.

The admin's SCRAM credentials are written to ZooKeeper before the brokers start, as
`kafka-configs --zookeeper ... --alter --add-config 'SCRAM-SHA-512=[password=...]'
--entity-type users --entity-name admin` writes them: `/config/users/admin`, then a
`/config/changes` notification.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.security import scram
from zk.client import ZkClient
from zk.kafka_zk import KafkaZk

from . import tls_material, zk_sasl_material, zk_view

ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin-secret"
MECHANISMS = ("PLAIN", scram.SCRAM_SHA_256, scram.SCRAM_SHA_512)
INTER_BROKER_MECHANISM = scram.SCRAM_SHA_512
CLIENT_MECHANISM = scram.SCRAM_SHA_512
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PROTOCOLS = {"sasl_plaintext": "SASL_PLAINTEXT", "sasl_ssl": "SASL_SSL"}


def _credentials() -> str:
    return f'username="{ADMIN_USER}" password="{ADMIN_PASSWORD}"'


def broker_properties(security: str, port: int) -> dict[str, str]:
    """The SASL listener on the broker's port and its JAAS config per mechanism (Kafka's
    keys, so that `--impl kafka` reads the same file)."""
    protocol = PROTOCOLS[security]
    prefix = f"listener.name.{protocol.lower()}"
    properties = {
        "listeners": f"{protocol}://127.0.0.1:{port}",
        "security.inter.broker.protocol": protocol,
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": INTER_BROKER_MECHANISM,
        # The brokers (and the tools' client.properties) act as admin: with an authorizer
        # (`--set authorizer.class.name=...`) it must be allowed everything; without one
        # the key changes nothing.
        "super.users": f"User:{ADMIN_USER}",
        f"{prefix}.plain.sasl.jaas.config": f"{PLAIN_MODULE} required {_credentials()}"
        f' user_{ADMIN_USER}="{ADMIN_PASSWORD}";',
    }
    for mechanism in (scram.SCRAM_SHA_256, scram.SCRAM_SHA_512):
        properties[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = (
            f"{SCRAM_MODULE} required {_credentials()};"
        )
    return properties


def write_client_properties(directory: Path, security: str) -> Path:
    lines = [
        f"# Written by scripts/cluster up --security {security}",
        f"security.protocol={PROTOCOLS[security]}",
        f"sasl.mechanism={CLIENT_MECHANISM}",
        f"sasl.jaas.config={SCRAM_MODULE} required {_credentials()};",
    ]
    if security == "sasl_ssl":
        lines += [
            "ssl.truststore.type=PEM",
            f"ssl.truststore.location={tls_material.truststore(directory)}",
        ]
    path = directory / tls_material.CLIENT_PROPERTIES
    path.write_text("\n".join(lines) + "\n")
    return path


def write_admin_credentials(zookeeper_connect: str, zookeeper_set_acl: bool = False) -> None:
    """The admin's SCRAM-SHA-256 and SCRAM-SHA-512 credentials, into ZooKeeper; with
    `zookeeper_set_acl`, logged in and with the ACLs the brokers use (as kafka-configs
    --zookeeper does with a JAAS client section)."""

    async def run() -> None:
        client = ZkClient(
            zookeeper_connect,
            session_timeout_ms=zk_view.SESSION_TIMEOUT_MS,
            connection_timeout_ms=zk_view.CONNECTION_TIMEOUT_MS,
            sasl=zk_sasl_material.credentials() if zookeeper_set_acl else None,
            secure_acls=zookeeper_set_acl,
        )
        await client.start()
        try:
            kafka_zk = KafkaZk(client)
            configs = await kafka_zk.get_entity_config("users", ADMIN_USER)
            for mechanism in (scram.SCRAM_SHA_256, scram.SCRAM_SHA_512):
                credential = scram.credential_from_password(mechanism, ADMIN_PASSWORD)
                configs[mechanism] = credential.to_text()
            await kafka_zk.change_entity_config("users", ADMIN_USER, configs)
        finally:
            await client.close()

    asyncio.run(run())
