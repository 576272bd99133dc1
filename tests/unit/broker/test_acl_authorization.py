"""The authorizer's decisions (broker.security.acl), without ZooKeeper or brokers."""

from __future__ import annotations

import random

import pytest

from broker.security import acl as acl_module
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclIndex,
    AuthorizerSettings,
    InvalidAclError,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    allows_any,
    decide,
    validate_binding,
)
from broker.security.authorizer import AclAuthorizer
from tests.unit.broker.acl_reference import authorize_by_scan

ALICE = "User:alice"
HOST = "10.0.0.1"
TOPIC = ResourceType.TOPIC
SETTINGS = AuthorizerSettings(frozenset({"User:admin"}))


def _acl(
    name: str,
    operation: Operation,
    permission: Permission = Permission.ALLOW,
    principal: str = ALICE,
    host: str = "*",
    pattern_type: PatternType = PatternType.LITERAL,
    resource_type: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource_type, name, pattern_type),
        AccessControlEntry(principal, host, operation, permission),
    )


def _may(acls: list[AclBinding], operation: Operation, name: str = "t", **kwargs: object) -> bool:
    settings = kwargs.get("settings", SETTINGS)
    principal = str(kwargs.get("principal", ALICE))
    return authorize_by_scan(settings, acls, principal, HOST, operation, TOPIC, name)  # type: ignore[arg-type]


def test_no_acls_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not _may([], Operation.READ)
    assert _may([], Operation.READ, settings=AuthorizerSettings(frozenset(), True))


def test_allow_everyone_if_no_acl_found_does_not_apply_once_the_resource_has_acls() -> None:
    settings = AuthorizerSettings(frozenset(), True)
    acls = [_acl("t", Operation.READ, principal="User:bob")]
    assert not _may(acls, Operation.READ, settings=settings)


def test_super_user_is_allowed_everything_even_when_denied() -> None:
    acls = [_acl("t", Operation.ALL, Permission.DENY, principal="User:admin")]
    assert _may(acls, Operation.DELETE, principal="User:admin")


def test_read_write_delete_alter_imply_describe_but_not_each_other() -> None:
    for operation in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        acls = [_acl("t", operation)]
        assert _may(acls, Operation.DESCRIBE)
        assert _may(acls, operation)
    assert not _may([_acl("t", Operation.READ)], Operation.WRITE)


def test_alter_configs_implies_describe_configs() -> None:
    assert _may([_acl("t", Operation.ALTER_CONFIGS)], Operation.DESCRIBE_CONFIGS)
    assert not _may([_acl("t", Operation.DESCRIBE_CONFIGS)], Operation.ALTER_CONFIGS)


def test_all_allows_every_operation() -> None:
    assert _may([_acl("t", Operation.ALL)], Operation.IDEMPOTENT_WRITE)


def test_deny_beats_allow() -> None:
    acls = [_acl("t", Operation.READ), _acl("t", Operation.READ, Permission.DENY)]
    assert not _may(acls, Operation.READ)


def test_deny_all_beats_allow_of_one_operation() -> None:
    acls = [_acl("t", Operation.WRITE), _acl("*", Operation.ALL, Permission.DENY)]
    assert not _may(acls, Operation.WRITE)


def test_deny_of_read_does_not_deny_the_implied_describe() -> None:
    acls = [_acl("t", Operation.WRITE), _acl("t", Operation.READ, Permission.DENY)]
    assert _may(acls, Operation.DESCRIBE)


def test_wildcard_resource_and_wildcard_principal() -> None:
    assert _may([_acl("*", Operation.READ, principal="User:*")], Operation.READ, name="any")


def test_prefixed_acl_applies_to_names_starting_with_it() -> None:
    acls = [_acl("orders-", Operation.WRITE, pattern_type=PatternType.PREFIXED)]
    assert _may(acls, Operation.WRITE, name="orders-eu")
    assert not _may(acls, Operation.WRITE, name="order")


def test_host_must_match_or_be_wildcard() -> None:
    assert _may([_acl("t", Operation.READ, host=HOST)], Operation.READ)
    assert not _may([_acl("t", Operation.READ, host="10.9.9.9")], Operation.READ)


@pytest.mark.parametrize(
    ("acl_host", "client_host"),
    [
        ("0:0:0:0:0:0:0:1", "::1"),  # Java's getHostAddress form, Python's peer form
        ("::1", "0:0:0:0:0:0:0:1"),
        ("fe80:0:0:0:0:0:0:a", "fe80::a"),
        ("10.0.0.1", "::ffff:10.0.0.1"),  # a dual-stack socket's IPv4 peer
    ],
)
def test_hosts_match_as_ip_addresses_in_any_notation(acl_host: str, client_host: str) -> None:
    for permission, allowed in ((Permission.ALLOW, True), (Permission.DENY, False)):
        acls = [_acl("t", Operation.READ, permission, host=acl_host), _acl("t", Operation.ALL)]
        decided = authorize_by_scan(SETTINGS, acls, ALICE, client_host, Operation.READ, TOPIC, "t")
        assert decided == allowed, (permission, acl_host, client_host)
    assert not authorize_by_scan(
        SETTINGS,
        [_acl("t", Operation.READ, host=acl_host)],
        ALICE,
        "::2",
        Operation.READ,
        TOPIC,
        "t",
    )


def test_other_principals_acls_do_not_allow() -> None:
    assert not _may([_acl("t", Operation.READ, principal="User:bob")], Operation.READ)


def test_acl_on_another_resource_type_does_not_apply() -> None:
    acls = [_acl("t", Operation.READ, resource_type=ResourceType.GROUP)]
    assert not _may(acls, Operation.READ)


def test_write_on_some_topic_counts_for_idempotent_write() -> None:
    acls = [_acl("t", Operation.WRITE)]
    assert allows_any(SETTINGS, acls, ALICE, HOST, Operation.WRITE, TOPIC)
    assert not allows_any(SETTINGS, acls, "User:bob", HOST, Operation.WRITE, TOPIC)


def test_some_topic_is_writable_to_anyone_with_allow_everyone_if_no_acl_found() -> None:
    """Kafka's authorizeByResourceType: with the flag on, only a literal `*` DENY refuses (an
    idempotent producer is admitted although other principals' ACLs exist)."""
    settings = AuthorizerSettings(frozenset(), allow_everyone_if_no_acl_found=True)
    acls = [_acl("t", Operation.WRITE, principal="User:bob")]
    assert allows_any(settings, acls, ALICE, HOST, Operation.WRITE, TOPIC)
    denied = [*acls, _acl("*", Operation.WRITE, Permission.DENY)]
    assert not allows_any(settings, denied, ALICE, HOST, Operation.WRITE, TOPIC)
    assert not allows_any(SETTINGS, acls, ALICE, HOST, Operation.WRITE, TOPIC)


def test_filter_matches_any_and_exact_fields() -> None:
    binding = _acl("t", Operation.READ)
    everything = AclBindingFilter(
        ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY
    )
    assert everything.matches(binding)
    other = AclBindingFilter(
        TOPIC, "u", PatternType.LITERAL, None, None, Operation.ANY, Permission.ANY
    )
    assert not other.matches(binding)


def test_match_filter_finds_the_prefixed_and_wildcard_patterns_of_a_name() -> None:
    match = AclBindingFilter(
        TOPIC, "orders-eu", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY
    )
    assert match.matches(_acl("orders-", Operation.READ, pattern_type=PatternType.PREFIXED))
    assert match.matches(_acl("*", Operation.READ))
    assert not match.matches(_acl("orders", Operation.READ))


@pytest.mark.parametrize(
    "binding",
    [
        _acl("", Operation.READ),
        _acl("t", Operation.ANY),
        _acl("t", Operation.READ, Permission.ANY),
        _acl("t", Operation.READ, principal="alice"),
        _acl("x", Operation.ALTER, resource_type=ResourceType.CLUSTER),
        _acl("*", Operation.READ, pattern_type=PatternType.PREFIXED),
        _acl("t", Operation.READ, pattern_type=PatternType.MATCH),
    ],
)
def test_invalid_acls_are_refused(binding: AclBinding) -> None:
    with pytest.raises(InvalidAclError):
        validate_binding(binding)


@pytest.mark.parametrize(
    "resource_type", [TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID]
)
def test_names_with_a_slash_are_refused_with_kafkas_message(resource_type: ResourceType) -> None:
    """The name is a znode's: `a/b` would be written nested and never loaded again."""
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        binding = _acl(
            "a/b", Operation.READ, pattern_type=pattern_type, resource_type=resource_type
        )
        with pytest.raises(InvalidAclError, match="^Failed to create ACL$"):
            validate_binding(binding)


def _random_acls(rng: random.Random, count: int) -> list[AclBinding]:
    names = ["t", "t1", "t-eu", "orders", "orders-eu-1", "*"]
    prefixes = ["t", "t-", "o", "orders-", "orders-eu-"]
    acls = []
    for _ in range(count):
        prefixed = rng.random() < 0.3
        acls.append(
            _acl(
                rng.choice(prefixes if prefixed else names),
                rng.choice([Operation.READ, Operation.WRITE, Operation.ALL, Operation.DESCRIBE]),
                rng.choice([Permission.ALLOW, Permission.DENY]),
                principal=rng.choice([ALICE, "User:bob", "User:*"]),
                host=rng.choice(["*", HOST, "10.0.0.2"]),
                pattern_type=PatternType.PREFIXED if prefixed else PatternType.LITERAL,
                resource_type=rng.choice([TOPIC, ResourceType.GROUP]),
            )
        )
    return acls


def _indexed(acls: list[AclBinding]) -> AclIndex:
    index = AclIndex()
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for binding in acls:
        by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
    for pattern, entries in by_pattern.items():
        index.set(pattern, frozenset(entries))
    return index


@pytest.mark.parametrize("seed", range(20))
def test_the_index_decides_as_a_scan_of_every_acl(seed: int) -> None:
    rng = random.Random(seed)
    acls = _random_acls(rng, rng.randrange(0, 40))
    index = _indexed(acls)
    # Patterns removed again (their last ACL deleted) no longer apply.
    for pattern in {b.pattern for b in acls if rng.random() < 0.3}:
        index.set(pattern, frozenset())
        acls = [b for b in acls if b.pattern != pattern]
    for name in ["t", "t1", "t-eu", "orders", "orders-eu-1", "orders-us", "o", "x", "*"]:
        for rtype in (TOPIC, ResourceType.GROUP):
            for operation in (Operation.READ, Operation.WRITE, Operation.DESCRIBE):
                scanned = authorize_by_scan(SETTINGS, acls, ALICE, HOST, operation, rtype, name)
                indexed = decide(SETTINGS, index.matching(rtype, name), ALICE, HOST, operation)
                assert indexed == scanned, (name, rtype, operation)
    assert index.bindings() == sorted(set(acls), key=lambda b: (b.pattern, b.entry))


def test_a_decision_reads_only_the_acls_of_its_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    """With thousands of ACLs on other resources, a decision looks at none of them (review:
    a scan of every ACL cost milliseconds per topic of every Produce and Fetch)."""
    authorizer = AclAuthorizer(None, SETTINGS)  # type: ignore[arg-type]
    for i in range(5000):
        binding = _acl(
            f"other-{i}", Operation.READ, principal=f"User:u{i}", host=f"10.1.{i % 250}.1"
        )
        authorizer._set_cached(binding.pattern, frozenset({binding.entry}))
    for binding in (
        _acl("t", Operation.READ),
        _acl("t-", Operation.WRITE, pattern_type=PatternType.PREFIXED),
    ):
        authorizer._set_cached(binding.pattern, frozenset({binding.entry}))
    examined: list[str] = []
    real_host_matches = acl_module.host_matches
    monkeypatch.setattr(acl_module, "pattern_applies", lambda *args: pytest.fail("a scan"))
    monkeypatch.setattr(
        acl_module,
        "host_matches",
        lambda acl_host, host: examined.append(acl_host) or real_host_matches(acl_host, host),
    )
    assert authorizer.authorize(ALICE, HOST, Operation.READ, TOPIC, "t")
    assert authorizer.authorize(ALICE, HOST, Operation.WRITE, TOPIC, "t-1")
    assert not authorizer.authorize(ALICE, HOST, Operation.READ, TOPIC, "other-7")
    assert len(examined) <= 3
