"""zk.zk_security: the ACLs Kafka's ZkData.defaultAcls gives each path, and zkCli's getAcl text."""

from __future__ import annotations

import pytest

from zk.zk_security import (
    ALL,
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ,
    ZkAcl,
    default_acls,
    describe,
    perms_text,
    sensitive_path,
)

CREATOR_AND_WORLD_READ = (ZkAcl(ALL, "auth", ""), ZkAcl(READ, "world", "anyone"))


@pytest.mark.parametrize(
    "path",
    [
        "/brokers/ids/1",
        "/brokers/topics/orders",
        "/brokers/topics/orders/partitions/0/state",
        "/controller",
        "/controller_epoch",
        "/config",
        "/config/topics/orders",
        "/config/changes/config_change_0000000000",
        "/kafka-acl/Topic/orders",
        "/kafka-acl-changes/acl_changes_0000000000",
        "/cluster/id",
        "/admin/delete_topics",
    ],
)
def test_secure_paths_are_creator_all_and_world_read(path: str) -> None:
    assert default_acls(True, path) == CREATOR_AND_WORLD_READ


@pytest.mark.parametrize(
    "path",
    [
        "/config/users",
        "/config/users/alice",
        "/config/brokers",
        "/config/brokers/1",
        "/config/brokers/<default>",
        "/delegation_token/tokens/abc",
    ],
)
def test_sensitive_paths_are_creator_only(path: str) -> None:
    assert sensitive_path(path)
    assert default_acls(True, path) == CREATOR_ALL_ACL


def test_consumers_stays_open_and_insecure_is_open_everywhere() -> None:
    assert default_acls(True, "/consumers") == OPEN_ACL_UNSAFE
    assert default_acls(True, "/consumers/group") == CREATOR_AND_WORLD_READ  # exact path only
    for path in ("/brokers/ids/1", "/config/users/alice", "/consumers"):
        assert default_acls(False, path) == OPEN_ACL_UNSAFE


def test_describe_prints_zkcli_get_acl_lines() -> None:
    acls = [ZkAcl(ALL, "sasl", "kafka"), ZkAcl(READ, "world", "anyone")]
    assert describe(acls) == ["'sasl,'kafka", ": cdrwa", "'world,'anyone", ": r"]
    assert perms_text(0) == ""
    assert perms_text(2 | 4) == "cw"
