"""ZooKeeper's own security: who a client is to ZooKeeper, and the ACLs Kafka's brokers give
the znodes they create (`ZkData.defaultAcls`).

With `zookeeper.set.acl=false` (Kafka's default) every znode is open to everyone. With
`zookeeper.set.acl=true` a znode gets "all" for the identity that created it (ZooKeeper's
`auth` scheme stands for the session's authenticated ids, e.g. `sasl:kafka`) and "read" for
everyone, except where Kafka keeps secrets: under `/config/users` (SCRAM credentials),
`/config/brokers` (broker passwords) and `/delegation_token/tokens`, nobody else may even read.
`/consumers` stays open either way: the old consumers of other principals write under it.

Paths are those the client sees (relative to a chroot), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ZkSaslCredentials:
    """SASL DIGEST-MD5, as a JAAS `Client` section's DigestLoginModule gives it to Kafka's
    ZooKeeper client. `service_name` is zookeeper.sasl.client.username."""

    username: str
    password: str = field(repr=False)
    service_name: str = "zookeeper"


# ZooDefs.Perms bits.
READ = 1
WRITE = 2
CREATE = 4
DELETE = 8
ADMIN = 16
ALL = READ | WRITE | CREATE | DELETE | ADMIN


@dataclass(frozen=True, slots=True)
class ZkAcl:
    """One entry of a znode's ACL: `perms` (bits above) for `id` under `scheme`."""

    perms: int
    scheme: str
    id: str


# ZooDefs.Ids.
CREATOR_ALL_ACL = (ZkAcl(ALL, "auth", ""),)
READ_ACL_UNSAFE = (ZkAcl(READ, "world", "anyone"),)
OPEN_ACL_UNSAFE = (ZkAcl(ALL, "world", "anyone"),)

CONSUMERS_PATH = "/consumers"
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token/tokens")


def sensitive_path(path: str) -> bool:
    # A prefix test, as Kafka's: /config/users itself is sensitive too.
    return any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS)


def default_acls(secure: bool, path: str) -> tuple[ZkAcl, ...]:
    """What Kafka creates `path` with."""
    if not secure or path == CONSUMERS_PATH:
        return OPEN_ACL_UNSAFE
    if sensitive_path(path):
        return CREATOR_ALL_ACL
    return CREATOR_ALL_ACL + READ_ACL_UNSAFE


_PERM_LETTERS = ((CREATE, "c"), (DELETE, "d"), (READ, "r"), (WRITE, "w"), (ADMIN, "a"))


def perms_text(perms: int) -> str:
    """zkCli's `getAcl` letters, in its order: 31 -> 'cdrwa', 1 -> 'r'."""
    return "".join(letter for bit, letter in _PERM_LETTERS if perms & bit)


def describe(acls: Sequence[ZkAcl]) -> list[str]:
    """A znode's ACL as zkCli's `getAcl` prints it, two lines per entry."""
    lines: list[str] = []
    for acl in acls:
        lines += [f"'{acl.scheme},'{acl.id}", f": {perms_text(acl.perms)}"]
    return lines
