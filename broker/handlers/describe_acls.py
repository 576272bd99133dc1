"""DescribeAcls: advertised v0-v3, implemented v1-v3 (v0 closes the connection: kio cannot
decode it). Needs Describe on
the cluster (the registry's rule); SECURITY_DISABLED without an authorizer, INVALID_REQUEST for
a filter with an unknown field. The answer comes from this broker's ACL cache."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._acl_common import authorizer_of, read_filter
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import AclBinding, InvalidAclError, ResourcePattern


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DESCRIBE_ACLS, context.api_version)
    authorizer = authorizer_of(context)
    if authorizer is None:
        return _error(cls, ErrorCode.security_disabled, "No Authorizer is configured.")
    try:
        acl_filter = read_filter(request)
    except InvalidAclError as error:
        return _error(cls, ErrorCode.invalid_request, str(error))
    by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
    for binding in authorizer.acls(acl_filter):
        by_pattern.setdefault(binding.pattern, []).append(binding)
    resources = [
        {
            "resource_type": int(pattern.resource_type),
            "resource_name": pattern.name,
            "pattern_type": int(pattern.pattern_type),
            "acls": [
                {
                    "principal": b.entry.principal,
                    "host": b.entry.host,
                    "operation": int(b.entry.operation),
                    "permission_type": int(b.entry.permission),
                }
                for b in bindings
            ],
        }
        for pattern, bindings in by_pattern.items()
    ]
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "resources": resources,
        },
    )


def _error(cls: type, error: ErrorCode, message: str) -> Any:
    return adapter.build(
        cls, {"throttle_time": 0, "error_code": error, "error_message": message, "resources": []}
    )
