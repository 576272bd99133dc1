"""SCRAM users: the cache every broker authenticates from, and the admin operations on them.

Each broker reads every `/config/users/<user>` at start-up and re-reads one user when a
`/config/changes` notification names `users/<user>` (Kafka's UserConfigHandler feeding its
CredentialCache), so a user added on any broker can authenticate on all of them at once.

AlterUserScramCredentials and DescribeUserScramCredentials follow Kafka's ZkAdminManager:
its checks, its error codes and messages, and its ZooKeeper writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.security import scram
from zk.errors import ZkError
from zk.znodes import ZnodeDecodeError

if TYPE_CHECKING:
    from zk.kafka_zk import KafkaZk

log = logging.getLogger(__name__)
USERS = "users"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
EMPTY_USER = "Username must not be empty"


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: int  # the admin API's type byte: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class UserResult:
    user: str
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None
    # DescribeUserScramCredentials: (mechanism type, iterations) per credential
    credentials: tuple[tuple[int, int], ...] = ()


class ScramCredentials:
    def __init__(self, kafka_zk: KafkaZk) -> None:
        self._kafka_zk = kafka_zk
        # (mechanism, user) -> credential; replaced per user, read on every authentication.
        self._cache: dict[tuple[str, str], scram.ScramCredential] = {}
        self._lock = asyncio.Lock()  # alterations read-modify-write a user's znode

    def lookup(self, mechanism: str, user: str) -> scram.ScramCredential | None:
        return self._cache.get((mechanism, user))

    async def load_all(self) -> None:
        """Every user's credentials, at start-up before the listeners open."""
        names = await self._kafka_zk.get_entity_names(USERS)
        for name in names:
            await self.refresh(name)
        log.info("loaded SCRAM credentials of %d user(s)", len(names))

    def on_user_changed(self, sanitized_user: str) -> None:
        """A /config/changes notification named users/<user>: re-read that user."""
        asyncio.get_running_loop().create_task(
            self._refresh_logged(sanitized_user), name=f"scram-user-{sanitized_user}"
        )

    async def _refresh_logged(self, sanitized_user: str) -> None:
        try:
            await self.refresh(sanitized_user)
        except ZkError:
            log.warning("reading the credentials of user %s failed", sanitized_user, exc_info=True)

    async def refresh(self, sanitized_user: str) -> None:
        user = scram.desanitize(sanitized_user)
        try:
            configs = await self._kafka_zk.get_entity_config(USERS, sanitized_user)
        except ZnodeDecodeError as error:
            log.error("ignoring malformed config of user %s: %s", user, error)
            configs = {}
        for mechanism in scram.SCRAM_MECHANISMS:
            text = configs.get(mechanism)
            credential = None
            if text is not None:
                try:
                    credential = scram.ScramCredential.from_text(text)
                except scram.CredentialFormatError as error:
                    log.error("ignoring %s credential of user %s: %s", mechanism, user, error)
            if credential is None:
                self._cache.pop((mechanism, user), None)
            else:
                self._cache[(mechanism, user)] = credential

    # -- DescribeUserScramCredentials -------------------------------------------------------

    async def describe(self, users: list[str] | None) -> list[UserResult]:
        """All users with a SCRAM credential (sorted) when `users` is empty or None; else one
        result per distinct requested user, in request order."""
        if not users:
            results = []
            for name in await self._kafka_zk.get_entity_names(USERS):
                result = await self._describe_one(scram.desanitize(name), explicit=False)
                if result is not None:
                    results.append(result)
            return sorted(results, key=lambda result: result.user)
        counts = Counter(users)
        by_user: dict[str, UserResult] = {}
        for user in dict.fromkeys(users):
            if not user:
                by_user[user] = UserResult(user, ErrorCode.resource_not_found, EMPTY_USER)
            elif counts[user] > 1:
                by_user[user] = UserResult(
                    user,
                    ErrorCode.duplicate_resource,
                    "Cannot describe SCRAM credentials for the same user twice in a single"
                    f" request: {user}",
                )
            else:
                found = await self._describe_one(user, explicit=True)
                if found is not None:
                    by_user[user] = found
        return list(by_user.values())

    async def _describe_one(self, user: str, explicit: bool) -> UserResult | None:
        configs = await self._kafka_zk.get_entity_config(USERS, scram.sanitize(user))
        present = [m for m in scram.SCRAM_MECHANISMS if m in configs]
        if not present:
            if not explicit:
                return None
            return UserResult(
                user,
                ErrorCode.resource_not_found,
                f"Attempt to describe a user credential that does not exist: {user}",
            )
        try:
            credentials = tuple(
                (
                    scram.MECHANISM_TYPES[mechanism],
                    scram.ScramCredential.from_text(configs[mechanism]).iterations,
                )
                for mechanism in present
            )
        except scram.CredentialFormatError as error:
            return UserResult(user, ErrorCode.unknown_server_error, str(error))
        return UserResult(user, credentials=credentials)

    # -- AlterUserScramCredentials ----------------------------------------------------------

    async def alter(
        self, upsertions: list[Upsertion], deletions: list[Deletion]
    ) -> list[UserResult]:
        async with self._lock:
            return await self._alter(upsertions, deletions)

    async def _alter(
        self, upsertions: list[Upsertion], deletions: list[Deletion]
    ) -> list[UserResult]:
        results: list[UserResult] = []
        illegal: dict[str, str] = {}
        for deletion in deletions:
            if not deletion.user:
                illegal[deletion.user] = EMPTY_USER
            elif deletion.mechanism not in scram.MECHANISM_NAMES:
                illegal[deletion.user] = UNKNOWN_MECHANISM
        for upsertion in upsertions:
            if not upsertion.user:
                illegal[upsertion.user] = EMPTY_USER
            elif upsertion.mechanism not in scram.MECHANISM_NAMES:
                illegal[upsertion.user] = UNKNOWN_MECHANISM
            elif upsertion.iterations < scram.MIN_ITERATIONS:
                illegal[upsertion.user] = "Too few iterations"
            elif upsertion.iterations > scram.MAX_ALTER_ITERATIONS:
                illegal[upsertion.user] = "Too many iterations"
        for user, message in illegal.items():
            code = (
                ErrorCode.unsupported_sasl_mechanism
                if message == UNKNOWN_MECHANISM
                else ErrorCode.unacceptable_credential
            )
            results.append(UserResult(user, code, message))
        pairs = [(u.user, u.mechanism) for u in upsertions if u.user not in illegal] + [
            (d.user, d.mechanism) for d in deletions if d.user not in illegal
        ]
        duplicated = {user for (user, _), count in Counter(pairs).items() if count > 1}
        for user in sorted(duplicated):
            results.append(
                UserResult(
                    user,
                    ErrorCode.duplicate_resource,
                    "A user credential cannot be altered twice in the same request",
                )
            )
        users = list(dict.fromkeys(user for user, _ in pairs if user not in duplicated))
        configs = {
            user: await self._kafka_zk.get_entity_config(USERS, scram.sanitize(user))
            for user in users
        }
        missing = {
            d.user
            for d in deletions
            if d.user in configs and scram.MECHANISM_NAMES[d.mechanism] not in configs[d.user]
        }
        for user in sorted(missing):
            results.append(
                UserResult(
                    user,
                    ErrorCode.resource_not_found,
                    "Attempt to delete a user credential that does not exist",
                )
            )
        for user in users:
            if user in missing:
                continue
            config = configs[user]
            for d in deletions:
                if d.user == user:
                    config.pop(scram.MECHANISM_NAMES[d.mechanism], None)
            for u in upsertions:
                if u.user == user:
                    mechanism = scram.MECHANISM_NAMES[u.mechanism]
                    credential = scram.credential_from_salted_password(
                        mechanism, u.salt, u.salted_password, u.iterations
                    )
                    config[mechanism] = credential.to_text()
            try:
                await self._kafka_zk.change_entity_config(USERS, scram.sanitize(user), config)
            except ZkError as error:
                log.warning("altering the SCRAM credentials of %s failed: %s", user, error)
                results.append(UserResult(user, ErrorCode.unknown_server_error, str(error)))
                continue
            results.append(UserResult(user))
        return results
