"""kafka-configs `--entity-type users|clients`: client quotas through DescribeClientQuotas and
AlterClientQuotas, as Kafka 3.9's ConfigCommand does them with `--bootstrap-server`.

An entity is a user, a client id, or both (`--entity-type users --entity-name alice
--entity-type clients --entity-name app`, or `--user alice --client app`); `--entity-default`,
`--user-defaults` and `--client-defaults` name the defaults. `--alter --add-config
producer_byte_rate=1048576 --delete-config consumer_byte_rate` prints "Completed updating config
for user alice." (or "... default config for users in the cluster."); `--describe` prints one
line per entity found: "Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1048576.0".
"""

from __future__ import annotations

from broker.quotas.admin import java_double_text
from kafka_cli._config_requests import ConfigAdmin
from kafka_cli.common import ToolError

QUOTA_KEYS = frozenset(
    {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
)
SCRAM_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})
ENTITY_TYPES = {"users": "user", "clients": "client-id"}
LABELS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def check_alteration(entity_types: list[str], added: dict[str, str], deleted: list[str]) -> bool:
    """ConfigCommand's checks of the keys; True when they are quota keys (else SCRAM ones)."""
    unknown_added = [k for k in added if k not in QUOTA_KEYS and k not in SCRAM_KEYS]
    unknown_deleted = [k for k in deleted if k not in QUOTA_KEYS and k not in SCRAM_KEYS]
    if entity_types[0] == "clients" or len(entity_types) == 2:
        bad_added = unknown_added + [k for k in added if k in SCRAM_KEYS]
        bad_deleted = unknown_deleted + [k for k in deleted if k in SCRAM_KEYS]
        if bad_added:
            raise ToolError(
                "Only quota configs can be added for 'clients' using --bootstrap-server."
                f" Unexpected config names: {','.join(bad_added)}"
            )
        if bad_deleted:
            raise ToolError(
                "Only quota configs can be deleted for 'clients' using --bootstrap-server."
                f" Unexpected config names: {','.join(bad_deleted)}"
            )
        return True
    if unknown_added:
        raise ToolError(
            "Only quota and SCRAM credential configs can be added for 'users' using"
            f" --bootstrap-server. Unexpected config names: {','.join(unknown_added)}"
        )
    if unknown_deleted:
        raise ToolError(
            "Only quota and SCRAM credential configs can be deleted for 'users' using"
            f" --bootstrap-server. Unexpected config names: {','.join(unknown_deleted)}"
        )
    has_quota = any(k in QUOTA_KEYS for k in [*added, *deleted])
    has_scram = any(k in SCRAM_KEYS for k in [*added, *deleted])
    if has_quota and has_scram:
        raise ToolError(
            "Cannot alter both quota and SCRAM credential configs simultaneously for 'users'"
            " using --bootstrap-server."
        )
    return has_quota


def _components(
    entity_types: list[str], entity_names: list[str | None]
) -> list[tuple[str, int, str | None]]:
    if len(entity_names) > len(entity_types):
        raise ToolError("More entity names specified than entity types")
    components: list[tuple[str, int, str | None]] = []
    for index, entity_type in enumerate(entity_types):
        name = entity_names[index] if index < len(entity_names) else None
        kind = ENTITY_TYPES[entity_type]
        if name is None:
            components.append((kind, MATCH_SPECIFIED, None))
        elif name == "":
            components.append((kind, MATCH_DEFAULT, None))
        else:
            components.append((kind, MATCH_EXACT, name))
    return components


async def describe(
    admin: ConfigAdmin, entity_types: list[str], entity_names: list[str | None]
) -> None:
    found = await admin.describe_client_quotas(_components(entity_types, entity_names))
    lines = []
    for entity, values in found:
        parts = [
            f"{LABELS[kind]} '{entity[kind]}'"
            if entity[kind] is not None
            else f"the default {LABELS[kind]}"
            for kind in ("user", "client-id", "ip")
            if kind in entity
        ]
        text = ", ".join(f"{key}={java_double_text(value)}" for key, value in values.items())
        lines.append(f"Quota configs for {', '.join(parts)} are {text}")
    for line in sorted(lines):
        print(line)


async def alter(
    admin: ConfigAdmin,
    entity_types: list[str],
    entity_names: list[str],
    added: dict[str, str],
    deleted: list[str],
) -> None:
    old = await admin.describe_client_quotas(_components(entity_types, list(entity_names)))
    old_keys = {key for _, values in old for key in values}
    invalid = [key for key in deleted if key not in old_keys]
    if invalid:
        raise ToolError(f"Invalid config(s): {','.join(invalid)}")
    entity = {
        ENTITY_TYPES[entity_type]: (name or None)
        for entity_type, name in zip(entity_types, entity_names, strict=False)
    }
    ops: list[tuple[str, float | None]] = []
    for key, text in added.items():
        try:
            ops.append((key, float(text)))
        except ValueError:
            raise ToolError(f"Cannot parse quota configuration value for {key}: {text}") from None
    ops += [(key, None) for key in deleted]
    await admin.alter_client_quotas(entity, ops)
