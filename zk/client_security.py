"""How ZkClient's kazoo sessions are made, logged in to ZooKeeper and stopped, and which ACLs
the znodes it creates get (Kafka's zookeeper.set.acl, zk.zk_security.default_acls).

The login is SASL DIGEST-MD5 (kazoo with pure-sasl). kazoo reports a session before its login
has an outcome, so a start waits for that outcome (zk.kazoo_extensions.start_and_log_in) and
turns a refusal or a silence into ZkClient's errors. Part of the ZooKeeper client: with
zk/client.py and zk/kazoo_extensions.py, the only modules that import kazoo.
"""

from __future__ import annotations

from typing import Any

from kazoo import exceptions as kazoo_errors
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from zk import errors
from zk.answer_clock import AnswerClock
from zk.kazoo_extensions import (
    PollingHandler,
    kazoo_acls,
    report_granted_timeouts,
    sasl_options,
    start_and_log_in,
)
from zk.zk_security import ZkSaslCredentials, default_acls

# Reconnection back-off: short, because a broker that cannot see ZooKeeper is useless and
# kazoo's default (up to 60 s between attempts) would keep it away long after ZooKeeper is back.
_RECONNECT_DELAY_S = 0.1
_RECONNECT_MAX_DELAY_S = 1.0


def creation_acls(secure_acls: bool, path: str) -> list[Any]:
    """The ACL of a znode created at `path` (Kafka's ZkData.defaultAcls), in kazoo's terms."""
    return kazoo_acls(default_acls(secure_acls, path))


def new_session(
    hosts: str,
    session_timeout_ms: int,
    sasl: ZkSaslCredentials | None,
    clock: AnswerClock | None = None,
) -> Any:
    """A kazoo client, not started, that logs in as `sasl` when given and, with `clock`,
    reports there when ZooKeeper answers it and the session timeout it grants."""
    retry = KazooRetry(
        max_tries=-1, delay=_RECONNECT_DELAY_S, backoff=2, max_delay=_RECONNECT_MAX_DELAY_S
    )
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout_ms / 1000.0,
        connection_retry=retry,
        handler=PollingHandler(clock),
        sasl_options=None if sasl is None else sasl_options(sasl),
    )
    if clock is not None:
        report_granted_timeouts(client, clock)
    return client


def start_logged_in(
    session: Any, hosts: str, connection_timeout_ms: int, sasl: ZkSaslCredentials | None
) -> None:
    """Start `session` (blocking), logged in when `sasl` is given. Without a session it is
    stopped again and the start raises AuthFailedError (ZooKeeper refused the login) or
    ConnectionLossError (kazoo failed, or nothing within the connection timeout)."""
    try:
        outcome = start_and_log_in(session, connection_timeout_ms / 1000.0, sasl is not None)
    except kazoo_errors.KazooException as exc:
        stop(session)
        message = f"cannot connect to ZooKeeper {hosts}: {exc}"
        raise errors.ConnectionLossError(message) from exc
    if outcome == "connected":
        return
    stop(session)
    if outcome == "refused":
        user = sasl.username if sasl else "?"
        raise errors.AuthFailedError(
            f"ZooKeeper {hosts} refused SASL (DIGEST-MD5) authentication as {user}"
        )
    raise errors.ConnectionLossError(
        f"cannot connect to ZooKeeper {hosts} within {connection_timeout_ms} ms"
    )


def stop(session: Any) -> None:
    """Stop `session` (blocking) and release its threads."""
    try:
        session.stop()
    finally:
        session.close()
