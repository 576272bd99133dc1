"""Actions need the lab's CSRF token; the lab answers loopback host names only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _lab.security import (
    CsrfGuard,
    actions_allowed_on,
    allowed_hosts,
    is_secret_znode,
    redact_znode,
)


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


def test_actions_are_served_on_loopback_only() -> None:
    assert actions_allowed_on("127.0.0.1") and actions_allowed_on("::1")
    assert not actions_allowed_on("0.0.0.0")
    assert not actions_allowed_on("10.0.0.5")


def test_a_scram_users_credentials_are_never_shown() -> None:
    stored = (
        '{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,stored_key=a2V5,'
        'server_key=c2s=,iterations=4096"}}'
    )
    assert is_secret_znode("/config/users/alice")
    assert not is_secret_znode("/config/topics/t")
    shown = redact_znode(stored)
    assert json.loads(shown) == {"version": 1, "config": {"SCRAM-SHA-256": "[redacted]"}}
    assert "c2FsdA" not in shown and "4096" not in shown
    assert redact_znode("not json") == "[redacted]"
    assert redact_znode(None) == "[redacted]"
