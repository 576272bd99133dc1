"""What the fuzzer checks around a run: the cluster's advertised APIs and brokers before it,
acknowledged records written during it, and broker health after it.

The acknowledged-records check is the one that matters most: a broker that survives garbage but
loses or invents committed data is worse than one that dies.
"""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.serial import entity_reader

from broker.protocol import adapter
from broker.protocol.header import skip_tagged_fields
from broker.protocol.registry import is_flexible, request_class, response_class

if TYPE_CHECKING:
    from .fuzz_security import ClientSecurity

ROOT = Path(__file__).resolve().parents[2]
API_VERSIONS, METADATA = 18, 3
PROBE_VERSION = 3
METADATA_VERSION = 1  # an empty topic list means "no topics" from v1 on
REQUEST_TIMEOUT_S = 10.0
HEALTH_WAIT_S = 30.0
TOPIC_READY_TIMEOUT_S = 60.0
ACKED_PARTITIONS = 3
ACKED_REPLICATION = 3
ACKED_BATCH = 20
ACKED_PAUSE_S = 0.05  # ~400 records/s: a steady witness, not a load test
DELIVERY_TIMEOUT_MS = 120_000
READ_BACK_TIMEOUT_S = 120.0
_STATUS_BROKER = re.compile(r"^broker (\d+) pid=(\S+) alive=(\S+)")


# ---- requests over a plain socket ---------------------------------------------------------


def encode_request(
    api_key: int, version: int, correlation_id: int, fields: dict[str, Any], client_id: bytes
) -> bytes:
    """A request payload (no size prefix) with header v1, or v2 for flexible versions."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if is_flexible(api_key, version):
        header += b"\x00"
    return header + adapter.encode(adapter.build(request_class(api_key, version), fields))


def probe_payload(correlation_id: int) -> bytes:
    """An ApiVersions v3 request: what every fuzzed frame is followed by."""
    fields = {"client_software_name": "fuzz", "client_software_version": "1"}
    return encode_request(API_VERSIONS, PROBE_VERSION, correlation_id, fields, b"fuzz-probe")


def read_exactly(sock: socket.socket, size: int, during: str = "a response") -> bytes:
    """`size` bytes from the socket; ConnectionError if it closes first (`during` says when)."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError(f"connection closed during {during}")
        chunks += chunk
    return bytes(chunks)


def decode_response(api_key: int, version: int, response: bytes) -> Any:
    """A response payload (after its size prefix) as a kio entity."""
    offset = 4  # correlation id
    if is_flexible(api_key, version) and api_key != API_VERSIONS:
        offset = skip_tagged_fields(response, offset)
    entity: Any
    entity, _size = entity_reader(response_class(api_key, version))(response, offset)
    return entity


def _open(address: str, security: ClientSecurity | None) -> socket.socket:
    if security is not None:
        return security.open_sync(address, REQUEST_TIMEOUT_S)
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=REQUEST_TIMEOUT_S)


def request(
    address: str,
    api_key: int,
    version: int,
    fields: dict[str, Any],
    security: ClientSecurity | None = None,
) -> Any:
    """One request on a fresh connection (logged in, with `security`); the decoded response."""
    payload = encode_request(api_key, version, 1, fields, b"fuzz-check")
    with _open(address, security) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", read_exactly(sock, 4))
        response = read_exactly(sock, size)
    return decode_response(api_key, version, response)


def api_version_ranges(
    address: str, security: ClientSecurity | None = None
) -> dict[int, tuple[int, int]]:
    fields = {"client_software_name": "fuzz", "client_software_version": "1"}
    response = request(address, API_VERSIONS, PROBE_VERSION, fields, security)
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def registered_brokers(address: str, security: ClientSecurity | None = None) -> dict[int, str]:
    """node id -> "host:port", as this broker's metadata lists them."""
    response = request(address, METADATA, METADATA_VERSION, {"topics": []}, security)
    return {int(b.node_id): f"{b.host}:{b.port}" for b in response.brokers}


def first_answer(
    addresses: list[str], security: ClientSecurity | None = None
) -> tuple[dict[int, tuple[int, int]], dict[int, str]]:
    """Advertised API ranges and registered brokers, from the first broker that answers."""
    errors = []
    for address in addresses:
        try:
            return api_version_ranges(address, security), registered_brokers(address, security)
        except (OSError, ValueError) as error:
            errors.append(f"{address}: {error!r}")
    raise SystemExit("fuzz: no bootstrap broker answered: " + "; ".join(errors))


# ---- acknowledged records -----------------------------------------------------------------


def client_config(
    bootstrap: str, security: ClientSecurity | None, **settings: Any
) -> dict[str, Any]:
    """librdkafka settings for the witness producer and the checks' clients."""
    if security is not None:
        return security.client_config(bootstrap, **settings)
    return {**settings, "bootstrap.servers": bootstrap}


def create_acked_topic(bootstrap: str, topic: str, security: ClientSecurity | None = None) -> None:
    admin = AdminClient(client_config(bootstrap, security))
    future = admin.create_topics([NewTopic(topic, ACKED_PARTITIONS, ACKED_REPLICATION)])[topic]
    try:
        future.result(timeout=60)
    except KafkaException as error:
        # An earlier run against the same cluster created it; the check starts from its end.
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def end_offsets(
    bootstrap: str, topic: str, security: ClientSecurity | None = None
) -> dict[int, int]:
    """High watermarks, retried while a new topic's metadata reaches the brokers (a created
    topic is not known everywhere at once, in Kafka either). Each try uses a new consumer:
    librdkafka keeps a cached "unknown partition" until its next periodic metadata refresh."""
    deadline = time.monotonic() + TOPIC_READY_TIMEOUT_S
    while True:
        consumer = _consumer(bootstrap, security)
        try:
            return {
                partition: consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=REQUEST_TIMEOUT_S
                )[1]
                for partition in range(ACKED_PARTITIONS)
            }
        except KafkaException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)
        finally:
            consumer.close()


def _consumer(bootstrap: str, security: ClientSecurity | None) -> Consumer:
    settings = {
        "group.id": "fuzz-check",  # required by the client; no group API is used
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    }
    return Consumer(client_config(bootstrap, security, **settings))


@dataclass
class AckedWriter:
    """An idempotent acks=all producer writing numbered records in a background thread."""

    bootstrap: str
    topic: str
    security: ClientSecurity | None = None
    acked: dict[tuple[int, int], bytes] = field(default_factory=dict)
    delivery_errors: list[str] = field(default_factory=list)
    produced: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fuzz-acked", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        settings = {
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            "linger.ms": 5,
        }
        producer = Producer(client_config(self.bootstrap, self.security, **settings))
        while not self._stop.is_set():
            for _ in range(ACKED_BATCH):
                try:
                    value = str(self.produced).encode()
                    producer.produce(self.topic, value, on_delivery=self._report)
                except BufferError:
                    break  # brokers are not keeping up: wait for acknowledgements first
                self.produced += 1
            producer.poll(ACKED_PAUSE_S)
        remaining = producer.flush(DELIVERY_TIMEOUT_MS / 1000)
        if remaining:
            self.delivery_errors.append(f"{remaining} records still unacknowledged at the end")

    def _report(self, error: KafkaError | None, message: Message) -> None:
        partition, offset = message.partition(), message.offset()
        if error is not None or partition is None or offset is None:
            self.delivery_errors.append(str(error))
            return
        self.acked[(partition, offset)] = message.value() or b""


def read_back(
    bootstrap: str, topic: str, start: dict[int, int], security: ClientSecurity | None = None
) -> tuple[dict[tuple[int, int], bytes], bool]:
    """Every record from `start` to the high watermark of each partition, and whether every
    partition was read to its end within the time limit."""
    consumer = _consumer(bootstrap, security)
    consumer.assign([TopicPartition(topic, p, offset) for p, offset in start.items()])
    stored: dict[tuple[int, int], bytes] = {}
    finished: set[int] = set()
    deadline = time.monotonic() + READ_BACK_TIMEOUT_S
    while len(finished) < len(start) and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=10_000, timeout=1.0):
            partition, error = message.partition(), message.error()
            if partition is None:
                continue
            if error is None:
                stored[(partition, message.offset() or 0)] = message.value() or b""
            elif error.code() == KafkaError._PARTITION_EOF:
                finished.add(partition)
    consumer.close()
    return stored, len(finished) == len(start)


# ---- broker health ------------------------------------------------------------------------


def process_status(cluster_dir: str) -> dict[int, tuple[int | None, bool]]:
    """broker id -> (pid, alive), from `scripts/cluster status`."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cluster"), "status", "--dir", cluster_dir],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found: dict[int, tuple[int | None, bool]] = {}
    for line in result.stdout.splitlines():
        match = _STATUS_BROKER.match(line.strip())
        if match is not None:
            pid_text = match.group(2)
            pid = int(pid_text) if pid_text.isdigit() else None
            found[int(match.group(1))] = (pid, match.group(3) == "yes")
    return found


@dataclass(frozen=True)
class BrokerHealth:
    node_id: int
    address: str
    alive: bool | None  # None without --dir: only the network checks are possible
    answering: bool
    unlisted: tuple[int, ...]  # brokers missing from this broker's metadata (or all, if mute)

    @property
    def registered(self) -> bool:
        return not self.unlisted

    @property
    def dead(self) -> bool:
        return self.alive is False or (self.alive is None and not self.answering)


def _within(seconds: float, check: Any) -> bool:
    """Retry `check` until it holds: a broker working through a backlog may answer late."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():
                return True
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def _unlisted(
    address: str, expected: set[int], wait_s: float, security: ClientSecurity | None
) -> tuple[int, ...]:
    """Brokers that `address`'s metadata does not list, after waiting up to `wait_s`."""
    missing = tuple(sorted(expected))

    def check() -> bool:
        nonlocal missing
        missing = tuple(sorted(expected - set(registered_brokers(address, security))))
        return not missing

    _within(wait_s, check)
    return missing


def broker_health(
    brokers: dict[int, str],
    cluster_dir: str | None,
    pids_before: dict[int, tuple[int | None, bool]],
    security: ClientSecurity | None = None,
) -> list[BrokerHealth]:
    after = process_status(cluster_dir) if cluster_dir else {}
    report = []
    for node_id, address in sorted(brokers.items()):
        alive: bool | None = None  # unknown: no --dir, or status did not list the broker
        if node_id in pids_before:
            pid, running = after.get(node_id, (None, False))
            alive = running and pid == pids_before[node_id][0]
        wait_s = 0.0 if alive is False else HEALTH_WAIT_S  # a dead process will not recover
        answering = _within(wait_s, lambda a=address: bool(api_version_ranges(a, security)))
        unlisted = _unlisted(address, set(brokers), wait_s, security)
        report.append(BrokerHealth(node_id, address, alive, answering, unlisted))
    return report


def log_positions(cluster_dir: str | None, broker_ids: list[int]) -> dict[int, int]:
    if not cluster_dir:
        return {}
    paths = {i: Path(cluster_dir) / f"broker-{i}" / "broker.log" for i in broker_ids}
    return {i: path.stat().st_size for i, path in paths.items() if path.exists()}


def new_error_lines(cluster_dir: str | None, start: dict[int, int]) -> list[str]:
    """ERROR lines (handler failures, parser disagreements) broker logs gained in the run."""
    found: list[str] = []
    for broker_id, position in sorted(start.items()):
        path = Path(str(cluster_dir)) / f"broker-{broker_id}" / "broker.log"
        with path.open("rb") as log:
            log.seek(position)
            text = log.read().decode(errors="replace")
        for line in text.splitlines():
            if " ERROR " in line or " CRITICAL " in line:
                found.append(f"broker {broker_id}: {line}")
    return found
