"""Delegation tokens without ZooKeeper: the manager (broker.security.delegation_tokens) over an
in-memory store with Kafka's rules (lifetimes, owner/renewer checks, expiry, removal, the HMAC
as HMAC-SHA512 of the id), the znode's JSON (Kafka's version 3, sanitized principals), SCRAM
with `tokenauth=true` (the token's owner becomes the principal), and the handlers' refusals
on PLAINTEXT and to a token-authenticated connection."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import create_delegation_token, describe_delegation_token
from broker.network.context import RequestContext
from broker.network.sasl import (
    ListenerSasl,
    SaslClientConfig,
    SaslClientExchange,
    SaslServerSession,
)
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.header import RequestHeader
from broker.protocol.registry import request_class
from broker.security.delegation_tokens import DelegationTokenManager, TokenSettings, create_hmac
from zk.delegation_token_znodes import DelegationTokenInfo, DelegationTokenInfoZNode

SECRET = "s3cret"
HOUR_MS = 3_600_000


class _Zk:
    def __init__(self) -> None:
        self.tokens: dict[str, bytes] = {}
        self.notifications: list[str] = []

    async def create_delegation_token_paths(self) -> None: ...

    async def get_delegation_token_ids(self) -> list[str]:
        return list(self.tokens)

    async def get_delegation_token(self, token_id: str) -> DelegationTokenInfo | None:
        data = self.tokens.get(token_id)
        return None if data is None else DelegationTokenInfoZNode.decode(data)

    async def set_or_create_delegation_token(self, token: DelegationTokenInfo) -> None:
        self.tokens[token.token_id] = DelegationTokenInfoZNode.encode(token)

    async def delete_delegation_token(self, token_id: str) -> None:
        self.tokens.pop(token_id, None)

    async def create_token_change_notification(self, token_id: str) -> None:
        self.notifications.append(token_id)


class _Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def _manager(secret: str | None = SECRET) -> tuple[DelegationTokenManager, _Zk, _Clock]:
    zk, clock = _Zk(), _Clock()
    settings = TokenSettings(secret, 7 * 24 * HOUR_MS, 24 * HOUR_MS, HOUR_MS)
    manager = DelegationTokenManager(zk, None, settings, clock)  # type: ignore[arg-type]
    return manager, zk, clock


def test_create_sets_kafkas_timestamps_and_stores_the_token() -> None:
    manager, zk, clock = _manager()
    created = asyncio.run(manager.create("User:alice", "User:alice", ["User:bob"], -1))
    assert created.error_code == ErrorCode.none and created.info is not None
    info = created.info
    assert info.issue_timestamp_ms == clock.now_ms
    assert info.max_timestamp_ms == clock.now_ms + 7 * 24 * HOUR_MS
    assert info.expiry_timestamp_ms == clock.now_ms + 24 * HOUR_MS
    expected = hmac.new(SECRET.encode(), info.token_id.encode(), hashlib.sha512).digest()
    assert created.hmac == expected == create_hmac(info.token_id, SECRET)
    assert zk.notifications == [info.token_id]
    stored = json.loads(zk.tokens[info.token_id])
    assert stored == {
        "version": 3,
        "owner": "User%3Aalice",
        "tokenRequester": "User%3Aalice",
        "renewers": ["User%3Abob"],
        "issueTimestamp": info.issue_timestamp_ms,
        "maxTimestamp": info.max_timestamp_ms,
        "expiryTimestamp": info.expiry_timestamp_ms,
        "tokenId": info.token_id,
    }
    short = asyncio.run(manager.create("User:alice", "User:alice", [], HOUR_MS))
    assert short.info is not None and short.info.max_timestamp_ms == clock.now_ms + HOUR_MS
    assert short.info.expiry_timestamp_ms == clock.now_ms + HOUR_MS


def test_renew_and_expire_follow_kafkas_rules() -> None:
    manager, zk, clock = _manager()
    created = asyncio.run(manager.create("User:alice", "User:alice", ["User:bob"], -1))
    assert created.info is not None
    token_hmac = created.hmac
    assert asyncio.run(manager.renew("User:eve", token_hmac, -1)) == (
        ErrorCode.delegation_token_owner_mismatch,
        -1,
    )
    assert asyncio.run(manager.renew("User:alice", b"nope", -1)) == (
        ErrorCode.delegation_token_not_found,
        -1,
    )
    clock.now_ms += HOUR_MS
    assert asyncio.run(manager.renew("User:bob", token_hmac, 2 * HOUR_MS)) == (
        ErrorCode.none,
        clock.now_ms + 2 * HOUR_MS,
    )
    assert asyncio.run(manager.expire("User:alice", token_hmac, HOUR_MS)) == (
        ErrorCode.none,
        clock.now_ms + HOUR_MS,
    )
    clock.now_ms += 2 * HOUR_MS
    assert asyncio.run(manager.renew("User:alice", token_hmac, -1))[0] == (
        ErrorCode.delegation_token_expired
    )
    asyncio.run(manager.expire_tokens())
    assert manager.tokens() == [] and zk.tokens == {}


def test_expire_now_removes_the_token() -> None:
    manager, zk, clock = _manager()
    created = asyncio.run(manager.create("User:alice", "User:alice", [], -1))
    assert asyncio.run(manager.expire("User:alice", created.hmac, -1)) == (
        ErrorCode.none,
        clock.now_ms,
    )
    assert manager.tokens() == [] and zk.tokens == {}


def test_without_a_secret_tokens_are_disabled() -> None:
    manager, _, _ = _manager(secret=None)
    assert not manager.enabled
    created = asyncio.run(manager.create("User:alice", "User:alice", [], -1))
    assert created.error_code == ErrorCode.delegation_token_auth_disabled


def test_another_broker_loads_the_stored_tokens() -> None:
    manager, zk, _ = _manager()
    created = asyncio.run(manager.create("User:alice", "User:alice", [], -1))
    other = DelegationTokenManager(zk, None, manager.settings)  # type: ignore[arg-type]
    asyncio.run(other._on_notification("/x", created.info.token_id.encode()))  # type: ignore[union-attr]
    assert other.tokens() == manager.tokens()


def _scram_login(session: SaslServerSession, config: SaslClientConfig) -> None:
    client = SaslClientExchange(config)
    token: bytes | None = client.first()
    while token is not None:
        answer = session.evaluate(token)
        token = client.answer(answer)


def test_scram_with_tokenauth_authenticates_as_the_token_owner() -> None:
    manager, _, _ = _manager()
    created = asyncio.run(manager.create("User:alice", "User:alice", [], -1))
    assert created.info is not None
    password = base64.b64encode(created.hmac).decode()
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        settings = ListenerSasl((mechanism,), token_lookup=manager.scram_credential)
        session = SaslServerSession(settings)
        assert session.handshake(mechanism, 1) == ErrorCode.none
        _scram_login(
            session, SaslClientConfig(mechanism, created.info.token_id, password, token_auth=True)
        )
        assert session.complete
        assert session.principal == "User:alice" and session.token_authenticated


def _context(listener_protocol: str, sasl: Any, services: Any, api_key: ApiKey) -> RequestContext:
    header = RequestHeader(api_key=api_key, api_version=3, correlation_id=1, client_id=None)
    services.config = SimpleNamespace(security_protocol=lambda name: listener_protocol)
    return RequestContext(header, "127.0.0.1", "L", services, "User:alice", sasl)


def test_tokens_are_not_handed_out_on_plaintext_or_to_token_logins() -> None:
    manager, _, _ = _manager()
    services = SimpleNamespace(delegation_tokens=manager, authorizer=None)
    fields = {
        "owner_principal_type": None,
        "owner_principal_name": None,
        "renewers": [],
        "max_lifetime": -1,
    }
    request = adapter.build(request_class(ApiKey.CREATE_DELEGATION_TOKEN, 3), fields)
    token_login = SimpleNamespace(token_authenticated=True)
    for protocol, sasl in (("PLAINTEXT", None), ("SASL_SSL", token_login)):
        context = _context(protocol, sasl, services, ApiKey.CREATE_DELEGATION_TOKEN)
        response = asyncio.run(create_delegation_token.handle(context, request))
        adapter.encode(response)
        assert response.error_code == ErrorCode.delegation_token_request_not_allowed
        assert (response.principal_type, response.principal_name) == ("User", "alice")
    context = _context("SASL_SSL", None, services, ApiKey.CREATE_DELEGATION_TOKEN)
    response = asyncio.run(create_delegation_token.handle(context, request))
    adapter.encode(response)
    assert response.error_code == ErrorCode.none and len(response.hmac) == 64
    describe = adapter.build(request_class(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3), {"owners": None})
    context = _context("SASL_SSL", None, services, ApiKey.DESCRIBE_DELEGATION_TOKEN)
    described = asyncio.run(describe_delegation_token.handle(context, describe))
    adapter.encode(described)
    assert [t.token_id for t in described.tokens] == [response.token_id]
    assert described.tokens[0].hmac == response.hmac
