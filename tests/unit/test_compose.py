"""docker-compose.yml cannot be run here (no Docker engine); check it is valid and that every
broker's configuration, as the image assembles it, is one our broker accepts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from broker.config import build_config, read_properties

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(document, dict)
    return document


def _image_properties() -> dict[str, str]:
    dockerfile = (ROOT / "Dockerfile").read_text()
    lines = re.findall(r"'([a-z.]+=[^']*)'", dockerfile)
    return read_properties("\n".join(lines))


def test_compose_has_zookeeper_and_three_brokers() -> None:
    services = _compose()["services"]
    assert services["zookeeper"]["image"].startswith("zookeeper:")
    brokers = sorted(name for name in services if name.startswith("broker-"))
    assert brokers == ["broker-1", "broker-2", "broker-3"]


def test_every_broker_config_is_valid_and_distinct() -> None:
    services = _compose()["services"]
    seen_ids = set()
    for name, service in services.items():
        if not name.startswith("broker-"):
            continue
        arguments = service["command"]
        overrides = [arguments[i + 1] for i, a in enumerate(arguments) if a == "--override"]
        raw = _image_properties()
        raw.update(dict(o.split("=", 1) for o in overrides))
        config = build_config(raw)
        assert config.broker_id not in seen_ids
        seen_ids.add(config.broker_id)
        assert config.inter_broker_listener_name == "INTERNAL"
        external = [e for e in config.advertised_listeners if e.listener_name == "EXTERNAL"]
        assert [f"{e.port}:{e.port}" for e in external] == service["ports"]
