"""ACLs and the authorization decision, pure (no I/O): what Kafka's AclAuthorizer decides.

The codes are Kafka's (org.apache.kafka.common.resource / acl enums, as the ACL APIs carry
them); the names are the ones Kafka writes into the ACL znodes. Decision rules:

- a super user is allowed everything;
- a DENY that matches (its operation or All, its principal or `User:*`, its host or `*`)
  refuses, whatever ALLOWs exist;
- an ALLOW of the operation, of All, or of an operation implying it allows: Read, Write,
  Delete and Alter imply Describe; AlterConfigs implies DescribeConfigs;
- with no ACL at all on the resource, `allow.everyone.if.no.acl.found` decides.

ACLs apply to a resource through literal patterns of its name, the literal `*` wildcard, and
prefixed patterns that its name starts with. An ACL's host matches a client whose address is
the same IP address in any notation (`::1` and Java's `0:0:0:0:0:0:0:1`).
"""

from __future__ import annotations

import enum
import functools
import ipaddress
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


RESOURCE_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
OPERATION_NAMES = {
    Operation.ALL: "All",
    Operation.READ: "Read",
    Operation.WRITE: "Write",
    Operation.CREATE: "Create",
    Operation.DELETE: "Delete",
    Operation.ALTER: "Alter",
    Operation.DESCRIBE: "Describe",
    Operation.CLUSTER_ACTION: "ClusterAction",
    Operation.DESCRIBE_CONFIGS: "DescribeConfigs",
    Operation.ALTER_CONFIGS: "AlterConfigs",
    Operation.IDEMPOTENT_WRITE: "IdempotentWrite",
    Operation.CREATE_TOKENS: "CreateTokens",
    Operation.DESCRIBE_TOKENS: "DescribeTokens",
}
PERMISSION_NAMES = {Permission.ALLOW: "Allow", Permission.DENY: "Deny"}
RESOURCE_TYPES_BY_NAME = {name: value for value, name in RESOURCE_TYPE_NAMES.items()}
OPERATIONS_BY_NAME = {name: value for value, name in OPERATION_NAMES.items()}
PERMISSIONS_BY_NAME = {name: value for value, name in PERMISSION_NAMES.items()}

# Operation -> the operations whose ALLOW also allows it (besides itself and All).
IMPLIED_BY = {
    Operation.DESCRIBE: frozenset(
        {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


class InvalidAclError(ValueError):
    """An ACL or filter Kafka refuses (INVALID_REQUEST); the message says why."""


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: Operation
    permission: Permission


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A DescribeAcls / DeleteAcls filter: None (null) and the ANY codes match everything."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH) and self.name is None:
            return True
        if self.pattern_type == PatternType.MATCH:
            # Every pattern that would apply to a resource of this name.
            return pattern_applies(pattern, pattern.resource_type, self.name or "")
        if self.pattern_type not in (PatternType.ANY, pattern.pattern_type):
            return False
        return self.name is None or self.name == pattern.name

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return (
            self.principal in (None, entry.principal)
            and self.host in (None, entry.host)
            and self.operation in (Operation.ANY, entry.operation)
            and self.permission in (Permission.ANY, entry.permission)
        )


def validate_binding(binding: AclBinding) -> None:
    """Kafka's checks of an ACL to create (CreateAcls answers INVALID_REQUEST)."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidAclError("The only valid name for the CLUSTER resource is kafka-cluster")
    if not pattern.name:
        raise InvalidAclError("Invalid empty resource name")
    if "/" in pattern.name:
        # The name is a znode's: /kafka-acl/Group/a/b would nest, and no broker would load it.
        # Kafka's AclAuthorizer refuses it with this message (the cause stays in its log).
        raise InvalidAclError("Failed to create ACL")
    if pattern.resource_type not in RESOURCE_TYPE_NAMES or pattern.resource_type == (
        ResourceType.USER
    ):
        raise InvalidAclError(f"Invalid resource type: {pattern.resource_type.name}")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid pattern type: {pattern.pattern_type.name}")
    if pattern.pattern_type == PatternType.PREFIXED and pattern.name == WILDCARD_RESOURCE:
        raise InvalidAclError("Prefixed ACLs with the wildcard resource name are not valid")
    if entry.operation not in OPERATION_NAMES:
        raise InvalidAclError(f"Invalid operation: {entry.operation.name}")
    if entry.permission not in PERMISSION_NAMES:
        raise InvalidAclError(f"Invalid permission type: {entry.permission.name}")
    if ":" not in entry.principal:
        raise InvalidAclError(f"Invalid principal: {entry.principal}")
    if not entry.host:
        raise InvalidAclError("Host should not be empty")


def validate_filter(acl_filter: AclBindingFilter) -> None:
    """Kafka refuses filters with an UNKNOWN field (INVALID_REQUEST)."""
    for value in (
        acl_filter.resource_type,
        acl_filter.pattern_type,
        acl_filter.operation,
        acl_filter.permission,
    ):
        if value == 0:
            raise InvalidAclError(f"Invalid filter: {type(value).__name__} UNKNOWN")


def pattern_applies(pattern: ResourcePattern, resource_type: ResourceType, name: str) -> bool:
    """Does an ACL on `pattern` govern the resource (resource_type, name)?"""
    if pattern.resource_type != resource_type:
        return False
    if pattern.pattern_type == PatternType.LITERAL:
        return pattern.name in (name, WILDCARD_RESOURCE)
    if pattern.pattern_type == PatternType.PREFIXED:
        return name.startswith(pattern.name)
    return False


@functools.lru_cache(maxsize=4096)
def canonical_host(host: str) -> str:
    """One spelling per IP address (an IPv4-mapped IPv6 address as its IPv4 address, as Java
    reports it); anything else (`*`, a name) as it is."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def host_matches(acl_host: str, client_host: str) -> bool:
    return acl_host == WILDCARD_HOST or canonical_host(acl_host) == canonical_host(client_host)


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


def _is_mine(entry: AccessControlEntry, principal: str, host: str) -> bool:
    return entry.principal in (principal, WILDCARD_PRINCIPAL) and host_matches(entry.host, host)


def decide(
    settings: AuthorizerSettings,
    applicable: Sequence[AccessControlEntry],
    principal: str,
    host: str,
    operation: Operation,
) -> bool:
    """The decision for one action, from the entries of the ACLs on its resource."""
    if principal in settings.super_users:
        return True
    if not applicable:
        return settings.allow_everyone_if_no_acl_found
    mine = [entry for entry in applicable if _is_mine(entry, principal, host)]
    if any(
        entry.permission == Permission.DENY and entry.operation in (operation, Operation.ALL)
        for entry in mine
    ):
        return False
    allowing = {operation, Operation.ALL} | IMPLIED_BY.get(operation, frozenset())
    return any(
        entry.permission == Permission.ALLOW and entry.operation in allowing for entry in mine
    )


def allows_any(
    settings: AuthorizerSettings,
    acls: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
) -> bool:
    """Is there some resource of this type the principal may act on (Kafka's
    authorizeByResourceType, simplified: an ALLOW of the operation or All whose pattern no
    DENY of the same principal covers by the same or a wider pattern)? Write on any topic
    lets an idempotent producer in without IdempotentWrite on the cluster (KIP-679)."""
    if principal in settings.super_users:
        return True
    mine = [
        b
        for b in acls
        if b.pattern.resource_type == resource_type
        and _is_mine(b.entry, principal, host)
        and b.entry.operation in (operation, Operation.ALL)
    ]
    denied_everything = any(
        b.entry.permission == Permission.DENY
        and b.pattern == ResourcePattern(resource_type, WILDCARD_RESOURCE, PatternType.LITERAL)
        for b in mine
    )
    if denied_everything:
        return False
    if settings.allow_everyone_if_no_acl_found:
        return True  # as Kafka: some resource of the type surely has no ACL
    return any(b.entry.permission == Permission.ALLOW for b in mine)


_Entries = frozenset[AccessControlEntry]


class AclIndex:
    """The ACLs by resource, as Kafka's AclAuthorizer caches them: a decision reads the literal
    entries of its name and of `*`, and the prefixed entries of each prefix length in use for
    its resource type, so it costs O(the ACLs that apply), not O(all ACLs). Updated one pattern
    at a time, as change notifications arrive."""

    def __init__(self) -> None:
        self._by_type: dict[ResourceType, dict[ResourcePattern, _Entries]] = {}
        self._literal: dict[tuple[ResourceType, str], tuple[AccessControlEntry, ...]] = {}
        self._prefixed: dict[tuple[ResourceType, str], tuple[AccessControlEntry, ...]] = {}
        self._prefix_lengths: dict[ResourceType, Counter[int]] = {}

    def get(self, pattern: ResourcePattern) -> _Entries:
        return self._by_type.get(pattern.resource_type, {}).get(pattern, frozenset())

    def set(self, pattern: ResourcePattern, entries: _Entries) -> None:
        """The pattern's entries are now `entries` (none: the pattern has no ACL left)."""
        patterns = self._by_type.setdefault(pattern.resource_type, {})
        prefixed = pattern.pattern_type == PatternType.PREFIXED
        table = self._prefixed if prefixed else self._literal
        key = (pattern.resource_type, pattern.name)
        lengths = self._prefix_lengths.setdefault(pattern.resource_type, Counter())
        if prefixed and pattern in patterns:
            lengths[len(pattern.name)] -= 1
        if entries:
            patterns[pattern] = entries
            table[key] = tuple(sorted(entries))
            if prefixed:
                lengths[len(pattern.name)] += 1
        else:
            patterns.pop(pattern, None)
            table.pop(key, None)
        if prefixed and lengths[len(pattern.name)] <= 0:
            del lengths[len(pattern.name)]

    def matching(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """The entries of every ACL that applies to the resource (`pattern_applies`)."""
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD_RESOURCE:
            found += self._literal.get((resource_type, WILDCARD_RESOURCE), ())
        for length in self._prefix_lengths.get(resource_type, ()):
            if length <= len(name):
                found += self._prefixed.get((resource_type, name[:length]), ())
        return found

    def of_type(self, resource_type: ResourceType) -> list[AclBinding]:
        patterns = self._by_type.get(resource_type, {})
        return [AclBinding(p, e) for p, entries in patterns.items() for e in entries]

    def bindings(self) -> list[AclBinding]:
        """Every ACL, sorted by pattern and entry."""
        patterns = sorted(p for by_pattern in self._by_type.values() for p in by_pattern)
        return [AclBinding(p, e) for p in patterns for e in sorted(self.get(p))]
