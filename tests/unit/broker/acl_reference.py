"""The unindexed reference for the authorizer's decisions: every ACL is looked at, and those
whose pattern does not apply are skipped one by one. The broker decides through `AclIndex`,
which finds the applicable ACLs without the scan; the tests check it against this."""

from __future__ import annotations

from collections.abc import Iterable

from broker.security.acl import (
    AclBinding,
    AuthorizerSettings,
    Operation,
    ResourceType,
    decide,
    pattern_applies,
)


def authorize_by_scan(
    settings: AuthorizerSettings,
    acls: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
) -> bool:
    """The decision for one action; `acls` may hold any ACLs."""
    applicable = [b.entry for b in acls if pattern_applies(b.pattern, resource_type, name)]
    return decide(settings, applicable, principal, host, operation)
