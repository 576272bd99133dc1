"""What a principal may do with a resource, as Kafka's AuthHelper.authorizedOperations tells
clients that ask (Metadata v8+ for topics and, up to v10, the cluster; DescribeGroups v3+): one
bit per operation code, among the operations the resource type supports. Without an authorizer
every supported operation is allowed, as in Kafka."""

from __future__ import annotations

from broker.handlers.authorization import access_of
from broker.network.context import RequestContext
from broker.security.acl import CLUSTER_NAME, Operation, ResourceType

# Kafka's AclEntry.supportedOperations.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
}
# The schemas' default: the client did not ask, or may not know.
OMITTED = -2147483648


def authorized_operations(context: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The bit field (1 << operation code) of the operations allowed on the literal resource."""
    access = access_of(context)
    allowed = [
        operation
        for operation in SUPPORTED_OPERATIONS[resource_type]
        if access is None or access.allowed(operation, resource_type, name)
    ]
    return sum(1 << int(operation) for operation in allowed)


def cluster_authorized_operations(context: RequestContext) -> int:
    """Metadata v8-v10's answer: 0 to a principal that may not describe the cluster."""
    access = access_of(context)
    if access is not None and not access.cluster(Operation.DESCRIBE):
        return 0
    return authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME)
