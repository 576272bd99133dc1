"""SCRAM credentials (RFC 5802, RFC 7677) as Kafka keeps them, with `scramp` doing the crypto.

A user's credential for one mechanism is stored in ZooKeeper under `/config/users/<user>`,
keyed by the mechanism name, in Kafka's ScramCredentialUtils text form:

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>

The znode's name is the user name sanitized as Kafka's Sanitizer does it (URL-encoded, `*`
as %2A, a space as %20).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import scramp
from scramp import utils as scramp_utils

SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
# Kafka's ScramMechanism: name -> (type byte of the admin API, hash, minimum iterations).
_HASHES: dict[str, Callable[..., Any]] = {
    SCRAM_SHA_256: hashlib.sha256,
    SCRAM_SHA_512: hashlib.sha512,
}
MECHANISM_TYPES: dict[str, int] = {SCRAM_SHA_256: 1, SCRAM_SHA_512: 2}
MECHANISM_NAMES: dict[int, str] = {value: name for name, value in MECHANISM_TYPES.items()}
SCRAM_MECHANISMS = tuple(MECHANISM_TYPES)
MIN_ITERATIONS = 4096
# What AlterUserScramCredentials accepts (Kafka's ZkAdminManager bound).
MAX_ALTER_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


class CredentialFormatError(ValueError):
    """A stored credential is not in Kafka's text form."""


CREDENTIAL_FIELDS = ("salt", "stored_key", "server_key", "iterations")


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString."""

        def encode(data: bytes) -> str:
            return base64.b64encode(data).decode("ascii")

        return (
            f"salt={encode(self.salt)},stored_key={encode(self.stored_key)},"
            f"server_key={encode(self.server_key)},iterations={self.iterations}"
        )

    @staticmethod
    def from_text(text: str) -> ScramCredential:
        """Kafka's ScramCredentialUtils.credentialFromString: exactly the four fields. An
        error names the field at fault, never a value: the text is a secret."""
        fields: dict[str, str] = {}
        for position, token in enumerate(text.split(","), start=1):
            name, separator, value = token.partition("=")
            if not separator or not name:
                raise CredentialFormatError(
                    f"credentials not valid: item {position} is not a name=value pair"
                )
            fields[name] = value
        if set(fields) != set(CREDENTIAL_FIELDS):
            raise CredentialFormatError(
                "credentials not valid: the fields must be " + ", ".join(CREDENTIAL_FIELDS)
            )
        return ScramCredential(
            salt=_base64_field(fields, "salt"),
            stored_key=_base64_field(fields, "stored_key"),
            server_key=_base64_field(fields, "server_key"),
            iterations=_iterations_field(fields["iterations"]),
        )


def _base64_field(fields: dict[str, str], name: str) -> bytes:
    try:
        return base64.b64decode(fields[name], validate=True)
    except (binascii.Error, ValueError):
        raise CredentialFormatError(f"credentials not valid: {name} is not base64") from None


def _iterations_field(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CredentialFormatError("credentials not valid: iterations is not a number") from None


def credential_from_password(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A new credential (a random salt unless given), as kafka-configs --zookeeper makes it."""
    salt_bytes, stored_key, server_key, count = scramp.ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=iterations, salt=salt
    )
    return ScramCredential(salt_bytes, stored_key, server_key, count)


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials stores: the client sends SaltedPassword = Hi(password,
    salt, i); the server keeps StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
    ServerKey = HMAC(SaltedPassword, "Server Key") (RFC 5802 section 3)."""
    hash_function = _HASHES[mechanism]
    client_key = scramp_utils.hmac(hash_function, salted_password, b"Client Key")
    stored_key = scramp_utils.h(hash_function, client_key)
    server_key = scramp_utils.hmac(hash_function, salted_password, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): what a client sends in AlterUserScramCredentials."""
    return bytes(scramp_utils.hi(_HASHES[mechanism], password.encode(), salt, iterations))


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: a user name as a znode name (URL encoding as Java's
    URLEncoder, with `*` and a space percent-encoded)."""
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)
