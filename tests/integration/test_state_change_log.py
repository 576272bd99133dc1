"""The state-change log files and `scripts/cluster events`: after the controller is killed, the
merged timeline shows the old election, the new one with a higher epoch, and the partition
leader change for the broker failure, in that order."""

from __future__ import annotations

import json
import re
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.integration.conftest import ClusterFactory, wait_until, zk_session

TOPIC = "timeline"
PARTITIONS = 3
SESSION_TIMEOUT_MS = "4000"  # how long the killed controller's ephemeral znodes linger
TIMEOUT_S = 60.0
_EVENT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (broker-\d+) (.*)$")


def _json(zk: KazooClient, path: str) -> Any:
    return json.loads(zk.get(path)[0])


def _controller_id(zk: KazooClient) -> int | None:
    try:
        return int(_json(zk, "/controller")["brokerid"])
    except NoNodeError:
        return None


def _index(lines: list[str], pattern: str) -> int:
    matches = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert matches, f"no timeline line matches {pattern!r}:\n" + "\n".join(lines)
    return matches[0]


def test_timeline_orders_elections_and_the_broker_failure(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=TIMEOUT_S)
    with zk_session(cluster) as zk:
        last_state = f"/brokers/topics/{TOPIC}/partitions/{PARTITIONS - 1}/state"
        wait_until(lambda: zk.exists(last_state) is not None, TIMEOUT_S, "partition states")
        old_controller = _controller_id(zk)
        assert old_controller is not None
        old_epoch = int(zk.get("/controller_epoch")[0])
        states = {
            p: _json(zk, f"/brokers/topics/{TOPIC}/partitions/{p}/state") for p in range(PARTITIONS)
        }
        led = [p for p, s in states.items() if s["leader"] == old_controller]
        assert led, f"broker {old_controller} leads none of {states}"
        cluster.kill(old_controller, "KILL")

        def new_leaders() -> bool:
            controller = _controller_id(zk)
            if controller in (None, old_controller):
                return False
            path = f"/brokers/topics/{TOPIC}/partitions/{led[0]}/state"
            return bool(_json(zk, path)["leader"] != old_controller)

        wait_until(new_leaders, TIMEOUT_S, "a new controller and new leaders")
        new_controller = _controller_id(zk)
        new_epoch = int(zk.get("/controller_epoch")[0])
    assert (cluster.dir / f"broker-{old_controller}" / "state-change.log").is_file()

    result = cluster.run("events")
    lines = result.stdout.splitlines()
    parsed = [_EVENT.match(line) for line in lines]
    assert all(match is not None for match in parsed), result.stdout
    stamps = [match[1] for match in parsed if match is not None]
    assert stamps == sorted(stamps)
    old_election = _index(
        lines,
        rf"broker-{old_controller} \[Controller id={old_controller} epoch={old_epoch}\] "
        rf"Broker {old_controller} elected controller with epoch {old_epoch}$",
    )
    new_election = _index(
        lines,
        rf"broker-{new_controller} \[Controller id={new_controller} epoch={new_epoch}\] "
        rf"Broker {new_controller} elected controller with epoch {new_epoch}$",
    )
    leader_change = _index(
        lines,
        rf"broker-{new_controller} \[Controller id={new_controller} epoch={new_epoch}\] "
        rf"Changed partition {TOPIC}-{led[0]} to LeaderAndIsr\(leader=(?!{old_controller}\b)\d+"
        rf".* reason: broker failure$",
    )
    assert new_epoch > old_epoch
    assert old_election < new_election < leader_change
    # --since keeps only what happened after the given moment.
    later = cluster.run("events", "--since", stamps[new_election]).stdout.splitlines()
    assert later[0] == lines[new_election] or stamps[new_election] == later[0][:23]
    assert lines[old_election] not in later
