"""Child process for test_bounds: mutate sample bodies, bounds-check, then let kio parse.

Run as `python -m tests.unit.broker.kio_crosscheck SEED COUNT`. kio's native parser aborts
the whole process on an allocation it cannot make, so this must run apart from pytest: the
parent asserts this process exits 0. Any body the bounds check accepts is handed to kio; if
kio then reads a different number of bytes than the check walked, that is printed and the
exit code is 1 (the check and the parser took different paths).
"""

from __future__ import annotations

import random
import struct
import sys

from kio.serial import entity_reader

from broker.protocol.bounds import BoundsError, check_body, length_positions
from tests.unit.broker.sample_requests import (
    decodable_request_classes,
    encode_entity,
    sample_entity,
)

_WILD_INT32 = [-2, -1, 0, 1, 0x7FFF, 0x7FFFFFFF, -0x80000000, 1 << 20]
_WILD_UVARINT = [b"\x00", b"\x01", b"\x7f", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x2d"]


def _wild_length(body: bytearray, position: int, encoding: str, rng: random.Random) -> bytes:
    if encoding == "int16":
        value = rng.choice([-2, -1, 0, 1, 0x7FFF, -0x8000])
        return bytes(body[:position]) + struct.pack(">h", value) + bytes(body[position + 2 :])
    if encoding == "int32":
        value = rng.choice(_WILD_INT32)
        return bytes(body[:position]) + struct.pack(">i", value) + bytes(body[position + 4 :])
    # Replace one varint (however long) with a wild one.
    end = position
    while end < len(body) and body[end] & 0x80:
        end += 1
    return bytes(body[:position]) + rng.choice(_WILD_UVARINT) + bytes(body[end + 1 :])


def mutate(body: bytes, cls: type, rng: random.Random) -> bytes:
    data = bytearray(body)
    choice = rng.randrange(4)
    marks = length_positions(cls, body, 0)
    if choice == 0 and marks:
        position, encoding = rng.choice(marks)
        return _wild_length(data, position, encoding, rng)
    if choice == 1 and data:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    if choice == 2:
        return bytes(data[: rng.randrange(len(data) + 1)])
    position = rng.randrange(len(data) + 1)
    return bytes(data[:position]) + rng.randbytes(rng.randint(1, 6)) + bytes(data[position:])


def run(seed: int, count: int) -> int:
    rng = random.Random(seed)
    samples = [(cls, encode_entity(sample_entity(cls))) for cls in decodable_request_classes()]
    disagreements = 0
    parsed = 0
    for _ in range(count):
        cls, body = rng.choice(samples)
        mutated = mutate(body, cls, rng)
        try:
            end = check_body(cls, mutated, 0)
        except BoundsError:
            continue
        try:
            _, size = entity_reader(cls)(mutated, 0)
        except Exception:  # kio refusing on its own is fine: it raised, it did not abort
            continue
        parsed += 1
        if size != end:
            disagreements += 1
            print(f"{cls.__module__}: check ended at {end}, kio at {size}: {mutated.hex()}")
    # A mutator whose bodies all bounce off the check would prove nothing about kio.
    print(f"parsed {parsed} of {count} mutated bodies")
    if parsed < count // 20:
        print("too few mutated bodies passed the check to exercise kio")
        return 1
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(run(int(sys.argv[1]), int(sys.argv[2])))
