"""The lab (scripts/lab) end to end, in Debian's chromium driven by Playwright: the page shows
what ZooKeeper says (brokers, controller, partition grid), each replica's log end and high
watermark as the brokers give them, a throughput chart drawn from a burst produced with its
button, a consumer group's lag and a member started and stopped from the page; its kill
button kills the controller and the page shows the new one and the timeline entry without a
reload, the guided "kill the controller" and "expire a broker's ZooKeeper session" scenarios
run to their end, and actions need the CSRF token.

Screenshots go to $LAB_ARTIFACTS (default: a directory under pytest's tmp dir);
$LAB_README_SCREENSHOT, when set, is where the README's screenshot is saved.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from scripts._cluster.ports import PortReservation, reserve_port
from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)

CHROMIUM = Path("/usr/bin/chromium")
LAB_SCRIPT = REPO_ROOT / "scripts" / "lab"
TOPIC = "lab-topic"
PARTITIONS = 3
RECORDS = 300
SESSION_TIMEOUT_MS = "6000"
LAB_START_TIMEOUT_S = 30.0
FAILOVER_TIMEOUT_MS = 60_000
PAGE_TIMEOUT_MS = 20_000
START_BROKER_TIMEOUT_MS = 120_000
SCENARIO_TIMEOUT_MS = 150_000
BURST_RECORDS = 3000
LAG_GROUP = "lab-test-lag"
LAG_COMMITTED_OFFSET = 10
MEMBER_GROUP = "lab-group"
GROUP_TIMEOUT_MS = 90_000
HTTP_TIMEOUT_S = 5.0
VIEWPORT = {"width": 1400, "height": 1000}

# A missing prerequisite fails the module with a message (the rules forbid skipping).
try:
    from playwright import sync_api
except ImportError:
    pytest.fail("playwright is not installed in the venv (make setup)", pytrace=False)
if not CHROMIUM.exists():
    pytest.fail("Debian's chromium is not installed (apt-get install chromium)", pytrace=False)


@dataclass
class Lab:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    port: PortReservation


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response:
            status: int = response.status
            return status
    except (urllib.error.URLError, OSError):
        return 0


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        return error.code


def _start_lab(cluster: ClusterHandle, log_dir: Path, allow_actions: bool) -> Lab:
    reservation = reserve_port()
    port = reservation.base
    log_path = log_dir / f"lab-{port}.log"
    arguments = [sys.executable, str(LAB_SCRIPT), "--dir", str(cluster.dir), "--port", str(port)]
    if allow_actions:
        arguments.append("--allow-actions")
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            arguments, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    lab = Lab(f"http://127.0.0.1:{port}", process, log_path, reservation)
    wait_until(
        lambda: process.poll() is not None or _get(f"{lab.url}/api/state") == 200,
        LAB_START_TIMEOUT_S,
        lambda: f"the lab to serve (log: {log_path.read_text()})",
    )
    if process.poll() is not None:
        pytest.fail(f"the lab exited: {log_path.read_text()}")
    return lab


def _stop_lab(lab: Lab) -> None:
    lab.process.terminate()
    try:
        lab.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        lab.process.kill()
        lab.process.wait(timeout=10)
    lab.port.release()


def _create_topic(cluster: ClusterHandle) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        for index in range(RECORDS):
            producer.send(TOPIC, f"record-{index}".encode())
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)


def _high_watermarks(cluster: ClusterHandle) -> dict[int, int]:
    """What a consumer is told each partition's end is (ListOffsets latest, from the leader)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20_000)
    try:
        ends = consumer.end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    finally:
        consumer.close()
    return {tp.partition: int(offset) for tp, offset in ends.items()}


def _commit_lagging_offsets(cluster: ClusterHandle) -> None:
    """A group that read LAG_COMMITTED_OFFSET records of each partition and left."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, group_id=LAG_GROUP, enable_auto_commit=False
    )
    try:
        partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.commit({tp: OffsetAndMetadata(LAG_COMMITTED_OFFSET, "", -1) for tp in partitions})
    finally:
        consumer.close()


def _controller(zk: KazooClient) -> tuple[int, int]:
    data, _ = zk.get("/controller")
    epoch, _ = zk.get("/controller_epoch")
    return int(json.loads(data)["brokerid"]), int(epoch)


def _states(zk: KazooClient) -> dict[int, dict[str, Any]]:
    found = {}
    for partition in zk.get_children(f"/brokers/topics/{TOPIC}/partitions"):
        data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
        found[int(partition)] = json.loads(data)
    return found


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("LAB_ARTIFACTS")
    directory = Path(configured) if configured else tmp_path_factory.mktemp("lab-artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="module")
def lab_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    cluster = make_cluster_module(overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    _create_topic(cluster)
    return cluster


@pytest.fixture(scope="module")
def lab(lab_cluster: ClusterHandle, artifacts: Path) -> Iterator[Lab]:
    started = _start_lab(lab_cluster, artifacts, allow_actions=True)
    try:
        yield started
    finally:
        _stop_lab(started)


def test_actions_refuse_requests_without_the_csrf_token(
    lab: Lab, lab_cluster: ClusterHandle
) -> None:
    body = {"target": "broker", "id": 1, "action": "kill"}
    assert _post(f"{lab.url}/api/action", body) == 403
    assert _post(f"{lab.url}/api/action", body, {"X-Lab-CSRF-Token": "wrong"}) == 403
    assert _post(f"{lab.url}/api/scenario/kill-the-controller", {}) == 403
    assert all(record.alive for record in lab_cluster.status().brokers.values())


def test_without_allow_actions_there_are_no_action_endpoints(
    lab_cluster: ClusterHandle, artifacts: Path
) -> None:
    viewer = _start_lab(lab_cluster, artifacts, allow_actions=False)
    try:
        body = {"target": "broker", "id": 1, "action": "kill"}
        assert _post(f"{viewer.url}/api/action", body) in (404, 405)
        assert _post(f"{viewer.url}/api/scenario/kill-the-controller", {}) in (404, 405)
    finally:
        _stop_lab(viewer)


PAGE_VIEW_SCRIPT = """() => {
  const text = (selector) => document.querySelector(selector)?.textContent.trim() ?? null;
  const brokers = {};
  for (const row of document.querySelectorAll("#brokers tr[data-broker]")) {
    brokers[row.dataset.broker] = {
      registered: row.querySelector(".registered").textContent,
      epoch: row.querySelector(".epoch").textContent,
      crown: row.querySelector(".crown").textContent.includes("controller"),
    };
  }
  const partitions = {};
  const rows = '#partitions table[data-topic="lab-topic"] tr[data-partition]';
  for (const row of document.querySelectorAll(rows)) {
    partitions[row.dataset.partition] = {
      leader: row.querySelector(".leader-id").textContent,
      isr: row.querySelector(".isr").textContent,
      leader_epoch: row.querySelector(".leader-epoch").textContent,
    };
  }
  const controller = text("#controller-id");
  return {controller, epoch: text("#controller-epoch"), brokers, partitions};
}"""


def _zookeeper_view(zk: KazooClient) -> dict[str, Any]:
    """What the page should show, in the page's own terms (text)."""
    controller, epoch = _controller(zk)
    registered = {int(child) for child in zk.get_children("/brokers/ids")}
    brokers = {}
    for broker_id in (1, 2, 3):
        czxid = ""
        if broker_id in registered:
            _, stat = zk.get(f"/brokers/ids/{broker_id}")
            czxid = str(stat.czxid)
        brokers[str(broker_id)] = {
            "registered": "yes" if broker_id in registered else "no",
            "epoch": czxid,
            "crown": broker_id == controller,
        }
    partitions = {
        f"{TOPIC}-{partition}": {
            "leader": str(state["leader"]),
            "isr": ",".join(str(replica) for replica in state["isr"]),
            "leader_epoch": str(state["leader_epoch"]),
        }
        for partition, state in _states(zk).items()
    }
    return {
        "controller": str(controller),
        "epoch": str(epoch),
        "brokers": brokers,
        "partitions": partitions,
    }


def _wait_until_page_matches_zookeeper(page: Any, zk: KazooClient) -> None:
    """The page shows what ZooKeeper holds: compared afresh each round, since ZooKeeper may
    move on (an ISR expanding) while the page catches up."""
    last: dict[str, Any] = {}

    def matches() -> bool:
        try:
            last["zookeeper"] = _zookeeper_view(zk)
        except NoNodeError:  # between a controller's loss and the next election
            return False
        last["page"] = page.evaluate(PAGE_VIEW_SCRIPT)
        return bool(last["page"] == last["zookeeper"])

    wait_until(
        matches,
        PAGE_TIMEOUT_MS / 1000,
        lambda: f"the page {last.get('page')} to match ZooKeeper {last.get('zookeeper')}",
    )


REPLICAS_SCRIPT = """() => {
  const found = {};
  const rows = '#partitions table[data-topic="lab-topic"] tr[data-partition]';
  for (const row of document.querySelectorAll(rows)) {
    found[row.dataset.partition] = [...row.querySelectorAll(".replica")].map((r) => ({
      replica: Number(r.dataset.replica), log_end: r.dataset.logEnd, hw: r.dataset.hw,
      source: r.dataset.hwSource}));
  }
  return found;
}"""

# The throughput chart: its newest data, and how many of its canvas's pixels are drawn in
# the messages-in series' colour (uPlot draws on a canvas, so the pixels are the drawing).
CHART_SCRIPT = """() => {
  const chart = window.labCharts && window.labCharts.throughput;
  if (!chart) return null;
  const canvas = chart.root.querySelector("canvas");
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let stroked = 0;
  for (let i = 0; i < pixels.length; i += 4) {
    if (pixels[i] === 0x24 && pixels[i + 1] === 0x71 && pixels[i + 2] === 0xa3) stroked++;
  }
  const rates = chart.data[1].filter((v) => v !== null);
  return {points: chart.data[0].length, peak: Math.max(0, ...rates), stroked};
}"""

GROUP_SCRIPT = """(group) => {
  const holder = document.querySelector(`#groups [data-group="${group}"]`);
  if (!holder) return null;
  const rows = {};
  for (const row of holder.querySelectorAll("tr[data-group-partition]")) {
    rows[row.dataset.groupPartition] = {
      committed: row.querySelector(".committed").textContent,
      log_end: row.querySelector(".log-end").textContent,
      lag: row.querySelector(".lag").textContent,
      owner: row.querySelector(".owner").textContent};
  }
  return {members: holder.querySelectorAll(".member").length, rows};
}"""


def _launch(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
    )


@contextmanager
def _page(playwright: Any, url: str, failure_png: Path) -> Iterator[Any]:
    """The lab's page in a browser of its own, closed afterwards. A failure inside leaves a
    screenshot of what the page showed then; a timeout of `wait_until` is a failure too,
    although pytest's Failed is not an Exception."""
    browser = _launch(playwright)
    try:
        page = browser.new_page(viewport=VIEWPORT)
        try:
            page.goto(url)
            yield page
        except (Exception, pytest.fail.Exception):
            page.screenshot(path=str(failure_png), full_page=True)
            raise
    finally:
        browser.close()


def _wait_for_page(page: Any, description: str, condition: Any) -> None:
    last: dict[str, Any] = {}

    def check() -> bool:
        last["seen"] = condition()
        return bool(last["seen"] is True)

    wait_until(check, PAGE_TIMEOUT_MS / 1000, lambda: f"{description} (saw {last.get('seen')})")


def test_the_grid_charts_and_groups_show_offsets_rates_and_lag(
    lab: Lab, lab_cluster: ClusterHandle, artifacts: Path
) -> None:
    expect = sync_api.expect
    with (
        sync_api.sync_playwright() as playwright,
        _page(playwright, lab.url, artifacts / "failure-offsets.png") as page,
    ):
        expect(page.locator("#connection")).to_have_text("live", timeout=PAGE_TIMEOUT_MS)
        expect(page.locator("#produce-topic")).to_have_value(TOPIC, timeout=PAGE_TIMEOUT_MS)

        # A burst from the page's button: the chart draws its rate from the brokers'
        # messages-in counters.
        page.locator("#produce-count").fill(str(BURST_RECORDS))
        page.locator("#produce-go").click()
        expect(page.locator("#action-result")).to_have_text(
            f"{BURST_RECORDS} of {BURST_RECORDS} records acknowledged", timeout=PAGE_TIMEOUT_MS
        )

        def drawn() -> Any:
            chart = page.evaluate(CHART_SCRIPT)
            return (chart is not None and chart["peak"] > 0 and chart["stroked"] > 0) or chart

        _wait_for_page(page, "the throughput chart to draw the burst", drawn)

        # Every replica: its log end (the broker's /metrics) and its high watermark (the
        # leader's live, the followers' from their checkpoints) reach what consumers see.
        def replicas_match() -> Any:
            ends = _high_watermarks(lab_cluster)
            shown = page.evaluate(REPLICAS_SCRIPT)
            expected = {f"{TOPIC}-{p}": {str(ends[p])} for p in range(PARTITIONS)}
            for name, replicas in shown.items():
                values = {r["log_end"] for r in replicas} | {r["hw"] for r in replicas}
                if len(replicas) != 3 or values != expected[name]:
                    return {"page": shown, "consumers": ends}
            sources = sorted(r["source"] for rs in shown.values() for r in rs)
            live = sources.count("live") == PARTITIONS
            return (len(shown) == PARTITIONS and live) or {"page": shown, "sources": sources}

        wait_until(
            lambda: replicas_match() is True,
            SCENARIO_TIMEOUT_MS / 1000,
            lambda: f"every replica's log end and high watermark {replicas_match()}",
        )

        # A group that committed offset 10 everywhere: its lag is the rest.
        _commit_lagging_offsets(lab_cluster)
        ends = _high_watermarks(lab_cluster)
        expected_rows = {
            f"{TOPIC}-{p}": {
                "committed": str(LAG_COMMITTED_OFFSET),
                "log_end": str(ends[p]),
                "lag": str(ends[p] - LAG_COMMITTED_OFFSET),
                "owner": "-",
            }
            for p in range(PARTITIONS)
        }
        wait_until(
            lambda: page.evaluate(GROUP_SCRIPT, LAG_GROUP) == {"members": 0, "rows": expected_rows},
            GROUP_TIMEOUT_MS / 1000,
            lambda: (
                f"group {LAG_GROUP} {page.evaluate(GROUP_SCRIPT, LAG_GROUP)} to show "
                f"{expected_rows}"
            ),
        )

        # A member started from the page joins, is assigned every partition, reads to the
        # end and commits (lag 0); stopped, it leaves the group.
        page.locator("#member-group").fill(MEMBER_GROUP)
        page.locator("#member-start").click()

        def caught_up() -> Any:
            seen = page.evaluate(GROUP_SCRIPT, MEMBER_GROUP)
            if seen is None or seen["members"] != 1 or len(seen["rows"]) != PARTITIONS:
                return seen
            done = all(
                r["lag"] == "0" and r["owner"] == "kafka-lab-member-1"
                for r in seen["rows"].values()
            )
            return done or seen

        wait_until(
            lambda: caught_up() is True,
            GROUP_TIMEOUT_MS / 1000,
            lambda: f"the lab's member to consume everything: {caught_up()}",
        )
        page.screenshot(path=str(artifacts / "0-offsets-charts-groups.png"), full_page=True)
        page.locator("#lab-members button.member-stop").click()
        expect(page.locator(f'#groups [data-group="{MEMBER_GROUP}"] .member')).to_have_count(
            0, timeout=GROUP_TIMEOUT_MS
        )
        expect(page.locator("#timeline")).to_contain_text(
            f"consumer kafka-lab-member-1 leaves group {MEMBER_GROUP}"
        )


def test_the_page_follows_the_cluster_through_a_controller_kill_and_the_scenario(
    lab: Lab, lab_cluster: ClusterHandle, artifacts: Path
) -> None:
    expect = sync_api.expect
    started = time.monotonic()
    with (
        sync_api.sync_playwright() as playwright,
        zk_session(lab_cluster) as zk,
        _page(playwright, lab.url, artifacts / "failure.png") as page,
    ):
        expect(page.locator("#connection")).to_have_text("live", timeout=PAGE_TIMEOUT_MS)
        expect(page.locator("#brokers tbody tr")).to_have_count(3, timeout=PAGE_TIMEOUT_MS)
        expect(page.locator(f'#partitions table[data-topic="{TOPIC}"] tr')).to_have_count(
            PARTITIONS + 1, timeout=PAGE_TIMEOUT_MS
        )
        _wait_until_page_matches_zookeeper(page, zk)
        page.locator("#znode-path").fill("/controller")
        page.locator("#znode-go").click()
        controller, epoch = _controller(zk)
        expect(page.locator("#znode-data")).to_contain_text(
            f'"brokerid":{controller}', timeout=PAGE_TIMEOUT_MS
        )
        expect(page.locator('#znode-stat [data-stat="ephemeral_owner"]')).not_to_have_text(
            re.compile(r"^0 "), timeout=PAGE_TIMEOUT_MS
        )
        page.screenshot(path=str(artifacts / "1-healthy.png"), full_page=True)
        # Marks the page: a reload would lose it, so seeing it later proves there was none.
        page.evaluate("window.__labNotReloaded = true")

        page.locator(f'#brokers tr[data-broker="{controller}"] button[data-action="kill"]').click()
        expect(page.locator("#controller-id")).not_to_have_text(
            re.compile(rf"^({controller}|none|\?)$"), timeout=FAILOVER_TIMEOUT_MS
        )
        new_controller = page.locator("#controller-id").inner_text()
        # One entry if the lab saw /controller move in one read, two (newest first) if it
        # also saw it absent.
        moved = rf"controller changed: broker {controller} -> broker {new_controller} "
        elected = (
            rf"controller elected: broker {new_controller} [\s\S]*"
            rf"/controller deleted \(was broker {controller}\)"
        )
        expect(page.locator("#timeline")).to_contain_text(
            re.compile(f"{moved}|{elected}"), timeout=PAGE_TIMEOUT_MS
        )
        expect(page.locator(f'#brokers tr[data-broker="{controller}"] .process')).to_have_text(
            "dead", timeout=PAGE_TIMEOUT_MS
        )
        wait_until(
            lambda: _controller(zk)[1] > epoch and _controller(zk)[0] != controller,
            FAILOVER_TIMEOUT_MS / 1000,
            "ZooKeeper to name the new controller",
        )
        _wait_until_page_matches_zookeeper(page, zk)
        assert page.evaluate("window.__labNotReloaded === true")
        page.screenshot(path=str(artifacts / "2-controller-killed.png"), full_page=True)

        # Bring the killed broker back with its start button, then run the scenario.
        page.locator(f'#brokers tr[data-broker="{controller}"] button[data-action="start"]').click()
        expect(page.locator(f'#brokers tr[data-broker="{controller}"] .registered')).to_have_text(
            "yes", timeout=START_BROKER_TIMEOUT_MS
        )
        expect(page.locator("#timeline")).to_contain_text(
            f"broker {controller} registered", timeout=PAGE_TIMEOUT_MS
        )

        page.locator("#scenario-start").click()
        expect(page.locator("#scenario-status")).to_have_text(
            re.compile(r"^(done|failed.*)$"), timeout=SCENARIO_TIMEOUT_MS
        )
        expect(page.locator("#scenario-status")).to_have_text("done")
        expect(page.locator("#scenario-steps li.done")).to_have_count(7)
        expect(page.locator("#timeline")).to_contain_text("scenario kill the controller: done")
        _wait_until_page_matches_zookeeper(page, zk)
        assert page.evaluate("window.__labNotReloaded === true")
        page.screenshot(path=str(artifacts / "3-scenario-done.png"), full_page=True)

        # ZooKeeper dies and comes back: the page says so and carries on.
        page.locator('#zookeeper tr[data-zookeeper="1"] button[data-action="kill"]').click()
        expect(page.locator("#zookeeper-state")).to_have_text(
            "ZooKeeper unreachable", timeout=PAGE_TIMEOUT_MS
        )
        page.locator('#zookeeper tr[data-zookeeper="1"] button[data-action="start"]').click()
        expect(page.locator("#zookeeper-state")).to_have_text(
            "ZooKeeper connected", timeout=START_BROKER_TIMEOUT_MS
        )
        expect(page.locator("#timeline")).to_contain_text("ZooKeeper is reachable again")
        assert page.evaluate("window.__labNotReloaded === true")
        readme_shot = os.environ.get("LAB_README_SCREENSHOT")
        if readme_shot:
            page.screenshot(path=str(artifacts / "readme.png"))
            shutil.copyfile(artifacts / "readme.png", readme_shot)
    print(f"browser flow took {time.monotonic() - started:.1f} s; screenshots in {artifacts}")


def test_the_expire_session_scenario_runs_to_its_end(
    lab: Lab, lab_cluster: ClusterHandle, artifacts: Path
) -> None:
    expect = sync_api.expect
    with (
        sync_api.sync_playwright() as playwright,
        zk_session(lab_cluster) as zk,
        _page(playwright, lab.url, artifacts / "failure-expire.png") as page,
    ):
        expect(page.locator("#connection")).to_have_text("live", timeout=PAGE_TIMEOUT_MS)
        # The previous test's scenario left its victim dead: start it from the page, and
        # wait for every broker to be back in every ISR before the fault.
        for broker_id, record in lab_cluster.status().brokers.items():
            if not record.alive:
                page.locator(
                    f'#brokers tr[data-broker="{broker_id}"] button[data-action="start"]'
                ).click()
                expect(
                    page.locator(f'#brokers tr[data-broker="{broker_id}"] .registered')
                ).to_have_text("yes", timeout=START_BROKER_TIMEOUT_MS)
        wait_until(
            lambda: all(len(s["isr"]) == 3 for s in _states(zk).values()),
            SCENARIO_TIMEOUT_MS / 1000,
            "every ISR to be whole again",
        )
        page.locator("#scenario-select").select_option("expire-session")
        page.locator("#scenario-start").click()
        expect(page.locator("#scenario-name")).to_have_text(
            "expire a broker's ZooKeeper session", timeout=PAGE_TIMEOUT_MS
        )
        expect(page.locator("#scenario-status")).to_have_text(
            re.compile(r"^(done|failed.*)$"), timeout=SCENARIO_TIMEOUT_MS
        )
        expect(page.locator("#scenario-status")).to_have_text("done")
        expect(page.locator("#scenario-steps li.done")).to_have_count(6)
        # The observations name what ZooKeeper did: the registration went, came back with a
        # new broker epoch, and the broker counted the expiry.
        steps = page.locator("#scenario-steps li")
        expect(steps.nth(1)).to_contain_text(re.compile(r"/brokers/ids/\d+ no longer exists"))
        expect(steps.nth(4)).to_contain_text(
            re.compile(r"broker epoch \d+ -> \d+; its zookeeperexpires counter reads [1-9]")
        )
        expect(page.locator("#timeline")).to_contain_text(
            "scenario expire a broker's ZooKeeper session: done"
        )
        page.screenshot(path=str(artifacts / "4-session-expired.png"), full_page=True)
