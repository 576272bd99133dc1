"""Connection quotas: `max.connections.per.ip` closes the connection over the limit at once,
and a slot freed by a closed connection is usable again."""

from __future__ import annotations

import contextlib
from typing import Any

from tests.integration.conftest import ClusterFactory, wait_until
from tests.integration.wire import API_VERSIONS, WireClient, first_broker

PER_IP_LIMIT = 3
# The test's connections come from an address of their own: the broker's controller channel
# connects to the broker itself from 127.0.0.1 (as Kafka's does), and that connection counts
# against 127.0.0.1's limit as it would on Kafka.
CLIENT_HOST = "127.0.0.2"


def _answers(client: WireClient) -> bool:
    fields = {"client_software_name": "t", "client_software_version": "1"}
    response: Any = client.request(API_VERSIONS, 3, fields)
    return int(response.error_code) == 0


def _connect(address: str) -> WireClient:
    return WireClient.to(address, timeout_s=5, source_host=CLIENT_HOST)


def _new_connection_served(address: str) -> bool:
    try:
        with _connect(address) as client:
            return _answers(client)
    except (ConnectionError, OSError):
        return False


def test_connections_over_the_per_ip_limit_are_closed(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(brokers=1, overrides={"max.connections.per.ip": str(PER_IP_LIMIT)})
    address = first_broker(cluster)
    # `up` and status probes may still hold connections for a moment: wait until all free.
    wait_until(lambda: _new_connection_served(address), 15, "a connection slot")
    held = [_connect(address) for _ in range(PER_IP_LIMIT)]
    try:
        assert all(_answers(client) for client in held)
        with _connect(address) as extra:
            assert extra.is_closed_by_peer(), "the connection over the limit must be closed"
        held.pop().close()
        wait_until(lambda: _new_connection_served(address), 15, "the freed slot to be reused")
    finally:
        for client in held:
            with contextlib.suppress(OSError):
                client.close()
    log_text = cluster.broker_log(1).read_text(errors="replace")
    assert f"max.connections.per.ip={PER_IP_LIMIT} reached" in log_text
