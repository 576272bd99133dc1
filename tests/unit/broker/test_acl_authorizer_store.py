"""AclAuthorizer's ZooKeeper writes and cache, against an in-memory ZooKeeper: Kafka's znodes,
conditional updates, change notifications (a failed pass retried on a timer), and the purge of
expired notifications."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from broker.cluster.change_notifications import NOTIFICATION_EXPIRY_MS
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AuthorizerSettings,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from broker.security.authorizer import AclAuthorizer
from zk.errors import BadVersionError, ConnectionLossError, NodeExistsError, NoNodeError


class FakeZk:
    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int, int]] = {}  # path -> (data, version, ctime_ms)
        self.sequence = 0
        self.watches: dict[str, list[Callable[[], None]]] = {}

    def _stat(self, path: str) -> Any:
        _, version, ctime_ms = self.nodes[path]
        return SimpleNamespace(version=version, ctime_ms=ctime_ms)

    async def get(self, path: str) -> tuple[bytes, Any] | None:
        return (self.nodes[path][0], self._stat(path)) if path in self.nodes else None

    async def get_many(self, paths: list[str]) -> list[tuple[bytes, Any] | None]:
        return [await self.get(p) for p in paths]

    async def get_children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.nodes if p.startswith(prefix)})

    async def ensure_path(self, path: str) -> None:
        self.nodes.setdefault(path, (b"", 0, 0))

    async def create(
        self, path: str, data: bytes = b"", sequence: bool = False, makepath: bool = False
    ) -> str:
        if sequence:
            path = f"{path}{self.sequence:010d}"
            self.sequence += 1
        if path in self.nodes:
            raise NodeExistsError(path)
        self.nodes[path] = (data, 0, int(time.time() * 1000))
        parent = path.rsplit("/", 1)[0]
        for callback in self.watches.get(parent, []):
            callback()
        return path

    async def set(self, path: str, data: bytes, version: int = -1) -> None:
        if path not in self.nodes:
            raise NoNodeError(path)
        if version not in (-1, self.nodes[path][1]):
            raise BadVersionError(path)
        self.nodes[path] = (data, self.nodes[path][1] + 1, self.nodes[path][2])

    async def delete(self, path: str, version: int = -1) -> None:
        if path not in self.nodes:
            raise NoNodeError(path)
        del self.nodes[path]

    def watch_children(self, path: str, callback: Callable[[], None]) -> None:
        self.watches.setdefault(path, []).append(callback)


async def _eventually(condition: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    """Wait (yielding to the loop) until `condition` holds; fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.01)


READ = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL),
    AccessControlEntry("User:alice", "*", Operation.READ, Permission.ALLOW),
)
PREFIXED_WRITE = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "t-", PatternType.PREFIXED),
    AccessControlEntry("User:alice", "*", Operation.WRITE, Permission.ALLOW),
)


def test_add_writes_kafkas_znodes_and_notifications_and_another_broker_follows() -> None:
    async def run() -> None:
        zk = FakeZk()
        writer = AclAuthorizer(zk, AuthorizerSettings())  # type: ignore[arg-type]
        follower = AclAuthorizer(zk, AuthorizerSettings())  # type: ignore[arg-type]
        await writer.start()
        await follower.start()
        await writer.add([READ, PREFIXED_WRITE])
        assert zk.nodes["/kafka-acl/Topic/t"][0] == (
            b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
            b'"operation":"Read","host":"*"}]}'
        )
        assert "/kafka-acl-extended/prefixed/Topic/t-" in zk.nodes
        assert zk.nodes["/kafka-acl-changes/acl_changes_0000000000"][0] == b"Topic:t"
        await _eventually(
            lambda: (
                follower.authorize("User:alice", "h", Operation.READ, ResourceType.TOPIC, "t")
                and follower.authorize(
                    "User:alice", "h", Operation.WRITE, ResourceType.TOPIC, "t-1"
                )
            ),
            "the follower's notification passes",
        )
        everything = AclBindingFilter(
            ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY
        )
        deleted = await follower.remove([everything])
        assert sorted(b.pattern.name for b in deleted[0]) == ["t", "t-"]
        assert "/kafka-acl/Topic/t" not in zk.nodes
        await _eventually(
            lambda: (
                not writer.authorize("User:alice", "h", Operation.READ, ResourceType.TOPIC, "t")
            ),
            "the writer to follow the follower's removal",
        )

    asyncio.run(run())


def test_start_creates_kafkas_acl_paths() -> None:
    """As Kafka's createAclPaths: both stores' roots, a znode per resource type under each,
    and both change directories, before any ACL exists."""

    async def run() -> None:
        zk = FakeZk()
        await AclAuthorizer(zk, AuthorizerSettings()).start()  # type: ignore[arg-type]
        types = ["Cluster", "DelegationToken", "Group", "Topic", "TransactionalId", "User"]
        for root in ("/kafka-acl", "/kafka-acl-extended/prefixed"):
            assert await zk.get_children(root) == types
        assert "/kafka-acl-changes" in zk.nodes and "/kafka-acl-extended-changes" in zk.nodes

    asyncio.run(run())


def test_expired_notifications_are_purged() -> None:
    async def run() -> None:
        zk = FakeZk()
        authorizer = AclAuthorizer(zk, AuthorizerSettings())  # type: ignore[arg-type]
        await authorizer.start()
        old = "/kafka-acl-changes/acl_changes_0000000099"
        zk.nodes[old] = (b"Topic:x", 0, 1000)  # created long before NOTIFICATION_EXPIRY_MS
        assert NOTIFICATION_EXPIRY_MS < 10**12
        await authorizer.add([READ])
        await _eventually(lambda: old not in zk.nodes, "the purge of the expired notification")

    asyncio.run(run())


class FlakyZk:
    """Another broker's session to the same ZooKeeper, whose next listing of `fail_next`
    fails."""

    def __init__(self, zk: FakeZk) -> None:
        self._zk = zk
        self.fail_next: str | None = None
        self.failures: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._zk, name)

    async def get_children(self, path: str) -> list[str]:
        if path == self.fail_next:
            self.fail_next = None
            self.failures.append(path)
            raise ConnectionLossError(path)
        return await self._zk.get_children(path)


def test_a_notification_pass_that_fails_is_retried_on_a_timer() -> None:
    """ZooKeeper fails the follower's pass: it reads the change again by itself, with no
    further notification to wake it (a revoked ALLOW must not stay in force)."""

    async def run() -> None:
        zk = FakeZk()
        follower_zk = FlakyZk(zk)
        writer = AclAuthorizer(zk, AuthorizerSettings())  # type: ignore[arg-type]
        follower = AclAuthorizer(follower_zk, AuthorizerSettings())  # type: ignore[arg-type]
        await writer.start()
        await follower.start()
        follower_zk.fail_next = "/kafka-acl-changes"
        failures = follower_zk.failures
        await writer.add([READ])
        await _eventually(lambda: bool(failures), "the failed pass")
        await _eventually(
            lambda: follower.authorize("User:alice", "h", Operation.READ, ResourceType.TOPIC, "t"),
            "the follower to read the ACL on its retry",
        )
        await writer.stop()
        await follower.stop()

    asyncio.run(run())
