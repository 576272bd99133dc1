"""kafka-configs: describe and alter topic and broker configs, users' SCRAM credentials and
client quotas, as Kafka 3.9's ConfigCommand does with `--bootstrap-server`.

`--entity-type topics|brokers` with `--entity-name NAME` or `--entity-default` (brokers: the
cluster-wide default; `--topic`, `--broker` and `--broker-defaults` are Kafka's shortcuts).
`--describe [--all]` prints "Dynamic configs for broker 1 are:" ("All configs for ...",
"Default configs for brokers in the cluster are:") and one line per config,
`  name=value sensitive=false synonyms={SOURCE:name=value, ...}`; without an entity name it
describes every topic, or every broker and then the default. `--alter --add-config
k=v,k2=[a,b] --delete-config k` changes topics with IncrementalAlterConfigs and brokers with
AlterConfigs (their whole dynamic set), then prints "Completed updating config for topic t."
or "Completed updating default config for brokers in the cluster.". `--entity-type users`
manages SCRAM credentials (kafka_cli._scram_users) and, with `--entity-type clients`, client
quotas (kafka_cli._client_quotas; over the plain protocol, without `--command-config`).
"""

from __future__ import annotations

import argparse
import asyncio
import re

from broker.config.protocol import AlterConfigOp, ConfigResourceType, ConfigSource
from kafka_cli import _client_quotas, _scram_users
from kafka_cli._config_requests import ConfigAdmin, Entry
from kafka_cli.common import ToolArgumentParser, ToolError, bootstrap_servers, run_tool

RESOURCE_TYPES = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER}
USERS = "users"
CLIENTS = "clients"
# The source that marks a config as set dynamically on each kind of entity.
DYNAMIC_SOURCES = {
    "topics": ConfigSource.DYNAMIC_TOPIC_CONFIG,
    "brokers": ConfigSource.DYNAMIC_BROKER_CONFIG,
    "": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
}
# ConfigCommand's split: commas and '=' outside square brackets.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-configs", description="Add/Remove entity config for a topic or broker."
    )
    parser.add_argument("--bootstrap-server", help="REQUIRED: The Kafka server to connect to.")
    parser.add_argument(
        "--command-config",
        help="Client properties (TLS, SASL) for --entity-type users; not used for the others.",
    )
    parser.add_argument(
        "--entity-type", action="append", choices=sorted([*RESOURCE_TYPES, USERS, CLIENTS])
    )
    # Names and defaults pair with the entity types in command-line order.
    parser.add_argument("--entity-name", action="append", dest="entity_names")
    parser.add_argument("--entity-default", action="append_const", const="", dest="entity_names")
    parser.add_argument("--user", help="Shortcut for --entity-type users --entity-name U.")
    parser.add_argument("--client", help="Shortcut for --entity-type clients --entity-name C.")
    parser.add_argument("--user-defaults", action="store_true")
    parser.add_argument("--client-defaults", action="store_true")
    parser.add_argument("--topic", help="Shortcut for --entity-type topics --entity-name T.")
    parser.add_argument("--broker", help="Shortcut for --entity-type brokers --entity-name B.")
    parser.add_argument("--broker-defaults", action="store_true")
    parser.add_argument("--describe", action="store_true")
    parser.add_argument("--all", action="store_true", help="With --describe: every config.")
    parser.add_argument("--alter", action="store_true")
    parser.add_argument("--add-config", help="k1=v1,k2=[v1,v2,v2],k3=v3")
    parser.add_argument("--delete-config", action="append", default=[], help="k1,k2")
    return parser


def _entity(options: argparse.Namespace) -> tuple[str, str | None]:
    """(entity type, entity name); name "" is the broker default, None means every entity."""
    if options.topic is not None:
        return "topics", options.topic
    if options.broker is not None:
        return "brokers", options.broker
    if options.broker_defaults:
        return "brokers", ""
    if options.entity_type is None:
        raise ToolError("--entity-type must be specified")
    if options.entity_default:
        if options.entity_type != "brokers":
            raise ToolError("--entity-default is only valid with --entity-type brokers")
        return options.entity_type, ""
    return options.entity_type, options.entity_name


def parse_configs_to_add(text: str | None) -> dict[str, str]:
    """ConfigCommand.parseConfigsToBeAdded: `k=v` pairs split at commas outside brackets;
    brackets are then removed from values (`k2=[a,b]` sets "a,b")."""
    if not text:
        return {}
    configs = {}
    for pair in re.split("," + _OUTSIDE_BRACKETS, text):
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair)
        if len(parts) != 2:
            raise ToolError(
                'Invalid entity config: all configs to be added must be in the format "key=val".'
            )
        configs[parts[0].strip()] = re.sub(r"[\[\]]", "", parts[1]).strip()
    return configs


def _configs_to_delete(values: list[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _validate_broker_name(name: str) -> None:
    if name and not name.lstrip("-").isdigit():
        raise ToolError(
            f"The entity name for brokers must be a valid integer broker id, found: {name}"
        )


def _format(entry: Entry) -> str:
    synonyms = ", ".join(
        f"{_source_name(s.source)}:{s.name}={_text(s.value)}" for s in entry.synonyms
    )
    sensitive = "true" if entry.sensitive else "false"
    return f"  {entry.name}={_text(entry.value)} sensitive={sensitive} synonyms={{{synonyms}}}"


def _source_name(code: int) -> str:
    """Kafka's ConfigEntry.ConfigSource name, as ConfigCommand prints it."""
    try:
        return ConfigSource(code).name
    except ValueError:
        return ConfigSource.UNKNOWN.name


def _text(value: str | None) -> str:
    return "null" if value is None else value


async def _dynamic_entries(admin: ConfigAdmin, entity_type: str, name: str) -> list[Entry]:
    source = DYNAMIC_SOURCES["" if entity_type == "brokers" and not name else entity_type]
    entries = await admin.describe(RESOURCE_TYPES[entity_type], name)
    return [entry for entry in entries if entry.source == source]


async def _describe(
    admin: ConfigAdmin, entity_type: str, name: str | None, describe_all: bool
) -> None:
    if name is not None:
        names = [name]
    elif entity_type == "topics":
        names = list(admin.topics)
    else:
        names = [*(str(broker) for broker in sorted(admin.brokers)), ""]
    for entity in names:
        if entity_type == "brokers":
            _validate_broker_name(entity)
        if entity == "" and entity_type == "brokers":
            print(f"Default configs for {entity_type} in the cluster are:")
        else:
            kind = "All" if describe_all else "Dynamic"
            print(f"{kind} configs for {entity_type[:-1]} {entity} are:")
        if describe_all:
            entries = await admin.describe(RESOURCE_TYPES[entity_type], entity)
        else:
            entries = await _dynamic_entries(admin, entity_type, entity)
        for entry in entries:
            print(_format(entry))


async def _alter(
    admin: ConfigAdmin, entity_type: str, name: str, added: dict[str, str], deleted: list[str]
) -> None:
    if entity_type == "brokers":
        _validate_broker_name(name)
    current = {e.name: e.value for e in await _dynamic_entries(admin, entity_type, name)}
    invalid = [key for key in deleted if key not in current]
    if invalid:
        raise ToolError(f"Invalid config(s): {','.join(invalid)}")
    resource_type = RESOURCE_TYPES[entity_type]
    if entity_type == "topics":
        operations: list[tuple[str, int, str | None]] = [
            (k, AlterConfigOp.SET, v) for k, v in added.items()
        ]
        operations += [(key, AlterConfigOp.DELETE, "") for key in deleted]
        await admin.alter_incrementally(resource_type, name, operations)
    else:
        merged = {k: v for k, v in current.items() if k not in deleted and v is not None}
        missing = sorted(k for k, v in current.items() if v is None and k not in added)
        if missing:
            raise ToolError(
                "All sensitive broker config entries must be specified for --alter, missing"
                f" entries: Set({', '.join(missing)})"
            )
        await admin.alter(resource_type, name, {**merged, **added})
    if name:
        print(f"Completed updating config for {entity_type[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {entity_type} in the cluster.")


def _alteration(
    options: argparse.Namespace, name: str | None
) -> tuple[str, dict[str, str], list[str]]:
    """The entity, the configs to add and those to delete, as --alter names them."""
    if name is None:
        raise ToolError("An entity name must be specified with --alter")
    added = parse_configs_to_add(options.add_config)
    deleted = _configs_to_delete(options.delete_config)
    if not added and not deleted:
        raise ToolError("At least one of --add-config or --delete-config must be specified")
    return name, added, deleted


def _quota_entities(options: argparse.Namespace) -> tuple[list[str], list[str]]:
    """ConfigCommand's entity types and names, the shortcuts after the --entity-type ones."""
    types = list(options.entity_type or [])
    names = list(options.entity_names or [])
    if options.user is not None or options.user_defaults:
        types.append(USERS)
        names.append("" if options.user is None else options.user)
    if options.client is not None or options.client_defaults:
        types.append(CLIENTS)
        names.append("" if options.client is None else options.client)
    return types, names


def _run_quota_entities(options: argparse.Namespace) -> int:
    types, names = _quota_entities(options)
    if len(types) > 2 or len(set(types)) != len(types) or not set(types) <= {USERS, CLIENTS}:
        raise ToolError("Only 'users' and 'clients' may be combined, each at most once")
    if types == [USERS] and options.alter:
        added = parse_configs_to_add(options.add_config)
        deleted = _configs_to_delete(options.delete_config)
        if not _client_quotas.check_alteration(types, added, deleted):
            return _run_users(options, names[0] if names else None)
    elif options.alter:
        _client_quotas.check_alteration(
            types,
            parse_configs_to_add(options.add_config),
            _configs_to_delete(options.delete_config),
        )
    if options.alter:
        if len(names) != len(types):
            raise ToolError("An entity name must be specified with --alter")
        _, added, deleted = _alteration(options, names[0])
        asyncio.run(_quotas(options, types, names, added, deleted))
        if names[0]:
            print(f"Completed updating config for {types[0][:-1]} {names[0]}.")
        else:
            print(f"Completed updating default config for {types[0]} in the cluster.")
        return 0
    with_names: list[str | None] = [*names]
    if options.command_config is None or types != [USERS]:
        asyncio.run(_quotas(options, types, with_names, {}, []))
    if types == [USERS] and "" not in names:
        # Kafka describes SCRAM credentials too, unless a client or a default is named.
        _scram_users.describe(
            options.bootstrap_server, options.command_config, names[0] if names else None
        )
    return 0


async def _quotas(
    options: argparse.Namespace,
    types: list[str],
    names: list[str | None] | list[str],
    added: dict[str, str],
    deleted: list[str],
) -> None:
    admin = ConfigAdmin(bootstrap_servers(options.bootstrap_server))
    try:
        await admin.load_cluster()
        if options.alter:
            await _client_quotas.alter(admin, types, [n or "" for n in names], added, deleted)
        else:
            await _client_quotas.describe(admin, types, list(names))
    finally:
        await admin.close()


def _run_users(options: argparse.Namespace, name: str | None) -> int:
    if name == "":
        raise ToolError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM"
            " Credentials using --bootstrap-server."
        )
    if options.alter:
        name, added, deleted = _alteration(options, name)
        _scram_users.alter(options.bootstrap_server, options.command_config, name, added, deleted)
    else:
        _scram_users.describe(options.bootstrap_server, options.command_config, name)
    return 0


async def _run(options: argparse.Namespace) -> int:
    entity_type, name = _entity(options)
    admin = ConfigAdmin(bootstrap_servers(options.bootstrap_server))
    try:
        await admin.load_cluster()
        if options.alter:
            name, added, deleted = _alteration(options, name)
            await _alter(admin, entity_type, name, added, deleted)
        else:
            await _describe(admin, entity_type, name, options.all)
    finally:
        await admin.close()
    return 0


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    if options.describe == options.alter:
        raise ToolError("Command must include exactly one action: --describe, --alter")
    if options.all and not options.describe:
        raise ToolError("--all is only valid with --describe")
    types, _ = _quota_entities(options)
    if USERS in types or CLIENTS in types:
        return _run_quota_entities(options)
    if len(types) > 1:
        raise ToolError("Only 'users' and 'clients' entity types may be combined")
    names = options.entity_names or []
    options.entity_type = types[0] if types else None
    options.entity_name = names[0] if names and names[0] != "" else None
    options.entity_default = names == [""]
    return asyncio.run(_run(options))


def main() -> int:
    return run_tool(_body)
