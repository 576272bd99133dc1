"""Actions need the lab's CSRF token; the lab answers loopback host names only."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _lab.security import CsrfGuard, allowed_hosts


def test_the_token_is_accepted_and_nothing_else() -> None:
    guard = CsrfGuard()
    assert guard.accepts(guard.token)
    assert not guard.accepts(None)
    assert not guard.accepts("")
    assert not guard.accepts(guard.token[:-1])
    assert not guard.accepts(guard.token + "x")


def test_each_lab_process_has_its_own_random_token() -> None:
    assert CsrfGuard().token != CsrfGuard().token
    assert len(CsrfGuard().token) >= 40


def test_loopback_names_only_unless_binding_everywhere() -> None:
    assert allowed_hosts("127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert "10.0.0.5" in allowed_hosts("10.0.0.5")
    assert "evil.example" not in allowed_hosts("127.0.0.1")
    assert allowed_hosts("0.0.0.0") == ["*"]
