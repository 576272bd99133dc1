"""The CSRF token that every action request must carry, and the hosts the lab answers."""

from __future__ import annotations

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
