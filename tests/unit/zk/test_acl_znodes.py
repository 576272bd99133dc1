"""The ACL znodes and change notifications, byte for byte as Kafka's AclAuthorizer writes them."""

from __future__ import annotations

import pytest

from zk.acl_znodes import AclChangeNotificationZNode, AclEntryJson, AclZNode
from zk.znodes import ZnodeDecodeError


def test_literal_and_prefixed_acl_paths() -> None:
    assert AclZNode.path(False, "Topic", "t") == "/kafka-acl/Topic/t"
    assert AclZNode.path(True, "Group", "g-") == "/kafka-acl-extended/prefixed/Group/g-"


def test_acl_json_round_trip() -> None:
    entries = [AclEntryJson("User:alice", "Allow", "Read", "*")]
    data = AclZNode.encode(entries)
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    assert AclZNode.decode(data) == entries


def test_empty_acl_znode_is_no_acls_and_garbage_is_refused() -> None:
    assert AclZNode.decode(b"") == []
    with pytest.raises(ZnodeDecodeError):
        AclZNode.decode(b'{"version":1,"acls":[{"principal":1}]}')


def test_change_notifications() -> None:
    assert AclChangeNotificationZNode.create_path(False) == "/kafka-acl-changes/acl_changes_"
    assert (
        AclChangeNotificationZNode.create_path(True) == "/kafka-acl-extended-changes/acl_changes_"
    )
    assert AclChangeNotificationZNode.encode(False, "Topic", "t") == b"Topic:t"
    prefixed = AclChangeNotificationZNode.encode(True, "Topic", "t-")
    assert prefixed == (
        b'{"version":1,"resourceType":"Topic","name":"t-","patternType":"PREFIXED"}'
    )
    assert AclChangeNotificationZNode.decode(True, prefixed) == ("Topic", "t-", "PREFIXED")
    assert AclChangeNotificationZNode.decode(False, b"Group:a:b") == ("Group", "a:b", "LITERAL")
