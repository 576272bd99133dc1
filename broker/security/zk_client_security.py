"""How the broker authenticates to ZooKeeper, and whether it may set ACLs there.

Kafka's ZooKeeper client takes its SASL settings from JVM system properties, which people pass
to `kafka-server-start.sh` in `KAFKA_OPTS`: `-Djava.security.auth.login.config=<JAAS file>`,
whose `Client` section (`zookeeper.sasl.clientconfig`) holds the login module, unless
`-Dzookeeper.sasl.client=false`. We read the `-D` options of `KAFKA_OPTS` the same way. The
login module must be ZooKeeper's DigestLoginModule (SASL DIGEST-MD5, `username` /
`password`); Kerberos is not supported.

`zookeeper.set.acl=true` without an authenticated ZooKeeper session is refused at start-up
with Kafka's message (KafkaZkClient.createZkClient): ACLs for the creator would name nobody.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from broker.security.jaas import JaasConfigError, parse_jaas_file
from zk.zk_security import ZkSaslCredentials

KAFKA_OPTS_ENV = "KAFKA_OPTS"
JAVA_LOGIN_CONFIG_PARAM = "java.security.auth.login.config"
ZK_SASL_CLIENT = "zookeeper.sasl.client"
ZK_LOGIN_CONTEXT_NAME_KEY = "zookeeper.sasl.clientconfig"
ZK_SASL_CLIENT_USERNAME = "zookeeper.sasl.client.username"  # the SASL service name
DEFAULT_ZK_LOGIN_CONTEXT_NAME = "Client"
DEFAULT_ZK_SERVICE_NAME = "zookeeper"
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"


class ZkClientSecurityError(Exception):
    """The broker cannot authenticate to ZooKeeper as configured (Kafka: a KafkaException or
    SecurityException at start-up)."""


def system_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """The `-Dname=value` options of KAFKA_OPTS (a bare `-Dname` is the empty string)."""
    try:
        words = shlex.split(environ.get(KAFKA_OPTS_ENV, ""))
    except ValueError as error:
        message = f"{KAFKA_OPTS_ENV} cannot be split into words: {error}"
        raise ZkClientSecurityError(message) from error
    properties: dict[str, str] = {}
    for word in words:
        if word.startswith("-D") and len(word) > 2:
            name, _, value = word[2:].partition("=")
            properties[name] = value
    return properties


def zk_security_sys_config_string(properties: Mapping[str, str]) -> str:
    """JaasUtils.zkSecuritySysConfigString: the three properties, defaults marked."""
    login_config = properties.get(JAVA_LOGIN_CONFIG_PARAM, "null")
    client_enabled = properties.get(ZK_SASL_CLIENT, "default:true")
    context_name = properties.get(
        ZK_LOGIN_CONTEXT_NAME_KEY, f"default:{DEFAULT_ZK_LOGIN_CONTEXT_NAME}"
    )
    return (
        f"[{JAVA_LOGIN_CONFIG_PARAM}={login_config}, {ZK_SASL_CLIENT}={client_enabled}, "
        f"{ZK_LOGIN_CONTEXT_NAME_KEY}={context_name}]"
    )


def zk_sasl_credentials(properties: Mapping[str, str]) -> ZkSaslCredentials | None:
    """Who the broker is to ZooKeeper; None without a JAAS client section (no SASL), as
    JaasUtils.isZkSaslEnabled decides."""
    sasl_enabled = properties.get(ZK_SASL_CLIENT, "true").strip().lower() == "true"
    context_name = properties.get(ZK_LOGIN_CONTEXT_NAME_KEY, DEFAULT_ZK_LOGIN_CONTEXT_NAME)
    login_config = properties.get(JAVA_LOGIN_CONFIG_PARAM)
    if login_config is None:
        return None
    described = zk_security_sys_config_string(properties)
    try:
        sections = parse_jaas_file(Path(login_config).read_text(encoding="utf-8"))
    except (OSError, JaasConfigError) as error:
        raise ZkClientSecurityError(
            f"Exception while loading Zookeeper JAAS login context {described}: {error}"
        ) from error
    modules = sections.get(context_name)
    if modules is None:
        return None
    if not sasl_enabled:
        raise ZkClientSecurityError(
            f"Exception while determining if ZooKeeper is secure {described}: JAAS "
            f"configuration is present, but system property {ZK_SASL_CLIENT} is set to "
            "false, which disables SASL in the ZooKeeper client"
        )
    digest = [module for module in modules if module.class_name == DIGEST_LOGIN_MODULE]
    if not digest or "username" not in digest[0].options:
        found = ", ".join(module.class_name for module in modules) or "no login module"
        raise ZkClientSecurityError(
            f"JAAS section {context_name} of {login_config}: only {DIGEST_LOGIN_MODULE} "
            f"with username and password (SASL DIGEST-MD5) is supported, found {found}"
        )
    options = digest[0].options
    return ZkSaslCredentials(
        username=options["username"],
        password=options.get("password", ""),
        service_name=properties.get(ZK_SASL_CLIENT_USERNAME, DEFAULT_ZK_SERVICE_NAME),
    )


def zk_client_security(
    set_acl: bool, environ: Mapping[str, str]
) -> tuple[ZkSaslCredentials | None, bool]:
    """(credentials, secure ACLs) for the broker's ZooKeeper client, from its
    `zookeeper.set.acl` and environment; refuses secure ACLs without credentials."""
    properties = system_properties(environ)
    credentials = zk_sasl_credentials(properties)
    if set_acl and credentials is None:
        raise ZkClientSecurityError(
            "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at "
            "least zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and "
            "zookeeper.ssl.keystore.location was not present and the verification of the "
            f"JAAS login file failed {zk_security_sys_config_string(properties)}"
        )
    return credentials, set_acl
