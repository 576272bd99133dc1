"""Differential: bad requests get the same error codes, or the same connection close, from
Apache Kafka 3.9 and from our brokers.

Each case sends one request (raw bytes where no valid request can carry the fault) to a
one-broker cluster of each kind, prepared alike, and reduces the answer to what a client can
observe: the error codes of the answer, or "closed". Request versions are ones both sides
serve. KNOWN_DIFFERENCES names the cases where we answer otherwise, with the reason
(DEVIATIONS.md); a listed case that no longer differs fails the test, so the list stays
exact.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import fetch_request, list_offsets_request, topic_spec
from tests.integration.wire import (
    LATEST,
    WireClient,
    create_topics,
    delete_topics,
    first_broker,
    list_offsets,
    metadata,
    produce,
)
from tests.reference.conftest import OneBroker

WAIT_S = 60.0
EXISTING, TINY = "existing", "tiny"
TINY_MAX_MESSAGE_BYTES = 1000
PRODUCE, FETCH, LIST_OFFSETS, API_VERSIONS = 0, 1, 2, 18
Outcome = tuple[int, ...] | str
Case = Callable[[WireClient], Outcome]

# case name -> reason we differ (DEVIATIONS.md); none known today.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _batch(value_bytes: int = 10) -> bytes:
    return build_batch([SimpleRecord(b"k", b"v" * value_bytes)])


def _corrupt(batch: bytes) -> bytes:
    damaged = bytearray(batch)
    damaged[-1] ^= 0xFF  # a record byte: the CRC no longer matches
    return bytes(damaged)


def _produce(topic: str, partition: int, records: bytes, acks: int = 1) -> Case:
    def case(client: WireClient) -> Outcome:
        return (int(produce(client, topic, partition, records, acks).error_code),)

    return case


def _create(spec: dict[str, Any]) -> Case:
    def case(client: WireClient) -> Outcome:
        return tuple(int(t.error_code) for t in create_topics(client, [spec]).topics)

    return case


def _delete_unknown(client: WireClient) -> Outcome:
    return tuple(int(r.error_code) for r in delete_topics(client, ["no-such-topic"]).responses)


def _metadata_of(name: str) -> Case:
    def case(client: WireClient) -> Outcome:
        return tuple(int(t.error_code) for t in metadata(client, [name]).topics)

    return case


def _list_offsets_unknown(client: WireClient) -> Outcome:
    return (int(list_offsets(client, "no-such-topic", 0, LATEST).error_code),)


def _fetch(offset: int, current_leader_epoch: int = -1) -> Case:
    def case(client: WireClient) -> Outcome:
        fields = fetch_request(EXISTING, 0, offset)
        fields["topics"][0]["partitions"][0]["current_leader_epoch"] = current_leader_epoch
        response = client.request(FETCH, 12, fields)
        partitions = response.responses[0].partitions
        return (int(response.error_code), *(int(p.error_code) for p in partitions))

    return case


def _list_offsets_bad_partition(client: WireClient) -> Outcome:
    response = client.request(LIST_OFFSETS, 7, list_offsets_request(EXISTING, 9, LATEST))
    return (int(response.topics[0].partitions[0].error_code),)


def _closed_after(frame: bytes) -> Case:
    def case(client: WireClient) -> Outcome:
        client.send_frame(frame)
        payload = client.read_frame()
        return "closed" if payload is None else f"answered {len(payload)} bytes"

    return case


def _raw_header(api_key: int, version: int) -> bytes:
    """Request header v1 (no tagged fields) for a key or version no schema describes."""
    client_id = b"diff"
    return struct.pack(">hhih", api_key, version, 1, len(client_id)) + client_id


def _api_versions_unsupported(client: WireClient) -> Outcome:
    """ApiVersions at a version the broker lacks: a v0 answer with UNSUPPORTED_VERSION."""
    # Past v3 the request header is v2: an empty tagged-fields section ends it.
    client.send_frame(_raw_header(API_VERSIONS, 99) + b"\x00")
    payload = client.read_frame()
    if payload is None:
        return "closed"
    (error_code,) = struct.unpack_from(">h", payload, 4)
    return (error_code,)


def _unknown_api_key(client: WireClient) -> Outcome:
    return _closed_after(_raw_header(999, 0))(client)


def _truncated_produce(client: WireClient) -> Outcome:
    return _closed_after(client.header(PRODUCE, 9) + b"\x00")(client)


CASES: dict[str, Case] = {
    "produce to an unknown topic": _produce("no-such-topic", 0, _batch()),
    "produce to a partition the topic lacks": _produce(EXISTING, 7, _batch()),
    "produce a batch with a bad CRC": _produce(EXISTING, 0, _corrupt(_batch())),
    "produce a batch over max.message.bytes": _produce(TINY, 0, _batch(2 * TINY_MAX_MESSAGE_BYTES)),
    "produce with acks=5": _produce(EXISTING, 0, _batch(), acks=5),
    "create a topic with an invalid name": _create(topic_spec("bad/name")),
    "create a topic with a name of 250 characters": _create(topic_spec("x" * 250)),
    "create a topic with RF 5 on one broker": _create(topic_spec("rf-too-big", 1, 5)),
    "create a topic with 0 partitions": _create(topic_spec("no-partitions", 0, 1)),
    "create a topic with a bad config value": _create(
        topic_spec("bad-value", configs={"retention.ms": "soon"})
    ),
    "create a topic with an unknown config": _create(
        topic_spec("unknown-config", configs={"no.such.config": "1"})
    ),
    "create a topic that exists": _create(topic_spec(EXISTING)),
    "delete an unknown topic": _delete_unknown,
    "metadata of an unknown topic": _metadata_of("no-such-topic"),
    "metadata of an invalid topic name": _metadata_of("bad/name"),
    "list offsets of an unknown topic": _list_offsets_unknown,
    "list offsets of a partition the topic lacks": _list_offsets_bad_partition,
    "fetch past the log end": _fetch(1000),
    "fetch with a leader epoch from the future": _fetch(0, current_leader_epoch=99),
    "api versions at an unknown version": _api_versions_unsupported,
    "an unknown api key": _unknown_api_key,
    "a truncated produce body": _truncated_produce,
}


def _prepare(cluster: ClusterHandle) -> str:
    address = first_broker(cluster)
    tiny = topic_spec(TINY, configs={"max.message.bytes": str(TINY_MAX_MESSAGE_BYTES)})
    with WireClient.to(address) as client:
        created = create_topics(client, [topic_spec(EXISTING), tiny])
    assert [int(t.error_code) for t in created.topics] == [0, 0]

    def led() -> bool:
        with WireClient.to(address) as client:
            return all(
                int(list_offsets(client, name, 0, LATEST).error_code) == 0
                for name in (EXISTING, TINY)
            )

    wait_until(led, WAIT_S, f"{EXISTING} and {TINY} led on {address}")
    return address


@pytest.fixture(scope="module")
def outcomes(one_broker: OneBroker) -> dict[str, dict[str, Outcome]]:
    found: dict[str, dict[str, Outcome]] = {}
    for impl in ("kafka", "ours"):
        address = _prepare(one_broker(impl))
        found[impl] = {}
        for name, case in CASES.items():
            with WireClient.to(address) as client:
                found[impl][name] = case(client)
    return found


def test_every_case_answers_as_kafka_or_is_a_listed_difference(
    outcomes: dict[str, dict[str, Outcome]],
) -> None:
    kafka, ours = outcomes["kafka"], outcomes["ours"]
    unexpected = {
        name: {"kafka": kafka[name], "ours": ours[name]}
        for name in CASES
        if kafka[name] != ours[name] and name not in KNOWN_DIFFERENCES
    }
    assert unexpected == {}, "\n".join(f"{k}: {v}" for k, v in unexpected.items())


def test_every_listed_difference_still_differs(outcomes: dict[str, dict[str, Outcome]]) -> None:
    kafka, ours = outcomes["kafka"], outcomes["ours"]
    assert [n for n in KNOWN_DIFFERENCES if kafka[n] == ours[n]] == []


def test_the_cases_are_refusals(outcomes: dict[str, dict[str, Outcome]]) -> None:
    """Each case is a fault Kafka refuses: no case may pass unnoticed on the reference."""
    accepted = [name for name, outcome in outcomes["kafka"].items() if outcome in ((0,), (0, 0))]
    assert accepted == []
