"""The current leader of a partition, told to a client whose Produce (v10+) or Fetch (v16+)
met NOT_LEADER_OR_FOLLOWER (KIP-951), so it can move without a Metadata round trip.

Each answered partition carries the leader's id and epoch (-1 when unknown); the response
lists the endpoint of each named leader that is alive on the request's listener, as Kafka's
`getCurrentLeader` does (from ZooKeeper's partition state here, Kafka's metadata cache there).
"""

from __future__ import annotations

from typing import Any

from broker.cluster.metadata_cache import MetadataCache


class CurrentLeaders:
    def __init__(self, cache: MetadataCache, listener_name: str) -> None:
        self._cache = cache
        self._listener_name = listener_name
        self._endpoints: dict[int, dict[str, Any]] = {}

    def leader(self, topic: str, partition: int) -> dict[str, int]:
        """The partition's `current_leader` field; remembers the leader's endpoint."""
        leader_id, leader_epoch = self._cache.leader_and_epoch(topic, partition)
        broker = self._cache.live_broker(leader_id) if leader_id >= 0 else None
        endpoint = None if broker is None else broker.endpoint_for(self._listener_name)
        if broker is not None and endpoint is not None:
            host, port = endpoint
            self._endpoints[leader_id] = {
                "node_id": leader_id,
                "host": host,
                "port": port,
                "rack": broker.rack,
            }
        return {"leader_id": leader_id, "leader_epoch": leader_epoch}

    def node_endpoints(self) -> list[dict[str, Any]]:
        return [self._endpoints[node_id] for node_id in sorted(self._endpoints)]
