"""Kafka's ZooKeeper-mode AclAuthorizer: ACLs in ZooKeeper, a cache on every broker.

`authorizer.class.name=kafka.security.authorizer.AclAuthorizer` turns it on (empty: no
authorization, every request allowed). At start-up every ACL znode is read; afterwards a
change notification (`/kafka-acl-changes` for literal patterns, `/kafka-acl-extended-changes`
for prefixed ones) makes each broker re-read the one resource it names, so an ACL added or
removed through any broker is in force on all of them within a ZooKeeper round trip.

Any broker writes ACLs (CreateAcls / DeleteAcls need no controller): read the resource's
znode, change its set, write it back conditionally on the znode version (retrying a lost
race), then create the notification, as Kafka's AclAuthorizer.updateResourceAcls does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable

from broker.cluster.change_notifications import ChangeNotificationListener
from broker.security.acl import OPERATION_NAMES as _OPERATION_NAMES
from broker.security.acl import (
    OPERATIONS_BY_NAME,
    PERMISSIONS_BY_NAME,
    RESOURCE_TYPE_NAMES,
    RESOURCE_TYPES_BY_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclIndex,
    AuthorizerSettings,
    Operation,
    PatternType,
    ResourcePattern,
    ResourceType,
    allows_any,
    decide,
)
from broker.security.acl import PERMISSION_NAMES as _PERMISSION_NAMES
from zk.acl_znodes import AclChangeNotificationZNode, AclEntryJson, AclZNode
from zk.client import ZkClient
from zk.errors import BadVersionError, NodeExistsError, NoNodeError, ZkError
from zk.znodes import ZnodeDecodeError

log = logging.getLogger(__name__)
MAX_WRITE_ATTEMPTS = 50  # conditional-update retries against concurrent writers


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (`User:admin;User:bob`)."""
    return frozenset(p.strip() for p in (text or "").split(";") if p.strip())


def _pattern_to_json(pattern: ResourcePattern) -> tuple[bool, str]:
    return pattern.pattern_type == PatternType.PREFIXED, RESOURCE_TYPE_NAMES[pattern.resource_type]


def _entry_json(entry: AccessControlEntry) -> AclEntryJson:
    return AclEntryJson(
        entry.principal,
        _PERMISSION_NAMES[entry.permission],
        _OPERATION_NAMES[entry.operation],
        entry.host,
    )


def entries_from_json(entries: Iterable[AclEntryJson]) -> frozenset[AccessControlEntry]:
    found = set()
    for e in entries:
        operation = OPERATIONS_BY_NAME.get(e.operation)
        permission = PERMISSIONS_BY_NAME.get(e.permission_type)
        if operation is None or permission is None:
            log.warning("ignoring an ACL entry Kafka would not write: %s", e)
            continue
        found.add(AccessControlEntry(e.principal, e.host, operation, permission))
    return frozenset(found)


def _adding(
    new: frozenset[AccessControlEntry],
) -> Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]:
    return lambda current: current | new


class AclAuthorizer:
    def __init__(self, zk_client: ZkClient, settings: AuthorizerSettings) -> None:
        self._zk = zk_client
        self.settings = settings
        self._acls = AclIndex()
        self._write_lock = asyncio.Lock()
        # Literal patterns' changes, then prefixed ones' (Kafka's two ZkAclChangeStores).
        self.change_listeners = tuple(
            ChangeNotificationListener(
                zk_client,
                AclChangeNotificationZNode.path(prefixed),
                AclChangeNotificationZNode.SEQUENCE_PREFIX,
                functools.partial(self._on_change, prefixed),
            )
            for prefixed in (False, True)
        )

    # -- decisions ------------------------------------------------------------------------

    def authorize(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        applicable = self._acls.matching(resource_type, name)
        return decide(self.settings, applicable, principal, host, operation)

    def authorize_any(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        bindings = self._acls.of_type(resource_type)
        return allows_any(self.settings, bindings, principal, host, operation, resource_type)

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        return [b for b in self._acls.bindings() if acl_filter is None or acl_filter.matches(b)]

    # -- start-up and notifications -------------------------------------------------------

    async def start(self) -> None:
        # Kafka's createAclPaths: each store's root and a znode per resource type under it.
        for prefixed in (False, True):
            await self._zk.ensure_path(AclZNode.root(prefixed))
            for type_name in RESOURCE_TYPE_NAMES.values():
                await self._zk.ensure_path(f"{AclZNode.root(prefixed)}/{type_name}")
            await self._zk.ensure_path(AclChangeNotificationZNode.path(prefixed))
        for listener in self.change_listeners:
            await listener.start()
        await self._load_all()  # after the watches: no change is missed

    async def _load_all(self) -> None:
        count = 0
        for prefixed in (False, True):
            root = AclZNode.root(prefixed)
            for type_name in await self._zk.get_children(root) or []:
                resource_type = RESOURCE_TYPES_BY_NAME.get(type_name)
                if resource_type is None:
                    continue
                for name in await self._zk.get_children(f"{root}/{type_name}") or []:
                    pattern_type = PatternType.PREFIXED if prefixed else PatternType.LITERAL
                    await self._refresh(ResourcePattern(resource_type, name, pattern_type))
                    count += 1
        log.info("loaded the ACLs of %d resource pattern(s)", count)

    async def _on_change(self, prefixed: bool, notification_path: str, data: bytes) -> None:
        """A notification names one resource pattern: re-read its ACLs (a ZooKeeper error
        propagates, so that the listener retries the notification)."""
        try:
            type_name, name, pattern_name = AclChangeNotificationZNode.decode(prefixed, data)
        except ZnodeDecodeError as error:
            log.warning("ignoring malformed ACL change %s: %s", notification_path, error)
            return
        resource_type = RESOURCE_TYPES_BY_NAME.get(type_name)
        pattern_type = PatternType.__members__.get(pattern_name.upper())
        if resource_type is None or pattern_type is None:
            log.warning("ignoring ACL change %s for %s", notification_path, data[:200])
            return
        await self._refresh(ResourcePattern(resource_type, name, pattern_type))

    async def _refresh(self, pattern: ResourcePattern) -> None:
        entries, _version = await self._read(pattern)
        self._set_cached(pattern, entries)

    def _set_cached(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry]) -> None:
        self._acls.set(pattern, entries)

    async def _read(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int]:
        """The pattern's entries and znode version (-1: no znode)."""
        prefixed, type_name = _pattern_to_json(pattern)
        found = await self._zk.get(AclZNode.path(prefixed, type_name, pattern.name))
        if found is None:
            return frozenset(), -1
        try:
            return entries_from_json(AclZNode.decode(found[0])), found[1].version
        except ZnodeDecodeError as error:
            log.warning("ignoring malformed ACLs of %s: %s", pattern, error)
            return frozenset(), found[1].version

    # -- changes --------------------------------------------------------------------------

    async def add(self, bindings: Iterable[AclBinding]) -> None:
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for binding in bindings:
            by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
        async with self._write_lock:
            for pattern, entries in by_pattern.items():
                await self._update(pattern, _adding(frozenset(entries)))

    async def remove(self, acl_filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Delete what each filter matches; per filter, the ACLs it deleted."""
        async with self._write_lock:
            patterns = {
                b.pattern for b in self._acls.bindings() if any(f.matches(b) for f in acl_filters)
            }
            deleted: list[list[AclBinding]] = [[] for _ in acl_filters]
            for pattern in sorted(patterns):

                def keep(
                    current: frozenset[AccessControlEntry], pattern: ResourcePattern = pattern
                ) -> frozenset[AccessControlEntry]:
                    return frozenset(
                        e
                        for e in current
                        if not any(f.matches(AclBinding(pattern, e)) for f in acl_filters)
                    )

                before, _ = await self._read(pattern)
                after = await self._update(pattern, keep)
                for entry in sorted(before - after):
                    binding = AclBinding(pattern, entry)
                    for index, acl_filter in enumerate(acl_filters):
                        if acl_filter.matches(binding):
                            deleted[index].append(binding)
            return deleted

    async def _update(
        self,
        pattern: ResourcePattern,
        change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
    ) -> frozenset[AccessControlEntry]:
        prefixed, type_name = _pattern_to_json(pattern)
        path = AclZNode.path(prefixed, type_name, pattern.name)
        for _ in range(MAX_WRITE_ATTEMPTS):
            current, version = await self._read(pattern)
            wanted = frozenset(change(current))
            if wanted == current:
                self._set_cached(pattern, current)
                return current
            data = AclZNode.encode(_entry_json(e) for e in sorted(wanted))
            try:
                if version < 0:
                    await self._zk.create(path, data, makepath=True)
                elif wanted:
                    await self._zk.set(path, data, version=version)
                else:
                    await self._zk.delete(path, version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker wrote meanwhile: read again
            self._set_cached(pattern, wanted)
            await self._zk.create(
                AclChangeNotificationZNode.create_path(prefixed),
                AclChangeNotificationZNode.encode(prefixed, type_name, pattern.name),
                sequence=True,
                makepath=True,
            )
            return wanted
        raise ZkError(f"could not update the ACLs of {path}: too many concurrent writers")

    async def stop(self) -> None:
        for listener in self.change_listeners:
            await listener.stop()
