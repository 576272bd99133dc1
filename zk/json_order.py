"""Key order of the JVM maps Kafka serializes into znodes.

Kafka builds most znode JSON from hash maps, so the bytes it writes follow the iteration order
of those maps, not the order the keys appear in the source. We reproduce that order so a
znode we write is byte-identical to Kafka's (useful when people diff `zookeeper-shell` output).
The facts used: Java's String.hashCode; Scala 2.13 mutable.HashMap (power-of-two table, hash
spread `h ^ (h >>> 16)`, buckets kept sorted by signed hash, grows when size + 1 reaches
0.75 * table length); Java's ConcurrentHashMap behind java.util.Properties (same spread,
insertion order inside a bucket, default table of 16).
"""

from __future__ import annotations

from collections.abc import Iterable

_LOAD_FACTOR = 0.75
_DEFAULT_TABLE_LENGTH = 16


def java_string_hash(text: str) -> int:
    """String.hashCode() as a signed 32-bit int (UTF-16 code units)."""
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        unit = (encoded[index] << 8) | encoded[index + 1]
        value = (31 * value + unit) & 0xFFFFFFFF
    return _signed(value)


def _signed(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _spread(hash_code: int) -> int:
    unsigned = hash_code & 0xFFFFFFFF
    return _signed(unsigned ^ (unsigned >> 16))


def _table_length_for_capacity(capacity: int) -> int:
    # Scala 2.13 HashMap.tableSizeFor: highestOneBit(max(capacity - 1, 4)) * 2
    base = max(capacity - 1, 4)
    return 1 << base.bit_length()


def scala_mutable_hash_map_order(
    keys: Iterable[str], initial_entries: int | None = None
) -> list[str]:
    """Iteration order of a scala.collection.mutable.HashMap holding `keys`.

    `initial_entries`: how many entries the map was built with (`mutable.Map(k -> v, ...)`
    sizes its table from that count); None for a map that started empty and grew.
    """
    key_list = list(dict.fromkeys(keys))
    if initial_entries:
        table_length = _table_length_for_capacity(int((initial_entries + 1) / _LOAD_FACTOR))
    else:
        table_length = _DEFAULT_TABLE_LENGTH
    for size in range(len(key_list)):
        if size + 1 >= int(table_length * _LOAD_FACTOR):
            table_length *= 2
    mask = table_length - 1

    def position(key: str) -> tuple[int, int]:
        spread = _spread(java_string_hash(key))
        return (spread & mask, spread)

    return sorted(key_list, key=position)


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of java.util.Properties (Java 9+: a ConcurrentHashMap) filled with `keys`
    in the given order. Exact while no resize happens (up to 11 keys); beyond that the order is
    the post-resize bucket order, which is what matters for readability."""
    key_list = list(dict.fromkeys(keys))
    table_length = _DEFAULT_TABLE_LENGTH
    while len(key_list) >= int(table_length * _LOAD_FACTOR):
        table_length *= 2
    mask = table_length - 1
    insertion = {key: index for index, key in enumerate(key_list)}

    def position(key: str) -> tuple[int, int]:
        return ((_spread(java_string_hash(key)) & 0x7FFFFFFF) & mask, insertion[key])

    return sorted(key_list, key=position)
