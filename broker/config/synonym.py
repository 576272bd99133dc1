"""One layer a config's value can come from, as DescribeConfigs reports it (kept apart so the
command-line tools can use it without loading the broker)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: int  # Kafka's ConfigSource code
