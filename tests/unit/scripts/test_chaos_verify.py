"""The chaos checker's verdict on stored records: a copy under one producer epoch is a
duplicate (the broker's idempotence failed); a copy under a later epoch is a client re-send."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools.chaos_produce import Ack
from _tools.chaos_replicas import batch_epochs
from _tools.chaos_verify import EpochAt, check_records

from broker.log.record_codec import SimpleRecord, build_batch

RUN = "run1"


def _payload(sequence: int) -> bytes:
    return f"{RUN}:0.0:{sequence}".encode()


def _epochs(by_offset: dict[int, int]) -> EpochAt:
    return lambda _partition, offset: by_offset.get(offset)


def test_a_second_copy_under_the_same_epoch_is_a_duplicate() -> None:
    stored = {0: [(0, _payload(0)), (1, _payload(1)), (2, _payload(1))]}
    acks = [Ack(0.0, 0, 0, _payload(0)), Ack(0.0, 0, 1, _payload(1))]
    result = check_records(acks, stored, RUN, _epochs({0: 0, 1: 0, 2: 0}))
    assert (result.duplicated, result.resent_after_epoch_bump, result.lost) == (1, 0, 0)


def test_a_second_copy_under_a_later_epoch_is_counted_as_a_client_resend() -> None:
    stored = {0: [(0, _payload(0)), (1, _payload(1)), (2, _payload(1))]}
    acks = [Ack(0.0, 0, 0, _payload(0)), Ack(0.0, 0, 2, _payload(1))]
    result = check_records(acks, stored, RUN, _epochs({0: 2, 1: 2, 2: 3}))
    assert (result.duplicated, result.resent_after_epoch_bump, result.lost) == (0, 1, 0)
    assert result.samples["resent after an epoch bump"] == [f"{_payload(1)!r} epochs [2, 3]"]


def test_an_unknown_epoch_counts_as_a_duplicate() -> None:
    stored = {0: [(0, _payload(0)), (1, _payload(0))]}
    result = check_records([], stored, RUN, _epochs({0: 1}))
    assert (result.duplicated, result.resent_after_epoch_bump) == (1, 0)


def test_batch_epochs_reads_each_batch_header() -> None:
    first = build_batch([SimpleRecord(None, b"a"), SimpleRecord(None, b"b")], producer_epoch=4)
    second = build_batch([SimpleRecord(None, b"c")], base_offset=2, producer_epoch=5)
    assert batch_epochs(first + second + second[:20]) == [(0, 4), (2, 5)]
