"""DeleteAcls: advertised v0-v3, implemented v1-v3 (v0 closes the connection: kio cannot
decode it). Needs Alter on the
cluster (the registry's rule); SECURITY_DISABLED without an authorizer, INVALID_REQUEST for a
filter with an unknown field; each filter answers the ACLs it deleted."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._acl_common import authorizer_of, binding_values, read_filter
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.security.acl import AclBindingFilter, InvalidAclError


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.DELETE_ACLS, context.api_version)
    authorizer = authorizer_of(context)
    results: list[dict[str, Any] | None] = []
    filters: list[AclBindingFilter] = []
    for item in request.filters:
        if authorizer is None:
            results.append(_error(ErrorCode.security_disabled, "No Authorizer is configured."))
            continue
        try:
            filters.append(read_filter(item))
            results.append(None)
        except InvalidAclError as error:
            results.append(_error(ErrorCode.invalid_request, str(error)))
    deleted = await authorizer.remove(filters) if authorizer is not None and filters else []
    answers = iter(deleted)
    filter_results = [
        result
        if result is not None
        else {
            "error_code": ErrorCode.none,
            "error_message": None,
            "matching_acls": [
                {"error_code": ErrorCode.none, "error_message": None, **binding_values(b)}
                for b in next(answers)
            ],
        }
        for result in results
    ]
    return adapter.build(cls, {"throttle_time": 0, "filter_results": filter_results})


def _error(error: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": error, "error_message": message, "matching_acls": []}
