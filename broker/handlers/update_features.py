"""UpdateFeatures: v0-v1 (KIP-584; Kafka 3.9's range in ZooKeeper mode). `kafka-features
upgrade|downgrade|disable` and the admin's `updateFeatures` send it to the controller.

The controller checks each update against /feature and the features brokers support (none,
as ZooKeeper-mode Kafka 3.9 brokers: see controller/features.py) and answers per feature;
another broker answers NOT_CONTROLLER at the top level. v0's `allow_downgrade` is the safe
downgrade; v1's `validate_only` is ignored, as a ZooKeeper-mode Kafka controller ignores it.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from controller.features import FeatureUpdate, UpgradeType

NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.UPDATE_FEATURES, context.api_version)
    updates = [_update(item, context.api_version) for item in request.feature_updates]
    outcome = await context.services.controller.update_features(updates)
    if isinstance(outcome, int):
        return adapter.build(
            cls,
            {
                "throttle_time": 0,
                "error_code": ErrorCode.not_controller,
                "error_message": NOT_CONTROLLER_MESSAGE,
                "results": [],
            },
        )
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "results": [
                {"feature": name, "error_code": error.error_code, "error_message": error.message}
                for name, error in outcome.items()
            ],
        },
    )


def _update(item: Any, version: int) -> FeatureUpdate:
    if version == 0:
        upgrade_type = UpgradeType.SAFE_DOWNGRADE if item.allow_downgrade else UpgradeType.UPGRADE
    else:
        upgrade_type = UpgradeType.of(int(item.upgrade_type))
    return FeatureUpdate(item.feature, int(item.max_version_level), upgrade_type)
