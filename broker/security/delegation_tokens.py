"""Delegation tokens (KIP-48) as a ZooKeeper-mode Kafka 3.9 keeps them (its
DelegationTokenManagerZk): on when `delegation.token.secret.key` (or its deprecated alias
`delegation.token.master.key`) is set.

A token is stored in `/delegation_token/tokens/<id>` (DelegationTokenInfoZNode); its HMAC is
HMAC-SHA512 of the token id keyed by the secret, so every broker with the same secret derives
it without storing it. Each change is announced by a sequential znode under
`/delegation_token/token_changes` carrying the token id, and every broker re-reads that token
(or forgets it). Every broker keeps, per token, SCRAM credentials for both mechanisms with the
base64 HMAC as the password and 4096 iterations, so that a client authenticates with the
token id as its user name, the HMAC as its password and the SCRAM extension `tokenauth=true`.
The controller removes expired tokens every `delegation.token.expiry.check.interval.ms`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from broker.cluster.change_notifications import ChangeNotificationListener
from broker.config.kafka_config import KafkaConfig
from broker.security import scram
from zk.client import ZkClient
from zk.delegation_token_znodes import (
    DelegationTokenChangeNotificationSequenceZNode,
    DelegationTokenInfo,
)
from zk.kafka_zk import KafkaZk

log = logging.getLogger(__name__)
ERROR_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class TokenSettings:
    secret_key: str | None
    max_lifetime_ms: int
    expiry_time_ms: int
    expiry_check_interval_ms: int

    @property
    def enabled(self) -> bool:
        return bool(self.secret_key)

    @staticmethod
    def from_config(config: KafkaConfig) -> TokenSettings:
        get = config.__getitem__
        secret = get("delegation.token.secret.key") or get("delegation.token.master.key")
        return TokenSettings(
            secret_key=secret,
            max_lifetime_ms=int(get("delegation.token.max.lifetime.ms")),
            expiry_time_ms=int(get("delegation.token.expiry.time.ms")),
            expiry_check_interval_ms=int(get("delegation.token.expiry.check.interval.ms")),
        )


@dataclass(frozen=True, slots=True)
class CreatedToken:
    error_code: ErrorCode
    info: DelegationTokenInfo | None = None
    hmac: bytes = b""


def create_hmac(token_id: str, secret_key: str) -> bytes:
    """Kafka's DelegationTokenManager.createHmac (HmacSHA512)."""
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's CoreUtils.generateUuidAsBase64: a random UUID, URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def owner_or_renewer(token: DelegationTokenInfo, principal: str) -> bool:
    return principal == token.owner or principal in token.renewers


def is_expired(token: DelegationTokenInfo, now_ms: int) -> bool:
    return token.max_timestamp_ms < now_ms or token.expiry_timestamp_ms < now_ms


class DelegationTokenManager:
    def __init__(
        self,
        kafka_zk: KafkaZk,
        zk_client: ZkClient,
        settings: TokenSettings,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._zk = kafka_zk
        self._zk_client = zk_client
        self.settings = settings
        self._clock_ms = clock_ms
        self._lock = asyncio.Lock()
        self._tokens: dict[str, DelegationTokenInfo] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[tuple[str, str], scram.ScramCredential] = {}
        self._listener: ChangeNotificationListener | None = None

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    async def start(self) -> None:
        """Create the paths, follow the change notifications, then load every token (after
        the watch: no change is missed)."""
        if not self.enabled:
            return
        await self._zk.create_delegation_token_paths()
        self._listener = ChangeNotificationListener(
            self._zk_client,
            DelegationTokenChangeNotificationSequenceZNode.directory(),
            DelegationTokenChangeNotificationSequenceZNode.SEQUENCE_PREFIX,
            self._on_notification,
        )
        await self._listener.start()
        async with self._lock:
            token_ids = await self._zk.get_delegation_token_ids()
            log.info("Loading the token cache. Total token count: %d", len(token_ids))
            for token_id in token_ids:
                try:
                    await self._reload(token_id)
                except Exception:  # one bad znode must not keep the others out
                    log.exception("Error while getting Token for tokenId: %s", token_id)

    def hmac_of(self, token_id: str) -> bytes:
        return create_hmac(token_id, self.settings.secret_key or "")

    # -- the cache every broker keeps --------------------------------------------------------

    def _cache(self, token: DelegationTokenInfo) -> None:
        self._forget(token.token_id)
        token_hmac = self.hmac_of(token.token_id)
        password = base64.b64encode(token_hmac).decode()
        self._tokens[token.token_id] = token
        self._by_hmac[token_hmac] = token.token_id
        for mechanism in scram.SCRAM_MECHANISMS:
            self._credentials[(mechanism, token.token_id)] = scram.credential_from_password(
                mechanism, password, scram.MIN_ITERATIONS
            )

    def _forget(self, token_id: str) -> None:
        if self._tokens.pop(token_id, None) is None:
            return
        self._by_hmac = {h: t for h, t in self._by_hmac.items() if t != token_id}
        for mechanism in scram.SCRAM_MECHANISMS:
            self._credentials.pop((mechanism, token_id), None)

    async def _reload(self, token_id: str) -> None:
        token = await self._zk.get_delegation_token(token_id)
        if token is None:
            self._forget(token_id)
        else:
            self._cache(token)

    async def _on_notification(self, path: str, data: bytes) -> None:
        token_id = DelegationTokenChangeNotificationSequenceZNode.decode(data)
        log.info("Processing Token Notification for tokenId: %s", token_id)
        async with self._lock:
            await self._reload(token_id)

    def scram_credential(
        self, mechanism: str, token_id: str
    ) -> tuple[scram.ScramCredential, str] | None:
        """The SCRAM credential of a token and its owner, for `tokenauth=true` logins."""
        credential = self._credentials.get((mechanism, token_id))
        token = self._tokens.get(token_id)
        if credential is None or token is None:
            return None
        return credential, token.owner

    def tokens(self) -> list[DelegationTokenInfo]:
        return list(self._tokens.values())

    # -- the requests ------------------------------------------------------------------------

    async def _update(self, token: DelegationTokenInfo) -> None:
        """Kafka's updateToken: the znode, this broker's cache, then the notification."""
        await self._zk.set_or_create_delegation_token(token)
        self._cache(token)
        await self._zk.create_token_change_notification(token.token_id)

    async def _remove(self, token_id: str) -> None:
        await self._zk.delete_delegation_token(token_id)
        self._forget(token_id)
        await self._zk.create_token_change_notification(token_id)

    async def create(
        self, owner: str, requester: str, renewers: Iterable[str], max_lifetime_ms: int
    ) -> CreatedToken:
        if not self.enabled:
            return CreatedToken(ErrorCode.delegation_token_auth_disabled)
        async with self._lock:
            token_id = new_token_id()
            now = self._clock_ms()
            lifetime = self.settings.max_lifetime_ms
            if max_lifetime_ms > 0:
                lifetime = min(max_lifetime_ms, lifetime)
            max_timestamp = now + lifetime
            token = DelegationTokenInfo(
                token_id=token_id,
                owner=owner,
                token_requester=requester,
                renewers=tuple(renewers),
                issue_timestamp_ms=now,
                max_timestamp_ms=max_timestamp,
                expiry_timestamp_ms=min(max_timestamp, now + self.settings.expiry_time_ms),
            )
            await self._update(token)
            log.info("Created a delegation token: %s for owner: %s", token_id, owner)
            return CreatedToken(ErrorCode.none, token, self.hmac_of(token_id))

    async def renew(
        self, principal: str, token_hmac: bytes, renew_period_ms: int
    ) -> tuple[ErrorCode, int]:
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, ERROR_TIMESTAMP
        async with self._lock:
            token = self._token_for(token_hmac)
            if token is None:
                return ErrorCode.delegation_token_not_found, ERROR_TIMESTAMP
            now = self._clock_ms()
            if not owner_or_renewer(token, principal):
                return ErrorCode.delegation_token_owner_mismatch, ERROR_TIMESTAMP
            if is_expired(token, now):
                return ErrorCode.delegation_token_expired, ERROR_TIMESTAMP
            period = self.settings.expiry_time_ms if renew_period_ms < 0 else renew_period_ms
            expiry = min(token.max_timestamp_ms, now + period)
            await self._update(replace(token, expiry_timestamp_ms=expiry))
            log.info(
                "Delegation token renewed for token: %s for owner: %s", token.token_id, token.owner
            )
            return ErrorCode.none, expiry

    async def expire(
        self, principal: str, token_hmac: bytes, expiry_period_ms: int
    ) -> tuple[ErrorCode, int]:
        if not self.enabled:
            return ErrorCode.delegation_token_auth_disabled, ERROR_TIMESTAMP
        async with self._lock:
            token = self._token_for(token_hmac)
            if token is None:
                return ErrorCode.delegation_token_not_found, ERROR_TIMESTAMP
            now = self._clock_ms()
            if not owner_or_renewer(token, principal):
                return ErrorCode.delegation_token_owner_mismatch, ERROR_TIMESTAMP
            if expiry_period_ms < 0:  # at once
                await self._remove(token.token_id)
                log.info("Token expired for token: %s for owner: %s", token.token_id, token.owner)
                return ErrorCode.none, now
            if is_expired(token, now):
                return ErrorCode.delegation_token_expired, ERROR_TIMESTAMP
            expiry = min(token.max_timestamp_ms, now + expiry_period_ms)
            await self._update(replace(token, expiry_timestamp_ms=expiry))
            log.info("Updated expiry time for token: %s for owner: %s", token.token_id, token.owner)
            return ErrorCode.none, expiry

    def _token_for(self, token_hmac: bytes) -> DelegationTokenInfo | None:
        token_id = self._by_hmac.get(bytes(token_hmac))
        return None if token_id is None else self._tokens.get(token_id)

    async def expire_tokens(self) -> None:
        """The controller's periodic sweep (Kafka's expireTokens)."""
        async with self._lock:
            now = self._clock_ms()
            for token in list(self._tokens.values()):
                if is_expired(token, now):
                    log.info(
                        "Delegation token expired for token: %s for owner: %s",
                        token.token_id,
                        token.owner,
                    )
                    await self._remove(token.token_id)
