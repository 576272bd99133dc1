"""SASL on SASL_PLAINTEXT and SASL_SSL listeners (Kafka's SaslServerAuthenticator), and the
client side this broker uses towards other brokers.

The server side of one connection is a `SaslServerSession`. Before authentication a client
may send ApiVersions and SaslHandshake; after SaslHandshake v1 only SaslAuthenticate frames,
each carrying one SASL token (KIP-152). After SaslHandshake v0 the tokens come as bare
size-prefixed frames with no Kafka header, and are answered the same way (the pre-KIP-152
flow of Kafka 0.10 clients). Anything else before authentication closes the connection with a
log line. A failed authentication is answered (SASL_AUTHENTICATION_FAILED with Kafka's
message; in the v0 flow, nothing) and the connection closed; an unknown mechanism is answered
with UNSUPPORTED_SASL_MECHANISM and the enabled list, and closed too.

Mechanisms: PLAIN (the users are the `user_<name>="<password>"` options of the listener's
PlainLoginModule JAAS config) and SCRAM-SHA-256 / SCRAM-SHA-512 (credentials from ZooKeeper,
through `broker.security.credentials`); `scramp` does the SCRAM exchange.
"""

from __future__ import annotations

import enum
import hmac
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import scramp
from kio.schema.errors import ErrorCode

from broker.protocol.api_keys import ApiKey
from broker.security import scram

log = logging.getLogger(__name__)
PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = ("PLAIN", scram.SCRAM_SHA_256, scram.SCRAM_SHA_512)
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
# Kafka's sasl.server.max.receive.size: the largest frame an unauthenticated client may send.
MAX_RECEIVE_BYTES_BEFORE_AUTHENTICATION = 524288
ScramLookup = Callable[[str, str], scram.ScramCredential | None]
# (mechanism, token id) -> the token's SCRAM credential and its owner's principal.
TokenLookup = Callable[[str, str], tuple[scram.ScramCredential, str] | None]
TOKEN_AUTH_EXTENSION = "tokenauth"


class SaslAuthenticationError(Exception):
    """Authentication failed; the message is what the client is told."""


@dataclass(frozen=True, slots=True)
class ListenerSasl:
    """One SASL listener's settings."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    scram_lookup: ScramLookup = lambda mechanism, user: None
    token_lookup: TokenLookup = lambda mechanism, token_id: None


class SessionState(enum.Enum):
    HANDSHAKE = "handshake"  # ApiVersions or SaslHandshake expected
    AUTHENTICATE = "authenticate"  # SaslAuthenticate (or, after handshake v0, bare tokens)
    COMPLETE = "complete"
    FAILED = "failed"


_ALLOWED_API_KEYS = {
    SessionState.HANDSHAKE: frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}),
    SessionState.AUTHENTICATE: frozenset({ApiKey.SASL_AUTHENTICATE}),
}


class SaslServerSession:
    def __init__(self, settings: ListenerSasl) -> None:
        self._settings = settings
        self.state = SessionState.HANDSHAKE
        self.mechanism: str | None = None
        self.bare_tokens = False  # SaslHandshake v0: tokens without Kafka headers
        self.user: str | None = None
        # Authenticated with a delegation token (SCRAM with tokenauth=true): the principal is
        # the token's owner, and such a connection may not ask for tokens (Kafka's rule).
        self.token_owner: str | None = None
        self.failure: str | None = None  # why the connection closes after this response
        self._server: _MechanismServer | None = None

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        return self._settings.enabled_mechanisms

    @property
    def complete(self) -> bool:
        return self.state is SessionState.COMPLETE

    @property
    def principal(self) -> str | None:
        if self.token_owner is not None:
            return self.token_owner
        return None if self.user is None else f"User:{self.user}"

    @property
    def token_authenticated(self) -> bool:
        return self.token_owner is not None

    def refusal(self, api_key: int, api_name: str) -> str | None:
        """Why a request of `api_key` may not come now (None: it may)."""
        allowed = _ALLOWED_API_KEYS.get(self.state)
        if allowed is None or api_key in allowed:
            return None
        where = "handshake" if self.state is SessionState.HANDSHAKE else "authentication"
        return f"unexpected {api_name} request during SASL {where}"

    def handshake(self, mechanism: str, version: int) -> ErrorCode:
        if mechanism not in self._settings.enabled_mechanisms:
            self._fail(f"unsupported SASL mechanism {mechanism}")
            return ErrorCode.unsupported_sasl_mechanism
        self.mechanism = mechanism
        self.bare_tokens = version == 0
        self._server = (
            _PlainServer(self._settings.plain_users)
            if mechanism == PLAIN
            else _ScramServer(mechanism, self._settings.scram_lookup, self._settings.token_lookup)
        )
        self.state = SessionState.AUTHENTICATE
        return ErrorCode.none

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to one client token; raises SaslAuthenticationError."""
        if self._server is None or self.state is not SessionState.AUTHENTICATE:
            raise SaslAuthenticationError("SASL token before a SASL handshake")
        try:
            answer, user = self._server.evaluate(token)
        except SaslAuthenticationError as error:
            self._fail(f"authentication with {self.mechanism} failed: {error}")
            raise
        if user is not None:
            self.user = user
            if isinstance(self._server, _ScramServer):
                self.token_owner = self._server.token_owner
            self.state = SessionState.COMPLETE
            log.debug("authenticated User:%s with %s", user, self.mechanism)
        return answer

    def _fail(self, reason: str) -> None:
        self.state = SessionState.FAILED
        self.failure = reason


class _MechanismServer:
    def evaluate(self, token: bytes) -> tuple[bytes, str | None]:
        """(answer, the authenticated user once the exchange is complete)."""
        raise NotImplementedError


class _PlainServer(_MechanismServer):
    """RFC 4616, with Kafka's PlainSaslServer messages."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users

    def evaluate(self, token: bytes) -> tuple[bytes, str | None]:
        parts = token.decode("utf-8", errors="replace").split("\x00")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}"
            )
        authorization_id, user, password = parts
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is"
                " different from username"
            )
        return b"", user


class _ScramServer(_MechanismServer):
    def __init__(self, mechanism: str, lookup: ScramLookup, token_lookup: TokenLookup) -> None:
        self._mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._token_auth = False
        self._user: str | None = None
        self.token_owner: str | None = None
        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info)
        self._first_done = False

    def _auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        if self._token_auth:
            found = self._token_lookup(self._mechanism, user)
            if found is None:
                log.info("Token Authentication failed: Invalid tokenId : %s", user)
                return None
            credential, owner = found
            self.token_owner = owner
        else:
            maybe = self._lookup(self._mechanism, user)
            if maybe is None:
                return None
            credential = maybe
        self._user = user
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def evaluate(self, token: bytes) -> tuple[bytes, str | None]:
        try:
            message = token.decode("utf-8")
            if not self._first_done:
                self._first_done = True
                self._set_client_first(message)
                return self._server.get_server_first().encode(), None
            self._server.set_client_final(message)
            return self._server.get_server_final().encode(), self._user
        except (scramp.ScramException, UnicodeDecodeError) as error:
            # Kafka tells the client no more than this (the cause may reveal whether the
            # user exists); the log keeps the cause.
            log.info("%s authentication failed: %s", self._mechanism, error)
            raise SaslAuthenticationError(
                "Authentication failed during authentication due to invalid credentials"
                f" with SASL mechanism {self._mechanism}"
            ) from None

    def _set_client_first(self, message: str) -> None:
        """Kafka's client-first message may carry SCRAM extensions after the nonce
        (`,tokenauth=true`, RFC 5802's extensions with Kafka's multi-letter names), which
        `scramp` does not parse: they are read here and taken out for it, and the bare message
        it signs is put back whole, since the client's proof covers them."""
        header_end = message.find(",", message.find(",") + 1) + 1
        if header_end <= 0:
            raise scramp.ScramException("The client sent a malformed first message")
        bare = message[header_end:]
        attributes = bare.split(",")
        extensions = dict(
            part.split("=", 1) for part in attributes[2:] if "=" in part and part.index("=") > 1
        )
        self._token_auth = extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true"
        if extensions:
            kept = [p for p in attributes if not ("=" in p and p.index("=") > 1)]
            self._server.set_client_first(message[:header_end] + ",".join(kept))
            self._server.client_first_bare = bare
        else:
            self._server.set_client_first(message)


# -- the client side (this broker towards other brokers) ----------------------------------


@dataclass(frozen=True, slots=True)
class SaslClientConfig:
    mechanism: str
    username: str
    password: str
    # SCRAM with a delegation token: the token id as the user name, the base64 HMAC as the
    # password, and the `tokenauth=true` extension (Kafka's ScramLoginModule tokenauth option).
    token_auth: bool = False


class SaslClientExchange:
    """The client half: `first()`, then `answer(challenge)` until `complete`."""

    def __init__(self, config: SaslClientConfig) -> None:
        self._config = config
        self.complete = False
        self._scram: scramp.ScramClient | None = None
        self._step = 0

    def first(self) -> bytes:
        if self._config.mechanism == PLAIN:
            return f"\x00{self._config.username}\x00{self._config.password}".encode()
        self._scram = scramp.ScramClient(
            [self._config.mechanism], self._config.username, self._config.password
        )
        first = str(self._scram.get_client_first())
        if self._config.token_auth:
            extension = f",{TOKEN_AUTH_EXTENSION}=true"
            self._scram.client_first_bare += extension  # the proof covers the extension
            first += extension
        return first.encode()

    def answer(self, challenge: bytes) -> bytes | None:
        """The next token, or None when the exchange is over (raises ScramException or
        ValueError when the server's answer does not check out)."""
        self._step += 1
        if self._scram is None:
            self.complete = True
            return None
        if self._step == 1:
            self._scram.set_server_first(challenge.decode("utf-8"))
            return str(self._scram.get_client_final()).encode()
        self._scram.set_server_final(challenge.decode("utf-8"))
        self.complete = True
        return None
