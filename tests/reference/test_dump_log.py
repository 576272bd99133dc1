"""Differential: kafka-dump-log. Apache Kafka 3.9's own DumpLogSegments reads the segment files
our broker writes, and prints exactly what our kafka-dump-log prints for them: plain, keyed and
headed records, a compressed batch, an idempotent producer's batches, and a committed and an
aborted transaction with their markers, the aborted one's `.txnindex` entry,
`__transaction_state` with --transaction-log-decoder, and the producer-state `.snapshot` a
clean shutdown writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import ClusterFactory, wait_until

TOPIC = "dumped"
TIMEOUT_S = 60
QUIET_LOG4J = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""


def _write_records(bootstrap: str) -> None:
    from confluent_kafka import Producer

    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    plain.produce(TOPIC, b"no key", partition=0)
    plain.produce(TOPIC, b"with headers", b"k1", partition=0, headers=[("h", b"v"), ("e", b"")])
    assert plain.flush(TIMEOUT_S) == 0
    gzipped = Producer({"bootstrap.servers": bootstrap, "compression.type": "gzip"})
    for i in range(5):
        gzipped.produce(TOPIC, f"compressed-{i}".encode(), f"c{i}".encode(), partition=0)
    assert gzipped.flush(TIMEOUT_S) == 0
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "dump-app"})
    transactional.init_transactions(TIMEOUT_S)
    for outcome in ("committed", "aborted"):
        transactional.begin_transaction()
        transactional.produce(TOPIC, outcome.encode(), b"t", partition=0)
        transactional.flush(TIMEOUT_S)
        if outcome == "committed":
            transactional.commit_transaction(TIMEOUT_S)
        else:
            transactional.abort_transaction(TIMEOUT_S)


def _kafka_dump(reference_lib: Path, log4j: Path, files: str, *flags: str) -> str:
    command = ["java", f"-Dlog4j.configuration=file:{log4j}", "-cp", f"{reference_lib}/*"]
    command += ["kafka.tools.DumpLogSegments", "--files", files, *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _our_dump(files: str, *flags: str) -> str:
    tool = str(Path(sys.executable).parent / "kafka-dump-log")
    result = subprocess.run(
        [tool, "--files", files, *flags], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_kafka_39_dumps_our_segments_as_we_do(
    reference_lib: Path, make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(
        brokers=1,
        overrides={
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "offsets.topic.replication.factor": "1",
        },
    )
    _write_records(cluster.bootstrap)
    log4j = tmp_path / "log4j.properties"
    log4j.write_text(QUIET_LOG4J)
    segments = sorted(cluster.dir.glob(f"broker-1/*/{TOPIC}-0/*.log"))
    assert segments, f"no segment of {TOPIC}-0 under {cluster.dir}"
    files = ",".join(str(path) for path in segments)
    for flags in ((), ("--print-data-log",)):
        ours = _our_dump(files, *flags)
        assert "isControl: true" in ours and "compresscodec: gzip" in ours
        assert ours == _kafka_dump(reference_lib, log4j, files, *flags)
    # The aborted transaction's entry in the .txnindex of the segment with its marker.
    indexes = sorted(cluster.dir.glob(f"broker-1/*/{TOPIC}-0/*.txnindex"))
    files = ",".join(str(path) for path in indexes)
    ours = _our_dump(files)
    assert ours.count("version: 0 producerId:") == 1
    assert ours == _kafka_dump(reference_lib, log4j, files)
    # __transaction_state, decoded: each of the id's states, one partition per transaction.
    states = sorted(cluster.dir.glob("broker-1/*/__transaction_state-0/*.log"))
    files = ",".join(str(path) for path in states)
    ours = _our_dump(files, "--transaction-log-decoder")
    assert f"state=CompleteAbort,partitions=[{TOPIC}-0]" in ours
    assert ours == _kafka_dump(reference_lib, log4j, files, "--transaction-log-decoder")
    # A clean shutdown writes each log's producer state at its end.
    cluster.kill(1, "TERM")
    wait_until(lambda: _snapshots(cluster.dir) != [], TIMEOUT_S, f"a .snapshot of {TOPIC}-0")
    files = ",".join(str(path) for path in _snapshots(cluster.dir))
    ours = _our_dump(files)
    assert ours.count("producerId: ") == 1, ours  # the transactional producer
    assert ours == _kafka_dump(reference_lib, log4j, files)


def _snapshots(cluster_dir: Path) -> list[Path]:
    return sorted(cluster_dir.glob(f"broker-1/*/{TOPIC}-0/*.snapshot"))
