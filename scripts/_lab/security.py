"""The CSRF token that every action request must carry, the hosts the lab answers, where
actions may be served, and the secrets the znode browser never shows."""

from __future__ import annotations

import json
import secrets

CSRF_HEADER = "x-lab-csrf-token"
TOKEN_BYTES = 32


class CsrfGuard:
    """One random token per lab process, embedded in the page; an action without it (or with
    another) is refused. Compared in constant time."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token if token is not None else secrets.token_urlsafe(TOKEN_BYTES)

    def accepts(self, presented: str | None) -> bool:
        if not presented:
            return False
        return secrets.compare_digest(presented.encode(), self.token.encode())


def allowed_hosts(host: str) -> list[str]:
    """Host headers the lab answers: loopback names and the address it binds. A page from
    another site that rebinds its name to 127.0.0.1 sends its own name and is refused."""
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    if host not in ("0.0.0.0", "::") and host not in hosts:
        hosts.append(host if ":" not in host else f"[{host}]")
    if host in ("0.0.0.0", "::"):
        return ["*"]
    return hosts


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SCRAM_USERS_PATH = "/config/users/"
REDACTED = "[redacted]"


def actions_allowed_on(host: str) -> bool:
    """Actions only on loopback: the page hands its token to whoever loads it, so anyone
    who could reach a lab bound elsewhere could kill the cluster's processes."""
    return host in LOOPBACK_HOSTS


def is_secret_znode(path: str) -> bool:
    """A SCRAM user's credentials (salt, stored and server keys: enough to impersonate the
    user to these brokers)."""
    return path.startswith(SCRAM_USERS_PATH)


def redact_znode(text: str | None) -> str:
    """A secret znode's JSON with its shape but without its values."""
    if text is None:
        return REDACTED
    try:
        stored = json.loads(text)
        config = stored["config"]
    except (ValueError, KeyError, TypeError):
        return REDACTED
    if not isinstance(config, dict):
        return REDACTED
    stored["config"] = {name: REDACTED for name in config}
    return json.dumps(stored, separators=(",", ":"))
