"""scripts/fuzz against a cluster of its own: thousands of mutated requests, recorded from real
clients, leave every broker alive, registered and answering, and the log holding exactly the
records that were acknowledged meanwhile.

The run is bounded (a few thousand frames, a firing time limit) so it fits CI; `scripts/fuzz`
by hand runs millions. The seed is random per run and printed in every failure message, with
the fuzzer's output, so a failure can be replayed (`--seed`).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO_ROOT, ClusterFactory

pytestmark = pytest.mark.integration

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


def _run_fuzz(bootstrap: str, cluster_dir: Path, report_path: Path, seed: int) -> str:
    args = [sys.executable, str(FUZZ_SCRIPT), "--bootstrap", bootstrap]
    args += ["--dir", str(cluster_dir), "--frames", str(FRAMES), "--seed", str(seed)]
    args += ["--max-seconds", str(FIRING_LIMIT_S), "--report-json", str(report_path)]
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
def test_fuzzed_requests_leave_brokers_alive_and_acknowledged_records_intact(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides=OVERRIDES)
    seed = random.randrange(2**32)
    report_path = tmp_path / "fuzz-report.json"
    output = _run_fuzz(cluster.bootstrap, cluster.dir, report_path, seed)
    report = json.loads(report_path.read_text())
    context = f"seed {seed}\n{output}"

    assert report["crashes"] == [], f"brokers died: {report['crashes']}\n{context}"
    assert report["unhealthy"] == [], f"brokers not serving: {report['unhealthy']}\n{context}"
    assert report["bounds_refused"] == [], f"legitimate frames refused\n{context}"
    assert report["missing_apis"] == [], f"APIs missing from the corpus\n{context}"
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
