"""SASL (broker.network.sasl, broker.security): JAAS text, SCRAM credentials in Kafka's
ZooKeeper form, the per-connection authentication state machine (what may come before
authentication, PLAIN and SCRAM exchanges against the client half this broker uses towards
others), and the SASL settings a broker refuses at start-up."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.config.kafka_config import ConfigError, build_config
from broker.network.sasl import (
    ListenerSasl,
    SaslAuthenticationError,
    SaslClientConfig,
    SaslClientExchange,
    SaslServerSession,
)
from broker.protocol.api_keys import ApiKey
from broker.security import jaas, sasl_config, scram

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181"}
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required"
    ' username="admin" password="admin-secret" user_admin="admin-secret"'
    ' user_alice="alice-secret";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required"
    ' username="admin" password="admin-secret";'
)
# Kafka's ScramCredentialUtils text of password "alice-secret", salt "kafka-salt-0123456789",
# 4096 iterations (computed independently with hashlib's PBKDF2 and HMAC).
KNOWN_SHA_256 = (
    "salt=a2Fma2Etc2FsdC0wMTIzNDU2Nzg5,"
    "stored_key=tYO+V1suAhEtqSGMCW268xrUJsKQXh0U9fd9A20ZoaE=,"
    "server_key=AvfBcKFQLe2TVi3RydC31ykA57OA35wQdE+iPZVbdnc=,iterations=4096"
)
KNOWN_SHA_512 = (
    "salt=a2Fma2Etc2FsdC0wMTIzNDU2Nzg5,"
    "stored_key=PIE996RZsrx4MQ6QVDYppGgeFeS2hSNZmlbIhs04j/Wq65uHuHscUboEcYTN11dkL0XYZqMuhQa+1piCy4oK+Q==,"
    "server_key=q5oXYJcTH1wQZL0HdvSBT19b72ctCWg0gtdsvN3R4jZeNz19tY5xJjfKYspI1CrgzByu92fPXdwui4ymyNS4ew==,"
    "iterations=4096"
)
SALT = b"kafka-salt-0123456789"


# -- JAAS ------------------------------------------------------------------------------------


def test_jaas_plain_module_with_quoted_options() -> None:
    (module,) = jaas.parse_jaas_config(PLAIN_JAAS)
    assert module.class_name == jaas.PLAIN_LOGIN_MODULE
    assert module.control_flag == "required"
    assert module.options == {
        "username": "admin",
        "password": "admin-secret",
        "user_admin": "admin-secret",
        "user_alice": "alice-secret",
    }


def test_jaas_quoted_values_keep_spaces_semicolons_and_escapes() -> None:
    text = 'a.B optional x="p; q=r" y=bare z="say \\"hi\\"";\n c.D sufficient;'
    first, second = jaas.parse_jaas_config(text)
    assert first.options == {"x": "p; q=r", "y": "bare", "z": 'say "hi"'}
    assert (second.class_name, second.control_flag, second.options) == ("c.D", "sufficient", {})


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a.B required x=1",  # no semicolon
        "a.B x=1;",  # no control flag
        "a.B required x=;",  # no value
        'a.B required x="open;',  # unterminated quote
    ],
)
def test_jaas_refuses_malformed_text(text: str) -> None:
    with pytest.raises(jaas.JaasConfigError):
        jaas.parse_jaas_config(text)


# -- SCRAM credentials -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "known"),
    [(scram.SCRAM_SHA_256, KNOWN_SHA_256), (scram.SCRAM_SHA_512, KNOWN_SHA_512)],
)
def test_scram_credential_matches_known_vector_and_round_trips(mechanism: str, known: str) -> None:
    from_password = scram.credential_from_password(mechanism, "alice-secret", 4096, SALT)
    salted = scram.salted_password(mechanism, "alice-secret", SALT, 4096)
    from_salted = scram.credential_from_salted_password(mechanism, SALT, salted, 4096)
    assert from_password.to_text() == known
    assert from_salted == from_password
    assert scram.ScramCredential.from_text(known) == from_password


SECRET = "c2VjcmV0"  # what a stored credential holds: its error must never show it


@pytest.mark.parametrize(
    "text",
    [
        f"salt={SECRET},stored_key={SECRET},server_key={SECRET}",  # no iterations
        f"salt={SECRET},stored_key={SECRET},server_key={SECRET},iterations=4096,extra=1",
        f"salt=!!,stored_key={SECRET},server_key={SECRET},iterations=4096",
        f"salt={SECRET},stored_key={SECRET}!,server_key={SECRET},iterations=4096",
        f"salt={SECRET},stored_key={SECRET},server_key={SECRET},iterations={SECRET}",
        f"{SECRET},stored_key={SECRET}",
    ],
)
def test_scram_credential_refuses_other_text_without_showing_it(text: str) -> None:
    """The message is logged and answered to DescribeUserScramCredentials (review A14)."""
    with pytest.raises(scram.CredentialFormatError) as refused:
        scram.ScramCredential.from_text(text)
    assert str(refused.value).startswith("credentials not valid: ")
    assert SECRET not in str(refused.value) and "!" not in str(refused.value)


def test_user_names_are_sanitized_as_kafka_does() -> None:
    assert scram.sanitize("alice") == "alice"
    assert scram.sanitize("CN=a b*c~") == "CN%3Da%20b%2Ac%7E"
    assert scram.desanitize(scram.sanitize("CN=a b*c~")) == "CN=a b*c~"


# -- the server session ------------------------------------------------------------------------


def _settings() -> ListenerSasl:
    credentials = {
        (mechanism, "alice"): scram.credential_from_password(mechanism, "alice-secret")
        for mechanism in scram.SCRAM_MECHANISMS
    }
    return ListenerSasl(
        ("PLAIN", *scram.SCRAM_MECHANISMS),
        {"alice": "alice-secret"},
        lambda mechanism, user: credentials.get((mechanism, user)),
    )


def _authenticate(mechanism: str, password: str) -> SaslServerSession:
    session = SaslServerSession(_settings())
    assert session.handshake(mechanism, 1) == ErrorCode.none
    client = SaslClientExchange(SaslClientConfig(mechanism, "alice", password))
    token: bytes | None = client.first()
    while token is not None:
        token = client.answer(session.evaluate(token))
    assert client.complete
    return session


@pytest.mark.parametrize("mechanism", ["PLAIN", scram.SCRAM_SHA_256, scram.SCRAM_SHA_512])
def test_authentication_names_the_principal(mechanism: str) -> None:
    session = _authenticate(mechanism, "alice-secret")
    assert session.complete
    assert session.principal == "User:alice"
    assert session.refusal(ApiKey.METADATA, "Metadata") is None


def test_wrong_plain_password_fails_with_kafkas_message() -> None:
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        _authenticate("PLAIN", "wrong")


@pytest.mark.parametrize("mechanism", scram.SCRAM_MECHANISMS)
def test_wrong_scram_password_fails_and_closes(mechanism: str) -> None:
    session = SaslServerSession(_settings())
    session.handshake(mechanism, 1)
    client = SaslClientExchange(SaslClientConfig(mechanism, "alice", "wrong"))
    final = client.answer(session.evaluate(client.first()))
    assert final is not None
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        session.evaluate(final)
    assert session.failure is not None
    assert session.principal is None


def test_unknown_scram_user_fails_without_saying_so() -> None:
    session = SaslServerSession(_settings())
    session.handshake(scram.SCRAM_SHA_256, 1)
    client = SaslClientExchange(SaslClientConfig(scram.SCRAM_SHA_256, "mallory", "x"))
    with pytest.raises(SaslAuthenticationError) as raised:
        session.evaluate(client.first())
    assert "mallory" not in str(raised.value)


def test_unknown_mechanism_is_refused_and_closes() -> None:
    session = SaslServerSession(_settings())
    assert session.handshake("GSSAPI", 1) == ErrorCode.unsupported_sasl_mechanism
    assert session.failure is not None


def test_only_sasl_requests_before_authentication() -> None:
    session = SaslServerSession(_settings())
    assert session.refusal(ApiKey.API_VERSIONS, "ApiVersions") is None
    assert session.refusal(ApiKey.SASL_HANDSHAKE, "SaslHandshake") is None
    assert session.refusal(ApiKey.METADATA, "Metadata") is not None
    assert session.refusal(ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate") is not None
    session.handshake("PLAIN", 1)
    assert session.refusal(ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate") is None
    assert session.refusal(ApiKey.API_VERSIONS, "ApiVersions") is not None
    assert session.refusal(ApiKey.PRODUCE, "Produce") is not None


def test_handshake_v0_switches_to_bare_tokens() -> None:
    session = SaslServerSession(_settings())
    session.handshake("PLAIN", 0)
    assert session.bare_tokens
    session.evaluate(b"\x00alice\x00alice-secret")
    assert session.principal == "User:alice"


# -- settings ----------------------------------------------------------------------------------


def _sasl_settings(**extra: str) -> dict[str, str]:
    return {
        **BASE,
        "listeners": "SASL_PLAINTEXT://127.0.0.1:9094",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        **extra,
    }


def test_listener_settings_take_plain_users_and_inter_broker_credentials() -> None:
    config = build_config(_sasl_settings())
    settings = sasl_config.listener_settings(config, "SASL_PLAINTEXT")
    assert settings.enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert dict(settings.plain_users) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert sasl_config.inter_broker_client(config) == SaslClientConfig(
        "PLAIN", "admin", "admin-secret"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "supported are PLAIN, SCRAM-SHA-256"),
        ({"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}, "scram-sha-256.sasl.jaas.config"),
        ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}, "must be included in"),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": "x.Y required user_a=1"},
            "ends where",
        ),
        (
            {
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x.Y required user_a=1;",
                "sasl.enabled.mechanisms": "PLAIN",
            },
            "needs username and password",
        ),
    ],
)
def test_broker_refuses_incomplete_sasl_settings(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(_sasl_settings(**extra))


def test_enabled_mechanisms_may_be_set_per_listener() -> None:
    config = build_config(
        _sasl_settings(**{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"})
    )
    assert sasl_config.enabled_mechanisms(config, "SASL_PLAINTEXT") == ("PLAIN",)
