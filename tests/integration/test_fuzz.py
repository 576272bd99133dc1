"""scripts/fuzz against a cluster of its own: thousands of mutated requests, recorded from real
clients, leave every broker alive, registered and answering, and the log holding exactly the
records that were acknowledged meanwhile.

The run is bounded (a few thousand frames, a firing time limit) so it fits CI; `scripts/fuzz`
by hand runs millions. The seed is random per run and printed in every failure message, with
the fuzzer's output, so a failure can be replayed (`--seed`).

A SASL_SSL cluster with the ACL authorizer is fuzzed too, before and after the fuzzer's SCRAM
login: its listeners admit no recording proxy, so its corpus is a valid frame of every request
version the brokers decode, built from kio's schemas.
"""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from broker.protocol.registry import is_flexible
from tests.integration.conftest import REPO_ROOT, ClusterFactory
from tests.unit.broker.sample_requests import (
    decodable_request_classes,
    encode_entity,
    sample_entity,
)

FUZZ_SCRIPT = REPO_ROOT / "scripts" / "fuzz"
FRAMES = 4000
MIN_FRAMES = 1000  # fewer means the firing limit cut the run short: too little to mean much
FIRING_LIMIT_S = 90
FUZZ_TIMEOUT_S = 200  # recording + firing + checks
# Mutations must both reach deep (answered) and be refused (closed); a fuzzer whose frames all
# bounce off the header, or all pass as valid, tests little. Typical: ~70 % closed, ~25 % answered.
MIN_CLOSED_SHARE = 0.3
MIN_ANSWERED_SHARE = 0.1
# Kafka's own per-request bound would be 10,000; mutated CreateTopics must stay small.
OVERRIDES = {"create.topics.max.partitions": "64"}


# The SASL_SSL run: fewer frames, two phases. Each frame after authentication costs a TLS
# connection and a SCRAM login, so the firing bound is wide: beside a CPU hog the fuzzer fired
# only 189 of its 800 in 20 s. The phase minimum only proves that each phase ran.
SASL_FRAMES = 1600
SASL_FIRING_LIMIT_S = 60
SASL_MIN_PHASE_FRAMES = 100
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
BEFORE_AUTHENTICATION = "before authentication"
AFTER_AUTHENTICATION = "after authentication"
CORPUS_CLIENT_ID = b"fuzz-schema"


def _run_fuzz(
    bootstrap: str,
    cluster_dir: Path,
    report_path: Path,
    seed: int,
    frames: int = FRAMES,
    firing_limit_s: int = FIRING_LIMIT_S,
    extra: tuple[str, ...] = (),
) -> str:
    args = [sys.executable, str(FUZZ_SCRIPT), "--bootstrap", bootstrap]
    args += ["--dir", str(cluster_dir), "--frames", str(frames), "--seed", str(seed)]
    args += ["--max-seconds", str(firing_limit_s), "--report-json", str(report_path), *extra]
    result = subprocess.run(
        args,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=FUZZ_TIMEOUT_S,
        check=False,
    )
    output = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    assert report_path.exists(), f"scripts/fuzz wrote no report (seed {seed})\n{output}"
    return output


def _share(report: dict[str, Any], outcome: str) -> float:
    return float(report["outcomes"][outcome]) / max(int(report["frames"]), 1)


@pytest.mark.timeout(360)
def _assert_brokers_survived(report: dict[str, Any], context: str) -> None:
    """No broker died or stopped serving, no legitimate frame was refused, and the corpus
    covers every API the brokers advertise."""
    assert report["crashes"] == [], f"brokers died: {report['crashes']}\n{context}"
    assert report["unhealthy"] == [], f"brokers not serving: {report['unhealthy']}\n{context}"
    assert report["bounds_refused"] == [], f"legitimate frames refused\n{context}"
    assert report["missing_apis"] == [], f"APIs missing from the corpus\n{context}"


def test_fuzzed_requests_leave_brokers_alive_and_acknowledged_records_intact(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides=OVERRIDES)
    seed = random.randrange(2**32)
    report_path = tmp_path / "fuzz-report.json"
    output = _run_fuzz(cluster.bootstrap, cluster.dir, report_path, seed)
    report = json.loads(report_path.read_text())
    context = f"seed {seed}\n{output}"

    _assert_brokers_survived(report, context)
    assert report["acked"] > 0, f"the witness producer got no acknowledgement\n{context}"
    assert report["lost"] == 0, f"acknowledged records lost\n{context}"
    assert report["extra"] == 0, f"records nobody acknowledged\n{context}"
    assert report["frames"] >= MIN_FRAMES, f"too few frames fired\n{context}"
    assert _share(report, "closed") >= MIN_CLOSED_SHARE, f"too few frames refused\n{context}"
    assert _share(report, "answered") >= MIN_ANSWERED_SHARE, f"too few answered\n{context}"
    assert "problems" in report and not report["problems"], context
    assert output.startswith("exit 0"), context

    status = cluster.status()
    assert sorted(status.brokers) == cluster.broker_ids, status.text
    for broker_id, broker in status.brokers.items():
        assert broker.alive and broker.registered, f"broker {broker_id}: {status.text}"


def _schema_corpus(path: Path) -> None:
    """A valid frame of every request version the brokers decode (header v1, or v2 when
    flexible), in scripts/fuzz's corpus format."""
    frames = []
    for cls in decodable_request_classes():
        api_key, version = cls.__api_key__, cls.__version__
        header = struct.pack(">hhih", api_key, version, 1, len(CORPUS_CLIENT_ID))
        header += CORPUS_CLIENT_ID + (b"\x00" if is_flexible(api_key, version) else b"")
        payload = header + encode_entity(sample_entity(cls))
        frames.append(struct.pack(">i", len(payload)) + payload)
    path.write_bytes(b"".join(frames))


@pytest.mark.timeout(240)
def test_frames_before_and_after_sasl_authentication_leave_brokers_alive(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(
        security="sasl_ssl", overrides={**OVERRIDES, "authorizer.class.name": AUTHORIZER}
    )
    corpus = tmp_path / "schema-corpus.bin"
    _schema_corpus(corpus)
    seed = random.randrange(2**32)
    report_path = tmp_path / "fuzz-report.json"
    security = ("--command-config", str(cluster.dir / "client.properties"))
    output = _run_fuzz(
        cluster.bootstrap,
        cluster.dir,
        report_path,
        seed,
        SASL_FRAMES,
        SASL_FIRING_LIMIT_S,
        (*security, "--corpus", str(corpus)),
    )
    report = json.loads(report_path.read_text())
    context = f"seed {seed}\n{output}"

    _assert_brokers_survived(report, context)
    phases = report["phases"]
    assert sorted(phases) == sorted([BEFORE_AUTHENTICATION, AFTER_AUTHENTICATION]), context
    for name, phase in phases.items():
        assert phase["frames"] >= SASL_MIN_PHASE_FRAMES, f"too few frames {name}\n{context}"
    before = phases[BEFORE_AUTHENTICATION]["outcomes"]
    # Before authentication a broker takes ApiVersions and the SASL requests only: the rest
    # closes the connection, so few frames there are followed by an answered probe.
    assert before["closed"] > before["answered"], f"frames served unauthenticated\n{context}"
    assert phases[AFTER_AUTHENTICATION]["outcomes"]["answered"] > 0, context
    assert report["refused"] == 0, f"connections or logins refused\n{context}"
    assert report["acked"] > 0, f"the witness producer got no acknowledgement\n{context}"
    assert report["lost"] == 0, f"acknowledged records lost\n{context}"
    assert report["extra"] == 0, f"records nobody acknowledged\n{context}"
    assert "problems" in report and not report["problems"], context
    assert output.startswith("exit 0"), context
