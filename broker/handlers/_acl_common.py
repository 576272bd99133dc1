"""What CreateAcls, DescribeAcls and DeleteAcls share: reading filters, answering bindings."""

from __future__ import annotations

from typing import Any

from broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    validate_filter,
)
from broker.security.authorizer import AclAuthorizer


def code_of(enum_type: type[Any], value: int) -> Any:
    """The enum member, or its UNKNOWN (0) for a code Kafka does not define."""
    try:
        return enum_type(int(value))
    except ValueError:
        return enum_type(0)


def read_filter(item: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter (v0 has no pattern type: LITERAL)."""
    acl_filter = AclBindingFilter(
        resource_type=code_of(ResourceType, item.resource_type_filter),
        name=item.resource_name_filter,
        pattern_type=code_of(
            PatternType, getattr(item, "pattern_type_filter", PatternType.LITERAL)
        ),
        principal=item.principal_filter,
        host=item.host_filter,
        operation=code_of(Operation, item.operation),
        permission=code_of(Permission, item.permission_type),
    )
    validate_filter(acl_filter)
    return acl_filter


def binding_values(binding: AclBinding) -> dict[str, Any]:
    return {
        "resource_type": int(binding.pattern.resource_type),
        "resource_name": binding.pattern.name,
        "pattern_type": int(binding.pattern.pattern_type),
        "principal": binding.entry.principal,
        "host": binding.entry.host,
        "operation": int(binding.entry.operation),
        "permission_type": int(binding.entry.permission),
    }


def authorizer_of(context: Any) -> AclAuthorizer | None:
    authorizer: AclAuthorizer | None = context.services.authorizer
    return authorizer
