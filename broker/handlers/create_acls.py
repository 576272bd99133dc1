"""CreateAcls: advertised v0-v3 as in Kafka 3.9, implemented v1-v3 (v0 closes the connection:
kio cannot decode it). Needs Alter on the cluster (the registry's rule); answers
SECURITY_DISABLED without an authorizer and INVALID_REQUEST for an ACL Kafka refuses. Any broker
writes the ACLs to ZooKeeper, as Kafka's ZooKeeper-mode AclAuthorizer does."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._acl_common import authorizer_of, code_of
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    InvalidAclError,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    validate_binding,
)


async def handle(context: RequestContext, request: Any) -> Any:
    authorizer = authorizer_of(context)
    results: list[dict[str, Any]] = []
    valid: list[AclBinding] = []
    for creation in request.creations:
        if authorizer is None:
            results.append(
                {
                    "error_code": ErrorCode.security_disabled,
                    "error_message": "No Authorizer is configured.",
                }
            )
            continue
        binding = AclBinding(
            ResourcePattern(
                code_of(ResourceType, creation.resource_type),
                creation.resource_name,
                code_of(
                    PatternType, getattr(creation, "resource_pattern_type", PatternType.LITERAL)
                ),
            ),
            AccessControlEntry(
                creation.principal,
                creation.host,
                code_of(Operation, creation.operation),
                code_of(Permission, creation.permission_type),
            ),
        )
        try:
            validate_binding(binding)
        except InvalidAclError as error:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": str(error)})
            continue
        valid.append(binding)
        results.append({"error_code": ErrorCode.none, "error_message": None})
    if authorizer is not None and valid:
        await authorizer.add(valid)
    cls = response_class(ApiKey.CREATE_ACLS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "results": results})
