"""kafka-configs `--entity-type users`: SCRAM credentials through AlterUserScramCredentials
and DescribeUserScramCredentials (KIP-554), as Kafka's ConfigCommand does them with
`--bootstrap-server`.

`--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'` (iterations default to
4096), `--delete-config SCRAM-SHA-256`, `--describe` printing
"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096".
Quota configs for users are not supported (no client quotas: DEVIATIONS.md). The client is
librdkafka, configured from `--command-config` (TLS and SASL properties included).
"""

from __future__ import annotations

import re
from concurrent.futures import Future
from typing import Any, cast

from confluent_kafka.admin import AdminClient

# confluent-kafka defines these here and re-exports them from confluent_kafka.admin without
# declaring it (so mypy would refuse that import).
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kafka_cli._client import admin_client, error_code, kafka_error_message, result_of
from kafka_cli.common import ToolError

MECHANISMS = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}
DEFAULT_ITERATIONS = 4096
MIN_ITERATIONS = 4096
RESOURCE_NOT_FOUND = 91
_CREDENTIAL = re.compile(r"^(?:iterations=(-?[0-9]*),)?password=(.*)$")


def alter(
    bootstrap: str | None,
    command_config: str | None,
    user: str,
    added: dict[str, str],
    deleted: list[str],
) -> None:
    unknown_added = [key for key in added if key not in MECHANISMS]
    unknown_deleted = [key for key in deleted if key not in MECHANISMS]
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
    alterations: list[UserScramCredentialAlteration] = [
        UserScramCredentialDeletion(user, MECHANISMS[name]) for name in deleted
    ]
    for name, text in added.items():
        iterations, password = _iterations_and_password(name, text)
        info = ScramCredentialInfo(MECHANISMS[name], iterations)
        alterations.append(UserScramCredentialUpsertion(user, info, password.encode("utf-8")))
    admin = admin_client(bootstrap, command_config)
    for future in admin.alter_user_scram_credentials(alterations).values():
        result_of(future)
    print(f"Completed updating config for user {user}.")


def _iterations_and_password(mechanism: str, text: str) -> tuple[int, str]:
    match = _CREDENTIAL.match(text)
    if match is None:
        raise ToolError(f"Invalid credential property {mechanism}={text}")
    iterations_text, password = match.groups()
    iterations = (
        int(iterations_text) if iterations_text not in (None, "", "-1") else DEFAULT_ITERATIONS
    )
    if iterations < MIN_ITERATIONS:
        raise ToolError(
            f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for"
            f" {mechanism}"
        )
    return iterations, password


def describe(bootstrap: str | None, command_config: str | None, user: str | None) -> None:
    admin: AdminClient = admin_client(bootstrap, command_config)
    if user is None:
        every = cast("Future[dict[str, Any]]", admin.describe_user_scram_credentials())
        descriptions = result_of(every)
        items = sorted(descriptions.items())
    else:
        futures = cast("dict[str, Future[Any]]", admin.describe_user_scram_credentials([user]))
        future = futures[user]
        try:
            items = [(user, future.result(timeout=60))]
        except Exception as error:  # librdkafka's KafkaException, or a timeout
            if error_code(error) == RESOURCE_NOT_FOUND:
                return  # as Kafka's tool: a user without credentials prints nothing
            print(
                f"Error retrieving SCRAM credential configs for user-principal '{user}':"
                f" {kafka_error_message(error)}"
            )
            return
    for name, description in items:
        text = ", ".join(
            f"{_mechanism_name(info.mechanism)}=iterations={info.iterations}"
            for info in description.scram_credential_infos
        )
        print(f"SCRAM credential configs for user-principal '{name}' are {text}")


def _mechanism_name(mechanism: ScramMechanism) -> str:
    return mechanism.name.replace("_", "-")
