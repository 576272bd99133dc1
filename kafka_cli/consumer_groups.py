"""kafka-consumer-groups: list, describe, delete consumer groups and reset their offsets.

Flags and tables follow Kafka 3.0's ConsumerGroupCommand (see `_group_describe` and
`_group_reset` for the formats). Where Kafka prints `Error: ...` on standard output and still
exits 0 (a group that does not exist, a group that is active during a reset, a failed
deletion), this tool prints the same sentence on standard error and exits 1.
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka.admin import AdminClient

from kafka_cli import _group_describe as describe
from kafka_cli import _group_reset as reset
from kafka_cli._client import admin_client, kafka_error_message
from kafka_cli._group_admin import (
    GroupDescription,
    committed_offsets,
    describe_groups,
    list_groups,
    parse_states,
)
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
INACTIVE_STATES = ("Empty", "Dead")


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-consumer-groups",
        description="List, describe and delete consumer groups; reset their offsets.",
    )
    parser.add_argument("--bootstrap-server", help="REQUIRED: The server(s) to connect to.")
    parser.add_argument("--command-config", help="Property file passed to the admin client.")
    for action in ACTIONS:
        parser.add_argument(f"--{action.replace('_', '-')}", action="store_true")
    parser.add_argument("--group", action="append", default=[], help="The group(s) to act on.")
    parser.add_argument("--all-groups", action="store_true", help="Apply to all groups.")
    parser.add_argument("--topic", action="append", default=[], help="topic or topic:0,1,2")
    parser.add_argument("--all-topics", action="store_true")
    parser.add_argument("--members", action="store_true")
    parser.add_argument("--offsets", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--state", nargs="?", const="", help="With --list: filter by states.")
    parser.add_argument("--timeout", type=int, default=5000, help=argparse.SUPPRESS)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--execute", action="store_true")
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--to-offset", type=int)
    parser.add_argument("--to-earliest", action="store_true")
    parser.add_argument("--to-latest", action="store_true")
    parser.add_argument("--to-current", action="store_true")
    parser.add_argument("--shift-by", type=int)
    parser.add_argument("--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss")
    parser.add_argument("--by-duration", help="PnDTnHnMnS")
    parser.add_argument("--from-file", help="CSV file of offsets")
    return parser


def _check_args(options: argparse.Namespace) -> str:
    actions = [action for action in ACTIONS if getattr(options, action)]
    if len(actions) != 1:
        raise ToolError(
            "Command must include exactly one action: --list, --describe, --delete, "
            "--reset-offsets, --delete-offsets"
        )
    action = actions[0]
    if not options.bootstrap_server:
        raise ToolError('Missing required argument "[bootstrap-server]"')
    if action == "delete_offsets":
        # confluent-kafka's admin client has no OffsetDelete call to build it on.
        raise ToolError("--delete-offsets is not supported by this tool")
    if action in ("describe", "delete", "reset_offsets") and not (
        options.group or options.all_groups
    ):
        flag = action.replace("_", "-")
        raise ToolError(f"Option [{flag}] takes one of these options: [group], [all-groups]")
    if options.group and options.all_groups:
        raise ToolError("Option [group] can't be used with option [all-groups]")
    if (
        action == "describe"
        and sum((options.members, options.offsets, options.state is not None)) > 1
    ):
        raise ToolError(
            "Option [describe] takes at most one of these options: [members], [offsets], [state]"
        )
    if action == "describe" and options.state:
        raise ToolError("Option [describe] does not take a value for [state]")
    if action == "delete" and options.topic:
        raise ToolError(
            "The consumer does not support topic-specific offset deletion from a consumer group."
        )
    if action == "reset_offsets" and options.dry_run and options.execute:
        raise ToolError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    return action


def _groups(admin: AdminClient, options: argparse.Namespace) -> list[str]:
    if options.all_groups:
        return [group for group, _ in list_groups(admin)]
    return list(dict.fromkeys(options.group))


def _list(admin: AdminClient, options: argparse.Namespace) -> None:
    if options.state is None:
        for group, _ in list_groups(admin):
            print(group)
        return
    states = parse_states(options.state) if options.state else None
    listed = list_groups(admin, states)
    width = max([15, *(len(group) for group, _ in listed)])
    print(f"{'GROUP':<{width}} STATE")
    for group, state in listed:
        print(f"{group:<{width}} {state}")


def _describe(admin: AdminClient, options: argparse.Namespace) -> None:
    descriptions = describe_groups(admin, _groups(admin, options))
    missing = []
    for group in sorted(descriptions):
        description = descriptions[group]
        if description.state == "Dead":
            missing.append(group)
            continue
        lines = _describe_lines(admin, description, options)
        if not lines:
            continue
        notice = describe.state_notice(description)
        if notice:
            print(notice, file=sys.stderr)
        print("\n".join(lines))
    if missing:
        names = ", ".join(f"'{group}'" for group in missing)
        raise ToolError(f"Consumer group {names} does not exist.")


def _describe_lines(
    admin: AdminClient, description: GroupDescription, options: argparse.Namespace
) -> list[str]:
    if options.state is not None:
        return describe.format_state(description)
    if options.members:
        members = description.members
        return describe.format_members(description, options.verbose) if members else []
    rows = describe.offset_rows(admin, description)
    return describe.format_offsets(rows) if rows else []


def _delete(admin: AdminClient, options: argparse.Namespace) -> None:
    deleted: list[str] = []
    failures: list[str] = []
    for group, future in admin.delete_consumer_groups(_groups(admin, options)).items():
        try:
            future.result()
            deleted.append(group)
        except Exception as error:  # the client's KafkaException, per group
            failures.append(
                f"* Group '{group}' could not be deleted due to: {kafka_error_message(error)}"
            )
    names = ", ".join(f"'{group}'" for group in deleted)
    if not failures:
        print(f"Deletion of requested consumer groups ({names}) was successful.")
        return
    if deleted:
        print(f"These consumer groups were deleted successfully: {names}")
    for failure in failures:
        print(failure, file=sys.stderr)
    raise ToolError("Deletion of some consumer groups failed.")


def _reset(admin: AdminClient, options: argparse.Namespace) -> None:
    if not (options.all_topics or options.topic or options.from_file):
        raise ToolError("One of the reset scopes should be defined: --all-topics, --topic.")
    reset.scenario_of(options)
    if not options.dry_run and not options.execute:
        reset.warn_dry_run_default()
    plans: dict[str, reset.Plan] = {}
    active: list[str] = []
    for group, description in describe_groups(admin, _groups(admin, options)).items():
        if description.state not in INACTIVE_STATES:
            active.append(f"'{group}' (state {description.state})")
            continue
        if options.all_topics:
            partitions = sorted(committed_offsets(admin, group))
        else:
            partitions = reset.parse_topic_scope(admin, options.topic)
        plan = reset.plan_reset(admin, options, group, partitions)
        if options.execute:
            reset.commit(admin, group, plan)
        plans[group] = plan
    if options.export:
        print(reset.export_csv(plans, len(options.group) == 1), end="")
    elif plans:
        print("\n".join(reset.format_plan(plans)))
    if active:
        raise ToolError(
            "Assignments can only be reset if the group is inactive, but these groups are "
            "not: " + ", ".join(active)
        )


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    action = _check_args(options)
    admin = admin_client(options.bootstrap_server, options.command_config)
    if action == "list":
        _list(admin, options)
    elif action == "describe":
        _describe(admin, options)
    elif action == "delete":
        _delete(admin, options)
    else:
        _reset(admin, options)
    return 0


def main() -> int:
    return run_tool(_body)
