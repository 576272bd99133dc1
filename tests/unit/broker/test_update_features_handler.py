"""The UpdateFeatures handler against a fake controller: v0's allow_downgrade is a safe
downgrade and v1's upgrade type is passed through (an unknown one as UNKNOWN); a broker that is
not the controller answers NOT_CONTROLLER at the top level with Kafka's message."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import update_features
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.header import RequestHeader
from broker.protocol.registry import request_class
from controller.errors import TopicError
from controller.features import FeatureUpdate, UpgradeType


class _Controller:
    def __init__(self, active: bool) -> None:
        self.active = active
        self.asked: list[FeatureUpdate] = []

    async def update_features(self, updates: list[FeatureUpdate]) -> dict[str, TopicError] | int:
        self.asked.extend(updates)
        if not self.active:
            return int(ErrorCode.not_controller)
        return {u.feature: TopicError(ErrorCode.invalid_request, "no") for u in updates}


def _handle(controller: _Controller, version: int, items: list[dict[str, Any]]) -> Any:
    header = RequestHeader(
        api_key=ApiKey.UPDATE_FEATURES, api_version=version, correlation_id=1, client_id=None
    )
    services = SimpleNamespace(controller=controller, authorizer=None)
    context = RequestContext(header, "127.0.0.1", "PLAINTEXT", services)  # type: ignore[arg-type]
    fields = {"timeout": 60000, "feature_updates": items, "validate_only": False}
    request = adapter.build(request_class(ApiKey.UPDATE_FEATURES, version), fields)
    response = asyncio.run(update_features.handle(context, request))
    adapter.encode(response)
    return response


def test_v0_allow_downgrade_is_a_safe_downgrade() -> None:
    controller = _Controller(active=True)
    items = [
        {"feature": "a", "max_version_level": 0, "allow_downgrade": True},
        {"feature": "b", "max_version_level": 2, "allow_downgrade": False},
    ]
    response = _handle(controller, 0, items)
    assert controller.asked == [
        FeatureUpdate("a", 0, UpgradeType.SAFE_DOWNGRADE),
        FeatureUpdate("b", 2, UpgradeType.UPGRADE),
    ]
    assert response.error_code == ErrorCode.none
    assert [(r.feature, r.error_code, r.error_message) for r in response.results] == [
        ("a", ErrorCode.invalid_request, "no"),
        ("b", ErrorCode.invalid_request, "no"),
    ]


def test_v1_upgrade_types() -> None:
    controller = _Controller(active=True)
    items = [
        {"feature": "a", "max_version_level": 1, "upgrade_type": 3},
        {"feature": "b", "max_version_level": 1, "upgrade_type": 9},
    ]
    _handle(controller, 1, items)
    assert [u.upgrade_type for u in controller.asked] == [
        UpgradeType.UNSAFE_DOWNGRADE,
        UpgradeType.UNKNOWN,
    ]


def test_not_the_controller() -> None:
    items = [{"feature": "a", "max_version_level": 1, "upgrade_type": 1}]
    response = _handle(_Controller(active=False), 1, items)
    assert response.error_code == ErrorCode.not_controller
    assert response.error_message == "This is not the correct controller for this cluster."
    assert response.results == ()
