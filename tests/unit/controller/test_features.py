"""UpdateFeatures at the controller (controller/features.py) with Kafka 3.9's ZooKeeper-mode
facts: brokers support no features, so upgrades are refused; a feature finalized in /feature
can be deleted (a safe downgrade to 0), which rewrites /feature; a failed write turns the
successes into FEATURE_UPDATE_FAILED. Messages as KafkaController.validateFeatureUpdate's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from controller.errors import TopicError
from controller.features import FeatureUpdate, UpgradeType, update_features, validate

UNSUPPORTED = TopicError(
    ErrorCode.invalid_request,
    "Could not apply finalized feature update because the provided feature is not supported.",
)


class _FeatureZk:
    def __init__(self, features: dict[str, int] | None, fail: bool = False) -> None:
        self.features = features
        self.version = 0
        self.fail = fail
        self.writes: list[tuple[int, dict[str, int], int | None]] = []

    async def get_finalized_features(self) -> tuple[dict[str, int], int] | None:
        return None if self.features is None else (dict(self.features), self.version)

    async def set_finalized_features(
        self, epoch_zk_version: int, features: Mapping[str, int], znode_version: int | None
    ) -> None:
        if self.fail:
            raise RuntimeError("zk down")
        self.writes.append((epoch_zk_version, dict(features), znode_version))
        self.features = dict(features)


def _run(zk: _FeatureZk, *updates: FeatureUpdate) -> dict[str, TopicError]:
    return asyncio.run(update_features(zk, 7, list(updates)))


def test_an_upgrade_of_any_feature_is_unsupported_and_writes_nothing() -> None:
    zk = _FeatureZk({})
    upgrade = FeatureUpdate("metadata.version", 20, UpgradeType.UPGRADE)
    assert _run(zk, upgrade) == {"metadata.version": UNSUPPORTED}
    assert zk.writes == []


def test_checks_in_kafkas_order() -> None:
    def check(update: FeatureUpdate, existing: int | None = None) -> object:
        outcome = validate(update, existing)
        return outcome.message if isinstance(outcome, TopicError) else outcome

    assert check(FeatureUpdate("", 1, UpgradeType.UPGRADE)) == "Feature name can not be empty."
    assert check(FeatureUpdate("f", 1, UpgradeType.UNKNOWN)) == "Received unknown upgrade type."
    assert check(FeatureUpdate("f", 0, UpgradeType.SAFE_DOWNGRADE)) == (
        "Can not delete non-existing finalized feature."
    )
    assert check(FeatureUpdate("f", 0, UpgradeType.UNSAFE_DOWNGRADE), existing=2) is None
    assert check(FeatureUpdate("f", 0, UpgradeType.UPGRADE)) == (
        "Can not provide versionLevel: 0 less than 1 without setting the SAFE downgradeType"
        " in the request."
    )
    assert check(FeatureUpdate("f", 2, UpgradeType.SAFE_DOWNGRADE), existing=2) == (
        "Can not downgrade a finalized feature from existing versionLevel:2 to the same value."
    )
    assert check(FeatureUpdate("f", 2, UpgradeType.UPGRADE), existing=2) == (
        "Can not upgrade a finalized feature from existing versionLevel:2 to the same value."
    )
    assert check(FeatureUpdate("f", 1, UpgradeType.UPGRADE), existing=2) == (
        "Can not downgrade finalized feature from existing versionLevel:2 to provided"
        " versionLevel:1 without setting the downgradeType to SAFE in the request."
    )
    assert check(FeatureUpdate("f", 3, UpgradeType.SAFE_DOWNGRADE), existing=2) == (
        "When the downgradeType is set to SAFE in the request, the provided versionLevel:3 can"
        " not be greater than existing versionLevel:2."
    )
    assert check(FeatureUpdate("f", 1, UpgradeType.SAFE_DOWNGRADE), existing=2) == (
        UNSUPPORTED.message
    )


def test_deleting_a_finalized_feature_rewrites_the_znode_fenced() -> None:
    zk = _FeatureZk({"a": 1, "b": 2})
    delete = FeatureUpdate("a", 0, UpgradeType.SAFE_DOWNGRADE)
    upgrade = FeatureUpdate("b", 3, UpgradeType.UPGRADE)
    assert _run(zk, delete, upgrade) == {
        "a": TopicError(ErrorCode.none, "NONE"),
        "b": UNSUPPORTED,
    }
    assert zk.writes == [(7, {"b": 2}, 0)]


def test_a_feature_named_twice_is_answered_by_its_first_entry() -> None:
    zk = _FeatureZk({"a": 1})
    first = FeatureUpdate("a", 0, UpgradeType.SAFE_DOWNGRADE)
    second = FeatureUpdate("a", 5, UpgradeType.UPGRADE)
    assert _run(zk, first, second) == {"a": TopicError(ErrorCode.none, "NONE")}
    assert zk.features == {}


def test_a_failed_write_fails_the_successes_only() -> None:
    zk = _FeatureZk({"a": 1}, fail=True)
    delete = FeatureUpdate("a", 0, UpgradeType.SAFE_DOWNGRADE)
    upgrade = FeatureUpdate("b", 3, UpgradeType.UPGRADE)
    assert _run(zk, delete, upgrade) == {
        "a": TopicError(ErrorCode.feature_update_failed),
        "b": UNSUPPORTED,
    }


def test_no_znode_is_no_finalized_feature() -> None:
    zk = _FeatureZk(None)
    delete = FeatureUpdate("a", 0, UpgradeType.SAFE_DOWNGRADE)
    assert _run(zk, delete)["a"].error_code == ErrorCode.invalid_request
    assert zk.writes == []
