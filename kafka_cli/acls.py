"""kafka-acls: add, remove and list ACLs (CreateAcls, DeleteAcls, DescribeAcls), as Kafka 3.x's
AclCommand does with `--bootstrap-server`.

`--add` / `--remove` take principals (`--allow-principal`, `--deny-principal`, with
`--allow-host` / `--deny-host`, default `*`), operations (`--operation`, repeatable, default
All) and resources (`--topic`, `--group`, `--cluster`, `--transactional-id`, repeatable), with
`--resource-pattern-type literal|prefixed` (`any` / `match` too for `--list` and `--remove`).
The output is AclCommand's: "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC,
name=t, patternType=LITERAL)`:" and one `(principal=User:alice, host=*, operation=WRITE,
permissionType=ALLOW)` line per ACL, then the resource's current ACLs. `--remove` asks for
confirmation unless `--force`. The client is librdkafka, configured from `--command-config`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

# confluent-kafka defines these here and re-exports them from confluent_kafka.admin without
# declaring it (so mypy would refuse that import).
from confluent_kafka.admin._acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
)
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

from kafka_cli._client import admin_client, result_of
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

CLUSTER_NAME = "kafka-cluster"
# confluent-kafka's stubs type the filter's fields as str, but None (any) is what it means.
_Filter: Any = AclBindingFilter
PATTERN_TYPES = {
    "literal": ResourcePatternType.LITERAL,
    "prefixed": ResourcePatternType.PREFIXED,
    "any": ResourcePatternType.ANY,
    "match": ResourcePatternType.MATCH,
}
# AclCommand's operation names (case-insensitive) -> librdkafka's.
OPERATIONS = {
    "all": AclOperation.ALL,
    "read": AclOperation.READ,
    "write": AclOperation.WRITE,
    "create": AclOperation.CREATE,
    "delete": AclOperation.DELETE,
    "alter": AclOperation.ALTER,
    "describe": AclOperation.DESCRIBE,
    "clusteraction": AclOperation.CLUSTER_ACTION,
    "describeconfigs": AclOperation.DESCRIBE_CONFIGS,
    "alterconfigs": AclOperation.ALTER_CONFIGS,
    "idempotentwrite": AclOperation.IDEMPOTENT_WRITE,
}


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-acls", description="This tool helps to manage acls on kafka."
    )
    parser.add_argument("--bootstrap-server", required=True, help="REQUIRED: The server to use.")
    parser.add_argument("--command-config", help="Property file passed to the admin client.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="Indicates you are trying to add ACLs.")
    action.add_argument(
        "--remove", action="store_true", help="Indicates you are trying to remove ACLs."
    )
    action.add_argument("--list", action="store_true", help="List ACLs for the specified resource.")
    parser.add_argument("--allow-principal", action="append", default=[])
    parser.add_argument("--deny-principal", action="append", default=[])
    parser.add_argument("--allow-host", action="append", default=[])
    parser.add_argument("--deny-host", action="append", default=[])
    parser.add_argument("--principal", help="--list: only this principal's ACLs.")
    parser.add_argument("--operation", action="append", default=[], help="Default: All.")
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--transactional-id", action="append", default=[])
    parser.add_argument("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    parser.add_argument(
        "--resource-pattern-type", default=None, choices=sorted(PATTERN_TYPES), type=str.lower
    )
    parser.add_argument("--force", action="store_true", help="Assume Yes to all queries.")
    return parser


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    resources = [(ResourceType.TOPIC, name) for name in args.topic]
    resources += [(ResourceType.GROUP, name) for name in args.group]
    resources += [(ResourceType.TRANSACTIONAL_ID, name) for name in args.transactional_id]
    if args.cluster:
        resources.append((ResourceType.BROKER, CLUSTER_NAME))
    return resources


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    names = args.operation or ["All"]
    try:
        return [OPERATIONS[name.lower()] for name in names]
    except KeyError as error:
        raise ToolError(f"Invalid operation: {error.args[0]}") from None


def _entries(args: argparse.Namespace) -> list[tuple[str, str, AclOperation, AclPermissionType]]:
    entries = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        for principal in principals:
            for host in hosts or ["*"]:
                for operation in _operations(args):
                    entries.append((principal, host, operation, permission))
    return entries


def _type_name(value: Any) -> str:
    name = str(value.name)
    return "CLUSTER" if name == "BROKER" else name


def pattern_text(resource_type: Any, name: str, pattern_type: Any) -> str:
    return (
        f"ResourcePattern(resourceType={_type_name(resource_type)}, name={name},"
        f" patternType={pattern_type.name})"
    )


def entry_text(binding: Any) -> str:
    return (
        f"(principal={binding.principal}, host={binding.host},"
        f" operation={binding.operation.name}, permissionType={binding.permission_type.name})"
    )


def _print_group(title: str, resource: str, entries: Iterable[str]) -> None:
    lines = "\n".join(f" \t{entry} " for entry in entries)
    print(f"{title} for resource `{resource}`: \n{lines}\n")


def _describe(admin: Any, acl_filter: Any) -> list[Any]:
    bindings: list[Any] = result_of(admin.describe_acls(acl_filter), "describe ACLs")
    return bindings


def _by_pattern(bindings: Iterable[Any]) -> dict[tuple[Any, str, Any], list[Any]]:
    grouped: dict[tuple[Any, str, Any], list[Any]] = {}
    for b in bindings:
        grouped.setdefault((b.restype, b.name, b.resource_pattern_type), []).append(b)
    return grouped


def _list_current(admin: Any, resource_type: Any, name: str, pattern_type: Any) -> None:
    found = _describe(
        admin,
        _Filter(
            resource_type, name, pattern_type, None, None, AclOperation.ANY, AclPermissionType.ANY
        ),
    )
    for (rtype, rname, ptype), bindings in _by_pattern(found).items():
        _print_group(
            "Current ACLs",
            pattern_text(rtype, rname, ptype),
            (entry_text(b) for b in bindings),
        )


def add(admin: Any, args: argparse.Namespace) -> None:
    pattern_type = PATTERN_TYPES[args.resource_pattern_type or "literal"]
    if pattern_type not in (ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED):
        raise ToolError("A '--resource-pattern-type' value of 'literal' or 'prefixed' is required")
    entries = _entries(args)
    if not entries:
        raise ToolError("You must specify one of: --allow-principal, --deny-principal")
    resources = _resources(args)
    if not resources:
        raise ToolError("You must specify a resource (--topic, --group, ...)")
    for resource_type, name in resources:
        bindings = [
            AclBinding(resource_type, name, pattern_type, principal, host, operation, permission)
            for principal, host, operation, permission in entries
        ]
        _print_group(
            "Adding ACLs",
            pattern_text(resource_type, name, pattern_type),
            (entry_text(b) for b in bindings),
        )
        for future in admin.create_acls(bindings).values():
            result_of(future, "create ACLs")
        _list_current(admin, resource_type, name, pattern_type)


def remove(admin: Any, args: argparse.Namespace) -> None:
    pattern_type = PATTERN_TYPES[args.resource_pattern_type or "literal"]
    resources = _resources(args)
    if not resources:
        raise ToolError("You must specify a resource (--topic, --group, ...)")
    entries = _entries(args)
    for resource_type, name in resources:
        resource = pattern_text(resource_type, name, pattern_type)
        if entries:
            filters = [
                _Filter(resource_type, name, pattern_type, principal, host, operation, permission)
                for principal, host, operation, permission in entries
            ]
            question = (
                "Are you sure you want to remove ACLs: \n"
                + "\n".join(
                    f" \t(principal={p}, host={h}, operation={o.name}, permissionType={m.name}) "
                    for p, h, o, m in entries
                )
                + f" \n from resource filter `{resource}`? (y/n)"
            )
        else:
            filters = [
                _Filter(
                    resource_type,
                    name,
                    pattern_type,
                    None,
                    None,
                    AclOperation.ANY,
                    AclPermissionType.ANY,
                )
            ]
            question = (
                f"Are you sure you want to delete all ACLs for resource filter `{resource}`? (y/n)"
            )
        if not args.force and not _confirm(question):
            continue
        for future in admin.delete_acls(filters).values():
            result_of(future, "delete ACLs")
        _list_current(admin, resource_type, name, pattern_type)


def _confirm(question: str) -> bool:
    print(question)
    return sys.stdin.readline().strip().lower() == "y"


def list_acls(admin: Any, args: argparse.Namespace) -> None:
    pattern_type = PATTERN_TYPES[args.resource_pattern_type or "any"]
    resources: list[tuple[Any, str | None]] = list(_resources(args)) or [(ResourceType.ANY, None)]
    for resource_type, name in resources:
        found = _describe(
            admin,
            _Filter(
                resource_type,
                name,
                pattern_type,
                args.principal,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            ),
        )
        for (rtype, rname, ptype), bindings in _by_pattern(found).items():
            _print_group(
                "Current ACLs", pattern_text(rtype, rname, ptype), (entry_text(b) for b in bindings)
            )


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    admin = admin_client(args.bootstrap_server, args.command_config)
    if args.add:
        add(admin, args)
    elif args.remove:
        remove(admin, args)
    else:
        list_acls(admin, args)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
