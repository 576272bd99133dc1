"""The delegation-token znodes, as Kafka's ZkDelegationTokenManager writes them: one znode per
token under /delegation_token/tokens and a sequential change notification per change."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from zk.znodes import ZnodeDecodeError, _int, _ordered, dump_json, load_json_object


class DelegationTokenChangeNotificationSequenceZNode:
    """/delegation_token/token_changes/token_change_<seq>: the id of a token created, changed
    or removed, for every broker to re-read (Kafka's DelegationTokenChangeNotification*)."""

    SEQUENCE_PREFIX = "token_change_"

    @staticmethod
    def directory() -> str:
        return "/delegation_token/token_changes"

    @classmethod
    def create_path(cls) -> str:
        return f"{cls.directory()}/{cls.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(token_id: str) -> bytes:
        return token_id.encode()

    @staticmethod
    def decode(data: bytes) -> str:
        return data.decode()


@dataclass(frozen=True, slots=True)
class DelegationTokenInfo:
    """A token as /delegation_token/tokens/<id> keeps it (Kafka's TokenInformation; principals
    as "Type:name" strings, timestamps in ms). The HMAC is not stored: every broker derives it
    from the token id and `delegation.token.secret.key`."""

    token_id: str
    owner: str
    token_requester: str
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    max_timestamp_ms: int
    expiry_timestamp_ms: int


class DelegationTokenInfoZNode:
    """Kafka's DelegationTokenInfoZNode, version 3 (with the token requester); principals are
    stored sanitized (URL-encoded) as Kafka's Sanitizer writes them."""

    VERSION = 3
    # Kafka builds it as an 8-entry Scala immutable HashMap (a mutable map's toMap); this is
    # that map's iteration order (it depends on the keys' hashes only).
    _ORDER = (
        "issueTimestamp",
        "renewers",
        "tokenRequester",
        "tokenId",
        "owner",
        "expiryTimestamp",
        "maxTimestamp",
        "version",
    )

    @staticmethod
    def tokens_path() -> str:
        return "/delegation_token/tokens"

    @classmethod
    def path(cls, token_id: str) -> str:
        return f"{cls.tokens_path()}/{token_id}"

    @classmethod
    def encode(cls, token: DelegationTokenInfo) -> bytes:
        values = {
            "version": cls.VERSION,
            "owner": _sanitize(token.owner),
            "tokenRequester": _sanitize(token.token_requester),
            "renewers": [_sanitize(r) for r in token.renewers],
            "issueTimestamp": token.issue_timestamp_ms,
            "maxTimestamp": token.max_timestamp_ms,
            "expiryTimestamp": token.expiry_timestamp_ms,
            "tokenId": token.token_id,
        }
        return dump_json(_ordered(values, cls._ORDER))

    @classmethod
    def decode(cls, data: bytes) -> DelegationTokenInfo:
        what = "delegation token"
        obj = load_json_object(data, what)
        version = _int(obj, "version", what)
        if not 0 < version <= cls.VERSION:
            raise ZnodeDecodeError(f"{what}: unknown version {version}")
        owner = urllib.parse.unquote(str(obj.get("owner")))
        requester = owner
        if version >= 3:
            requester = urllib.parse.unquote(str(obj.get("tokenRequester")))
        renewers = obj.get("renewers")
        if not isinstance(renewers, list):
            raise ZnodeDecodeError(f"{what}: renewers is not a list: {data!r}")
        return DelegationTokenInfo(
            token_id=str(obj.get("tokenId")),
            owner=owner,
            token_requester=requester,
            renewers=tuple(urllib.parse.unquote(str(r)) for r in renewers),
            issue_timestamp_ms=_int(obj, "issueTimestamp", what),
            max_timestamp_ms=_int(obj, "maxTimestamp", what),
            expiry_timestamp_ms=_int(obj, "expiryTimestamp", what),
        )


def _sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize (Java's URLEncoder, with `*` and spaces percent-encoded)."""
    return urllib.parse.quote(name, safe="").replace("~", "%7E")
