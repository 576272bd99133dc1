"""UpdateFeatures at the controller (KIP-584), as a ZooKeeper-mode Kafka 3.9 controller
processes it: each update is checked against the finalized features in /feature and the
features this broker supports, and the valid ones are written to /feature in one fenced write.

A ZooKeeper-mode Kafka 3.9 broker supports no features (its BrokerFeatures is empty; only
KRaft brokers list `metadata.version` and the others), so every upgrade is refused with
INVALID_REQUEST, and only a feature already finalized in /feature (written by another tool)
can be deleted. The messages are Kafka's.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from controller.errors import INVALID_REQUEST, NONE, TopicError

log = logging.getLogger(__name__)

# name -> (min, max) version: none, as a ZooKeeper-mode Kafka 3.9 broker.
SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {}
FEATURE_UPDATE_FAILED = ErrorCode.feature_update_failed


class UpgradeType(enum.IntEnum):
    """Kafka's FeatureUpdate.UpgradeType (v0's allow_downgrade maps onto the first two)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def of(cls, code: int) -> UpgradeType:
        return cls(code) if code in (1, 2, 3) else cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    version_level: int
    upgrade_type: UpgradeType

    @property
    def is_delete(self) -> bool:
        return self.version_level < 1 and self.upgrade_type != UpgradeType.UPGRADE


class FeatureZk(Protocol):
    async def get_finalized_features(self) -> tuple[dict[str, int], int] | None: ...
    async def set_finalized_features(
        self, epoch_zk_version: int, features: Mapping[str, int], znode_version: int | None
    ) -> None: ...


# A feature's new level, None to delete it, or why the update is refused.
Outcome = int | None | TopicError


def validate(update: FeatureUpdate, existing: int | None) -> Outcome:
    """Kafka's KafkaController.validateFeatureUpdate, in its order of checks."""
    if not update.feature:
        return TopicError(INVALID_REQUEST, "Feature name can not be empty.")
    if update.upgrade_type == UpgradeType.UNKNOWN:
        return TopicError(INVALID_REQUEST, "Received unknown upgrade type.")
    if update.is_delete:
        if existing is None:
            return TopicError(INVALID_REQUEST, "Can not delete non-existing finalized feature.")
        return None
    level = update.version_level
    if level < 1:
        return TopicError(
            INVALID_REQUEST,
            f"Can not provide versionLevel: {level} less than 1 without setting the SAFE"
            " downgradeType in the request.",
        )
    if existing is not None:
        downgrade = update.upgrade_type == UpgradeType.SAFE_DOWNGRADE
        if level == existing:
            verb = "downgrade" if downgrade else "upgrade"
            return TopicError(
                INVALID_REQUEST,
                f"Can not {verb} a finalized feature from existing versionLevel:{existing} to"
                " the same value.",
            )
        if level < existing and not downgrade:
            return TopicError(
                INVALID_REQUEST,
                f"Can not downgrade finalized feature from existing versionLevel:{existing} to"
                f" provided versionLevel:{level} without setting the downgradeType to SAFE in"
                " the request.",
            )
        if update.upgrade_type != UpgradeType.UPGRADE and level > existing:
            return TopicError(
                INVALID_REQUEST,
                f"When the downgradeType is set to SAFE in the request, the provided"
                f" versionLevel:{level} can not be greater than existing"
                f" versionLevel:{existing}.",
            )
    return _supported_level(update)


def _supported_level(update: FeatureUpdate) -> Outcome:
    supported = SUPPORTED_FEATURES.get(update.feature)
    if supported is None:
        return TopicError(
            INVALID_REQUEST,
            "Could not apply finalized feature update because the provided feature is not"
            " supported.",
        )
    low, _ = supported
    if update.version_level < low:
        return TopicError(
            INVALID_REQUEST,
            "Could not apply finalized feature update because the provided"
            f" versionLevel:{update.version_level} is lower than the supported"
            f" minVersion:{low}.",
        )
    # Every live broker runs this code, so none is incompatible with a supported level.
    return update.version_level


async def update_features(
    zk: FeatureZk, epoch_zk_version: int, updates: list[FeatureUpdate]
) -> dict[str, TopicError]:
    """The outcome per feature name. As in Kafka, an update names its feature's first entry
    (the request's collection is keyed by name), successes say "NONE" and, when the znode
    write fails, every success becomes FEATURE_UPDATE_FAILED."""
    found = await zk.get_finalized_features()
    existing, znode_version = found if found is not None else ({}, None)
    first: dict[str, FeatureUpdate] = {}
    for update in updates:
        first.setdefault(update.feature, update)
    target = dict(existing)
    errors: dict[str, TopicError] = {}
    for update in (first[u.feature] for u in updates):
        outcome = validate(update, existing.get(update.feature))
        if isinstance(outcome, TopicError):
            errors[update.feature] = outcome
            continue
        if outcome is None:
            target.pop(update.feature, None)
        else:
            target[update.feature] = outcome
        errors[update.feature] = TopicError(NONE, "NONE")
    if target != existing:
        try:
            await zk.set_finalized_features(epoch_zk_version, target, znode_version)
        except Exception as error:  # Kafka answers FEATURE_UPDATE_FAILED for any failure here
            log.warning("Processing of feature updates %s failed: %r", updates, error)
            errors = {
                name: TopicError(FEATURE_UPDATE_FAILED) if error.error_code == NONE else error
                for name, error in errors.items()
            }
    return errors
