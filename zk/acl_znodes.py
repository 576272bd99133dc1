"""The ACL znodes, as Kafka's ZkAclStore writes them: one znode of entries per resource
pattern and a sequential change notification per change."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zk.znodes import ZnodeDecodeError, dump_json, load_json_object


@dataclass(frozen=True)
class AclEntryJson:
    """One entry of an ACL znode, as Kafka's AclEntry writes it (names, not codes)."""

    principal: str
    permission_type: str  # "Allow" / "Deny"
    operation: str  # "Read", "Write", "ClusterAction" ...
    host: str


class AclZNode:
    """The ACLs of one resource pattern: literal ones in /kafka-acl/<ResourceType>/<name>,
    prefixed ones in /kafka-acl-extended/prefixed/<ResourceType>/<name> (Kafka's ZkAclStore)."""

    LITERAL_ROOT = "/kafka-acl"
    PREFIXED_ROOT = "/kafka-acl-extended/prefixed"

    @classmethod
    def root(cls, prefixed: bool) -> str:
        return cls.PREFIXED_ROOT if prefixed else cls.LITERAL_ROOT

    @classmethod
    def path(cls, prefixed: bool, resource_type: str, name: str) -> str:
        return f"{cls.root(prefixed)}/{resource_type}/{name}"

    @staticmethod
    def encode(entries: Iterable[AclEntryJson]) -> bytes:
        return dump_json(
            {
                "version": 1,
                "acls": [
                    {
                        "principal": e.principal,
                        "permissionType": e.permission_type,
                        "operation": e.operation,
                        "host": e.host,
                    }
                    for e in entries
                ],
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> list[AclEntryJson]:
        if not data:
            return []  # Kafka reads an empty znode as no ACLs
        obj = load_json_object(data, "acls")
        acls = obj.get("acls")
        if not isinstance(acls, list):
            raise ZnodeDecodeError(f"acls: no list of ACLs in {data!r}")
        entries = []
        for item in acls:
            fields_ = (
                item.get(key) if isinstance(item, dict) else None
                for key in ("principal", "permissionType", "operation", "host")
            )
            principal, permission, operation, host = fields_
            if not all(isinstance(v, str) for v in (principal, permission, operation, host)):
                raise ZnodeDecodeError(f"acls: malformed entry {item!r}")
            entries.append(AclEntryJson(str(principal), str(permission), str(operation), str(host)))
        return entries


class AclChangeNotificationZNode:
    """`/kafka-acl-changes/acl_changes_<seq>` announces a literal pattern's change as
    "<ResourceType>:<name>"; `/kafka-acl-extended-changes/acl_changes_<seq>` a prefixed one as
    {"version":1,"resourceType":"Topic","name":"n","patternType":"PREFIXED"}."""

    LITERAL_PATH = "/kafka-acl-changes"
    EXTENDED_PATH = "/kafka-acl-extended-changes"
    SEQUENCE_PREFIX = "acl_changes_"

    @classmethod
    def path(cls, prefixed: bool) -> str:
        return cls.EXTENDED_PATH if prefixed else cls.LITERAL_PATH

    @classmethod
    def create_path(cls, prefixed: bool) -> str:
        return f"{cls.path(prefixed)}/{cls.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(prefixed: bool, resource_type: str, name: str) -> bytes:
        if not prefixed:
            return f"{resource_type}:{name}".encode()
        return dump_json(
            {"version": 1, "resourceType": resource_type, "name": name, "patternType": "PREFIXED"}
        )

    @staticmethod
    def decode(prefixed: bool, data: bytes | None) -> tuple[str, str, str]:
        """(resource type name, resource name, pattern type name)."""
        if not data:
            raise ZnodeDecodeError("acl change: empty znode")
        if not prefixed:
            text = data.decode("utf-8", errors="replace")
            resource_type, separator, name = text.partition(":")
            if not separator:
                raise ZnodeDecodeError(f"acl change: no resource in {text!r}")
            return resource_type, name, "LITERAL"
        obj = load_json_object(data, "acl change")
        values = (obj.get("resourceType"), obj.get("name"), obj.get("patternType"))
        if not all(isinstance(v, str) for v in values):
            raise ZnodeDecodeError(f"acl change: malformed {data!r}")
        return str(values[0]), str(values[1]), str(values[2])
