"""Guided scenarios advance only on what the lab observes, their acts run in order, and the
action routes exist only with --allow-actions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _cluster.layout import ClusterSpec, ClusterState, ProcessRecord, save_state
from _lab import scenario, scenario_unclean, scenarios
from _lab.app import build_app
from _lab.operator import Delivered, Outcome
from _lab.security import CsrfGuard
from starlette.routing import Route


def _view(
    alive: tuple[int, ...],
    registered: tuple[int, ...],
    controller: int | None,
    epoch: int,
    leaders: tuple[int, int],
) -> dict[str, Any]:
    return {
        "time": "2026-11-23 10:00:00,000",
        "zookeeper": {"reachable": True, "servers": []},
        "controller": {"id": controller, "epoch": epoch},
        "brokers": [
            {
                "id": i,
                "alive": i in alive,
                "paused": False,
                "registered": i in registered,
                "epoch": 100 + i,
            }
            for i in (1, 2, 3)
        ],
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition": p,
                        "replicas": [1, 2, 3],
                        "leader": leader,
                        "isr": [1, 2, 3],
                        "leader_epoch": 3,
                        "log_end": {},
                        "offline": leader not in alive or leader not in registered,
                    }
                    for p, leader in enumerate(leaders)
                ],
            }
        ],
    }


def _run(before: dict[str, Any]) -> scenario.ScenarioRun:
    chosen = scenarios.KILL_THE_CONTROLLER
    context = chosen.prepare(before, {})
    assert isinstance(context, scenario.Context)
    run = scenario.ScenarioRun(chosen.name, chosen.steps, context)
    assert run.pending_act() is not None  # the kill comes first
    run.acted[0] = True
    return run


def test_steps_advance_as_the_session_expires_and_a_new_controller_moves_the_leaders() -> None:
    healthy = _view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2))
    run = _run(healthy)
    assert run.context is not None and run.context.led == {"t-0": 3}
    killed = _view((2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2))
    assert run.observe(killed, now_s=0.0)
    assert run.current == 1  # the registration is still there: the session lives on
    assert not run.observe(killed, now_s=1.0)
    expired = _view((2, 3), (2, 3), controller=None, epoch=4, leaders=(1, 2))
    run.observe(expired, now_s=2.0)
    assert run.current == 3  # registration and /controller gone; nobody elected yet
    elected = _view((2, 3), (2, 3), controller=3, epoch=5, leaders=(1, 2))
    run.observe(elected, now_s=3.0)
    assert run.current == 5  # elected, epoch bumped; broker 1 still leads t-0
    moved = _view((2, 3), (2, 3), controller=3, epoch=5, leaders=(2, 2))
    run.observe(moved, now_s=4.0)
    assert run.status == "done"
    steps = run.as_json()["steps"]
    assert [s["state"] for s in steps] == ["done"] * 7
    assert steps[4]["observed"] == "/controller_epoch 4 -> 5"
    assert steps[5]["observed"] == "t-0: leader 1 -> 2 (leader epoch 3 -> 3)"


def test_a_step_not_observed_in_time_fails_the_run() -> None:
    run = _run(_view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2)))
    still_there = _view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2))
    run.observe(still_there, now_s=run.step_started_s + 1)
    assert run.status == "running"
    run.observe(still_there, now_s=run.step_started_s + scenario.STEP_TIMEOUT_S + 1)
    assert run.status == "failed"
    assert "step 1" in (run.reason or "")


def test_no_controller_no_run() -> None:
    view = _view((1,), (1,), controller=None, epoch=4, leaders=(1, 1))
    assert scenarios.KILL_THE_CONTROLLER.prepare(view, {}) == "there is no controller right now"


def test_a_step_with_an_act_waits_for_it_before_checking() -> None:
    chosen = scenarios.KILL_THE_CONTROLLER
    before = _view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2))
    context = chosen.prepare(before, {})
    assert isinstance(context, scenario.Context)
    run = scenario.ScenarioRun(chosen.name, chosen.steps, context)
    killed = _view((2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2))
    assert not run.observe(killed, now_s=run.step_started_s + scenario.STEP_TIMEOUT_S + 1)
    assert (run.current, run.status) == (0, "running")  # neither advanced nor timed out
    assert run.as_json()["steps"][0]["state"] == "acting"


class FakeOperator:
    """Records what a scenario asks for; produces and reads from a dict log."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.log: dict[int, str] = {}

    async def signal(self, target: str, target_id: int, verb: str) -> Outcome:
        self.calls.append(("signal", target, target_id, verb))
        return Outcome(True, "")

    async def produce(
        self, topic: str, values: list[str], partition: int | None = None, acks: str = "all"
    ) -> Delivered:
        self.calls.append(("produce", topic, partition, acks, len(values)))
        delivered = Delivered()
        for value in values:
            offset = len(self.log)
            self.log[offset] = value
            delivered.records.append((partition or 0, offset, value))
        return delivered

    async def read_partition(self, topic: str, partition: int) -> list[tuple[int, str]]:
        return sorted(self.log.items())


class FakeSnapshots:
    """Hands out the given views one per poll, then keeps the last."""

    def __init__(self, views: list[dict[str, Any]]) -> None:
        self._views = views
        self.latest: dict[str, Any] | None = views[0]

    async def wait_for_poll(self) -> None:
        if len(self._views) > 1:
            self._views.pop(0)
        self.latest = self._views[0]


def test_drive_runs_the_kill_then_follows_the_snapshots_to_the_end() -> None:
    import asyncio

    before = _view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2))
    chosen = scenarios.KILL_THE_CONTROLLER
    context = chosen.prepare(before, {})
    assert isinstance(context, scenario.Context)
    run = scenario.ScenarioRun(chosen.name, chosen.steps, context)
    operator = FakeOperator()
    views = [
        _view((2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(1, 2)),
        _view((2, 3), (2, 3), controller=2, epoch=5, leaders=(2, 2)),
    ]
    published: list[str] = []
    asyncio.run(
        scenario.drive(
            run,
            operator,  # type: ignore[arg-type]
            FakeSnapshots(views),
            lambda: published.append(run.status),
        )
    )
    assert run.status == "done"
    assert operator.calls == [("signal", "broker", 1, "kill")]
    assert published[-1] == "done"


def test_the_unclean_scenario_shows_the_acknowledged_records_that_were_lost() -> None:
    import asyncio

    operator = FakeOperator()
    context = scenario.Context(victim=1, partner=2, topic="lab-unclean-x")

    async def play() -> None:
        act = scenario_unclean.UNCLEAN.steps[1].act
        assert act is not None
        await act(operator, context, {})  # offsets 0-9, replicated
        exposed = scenario_unclean.UNCLEAN.steps[3].act
        assert exposed is not None
        await exposed(operator, context, {})  # offsets 10-29, only on the old leader
        # The unclean election: the new leader's log ends at 10.
        for offset in range(10, 30):
            del operator.log[offset]
        show = scenario_unclean.UNCLEAN.steps[-1].act
        assert show is not None
        assert await show(operator, context, {}) is None

    asyncio.run(play())
    observed = scenario_unclean.UNCLEAN.steps[-1].check({}, context)
    assert observed is not None and observed.startswith("20 acknowledged records are gone")
    assert context.detail[0] == "offset 10: acknowledged 'only-on-leader-10', now 'after-unclean-0'"
    assert context.detail[-1] == "offset 29: acknowledged 'only-on-leader-29', now nothing"


def test_a_paused_follower_dropped_by_its_leaders_or_by_its_expired_session() -> None:
    before = _view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(2, 2))
    context = scenarios.PAUSE_A_FOLLOWER.prepare(before, {"replica.lag.time.max.ms": "4000"})
    assert isinstance(context, scenario.Context)
    assert context.victim == 3  # not the controller, and it follows both partitions
    shrunk = _view((1, 2, 3), (1, 2, 3), controller=1, epoch=4, leaders=(2, 2))
    for partition in shrunk["topics"][0]["partitions"]:
        partition["isr"] = [1, 2]
    by_leader = scenarios.PAUSE_A_FOLLOWER.steps[2].check(shrunk, context)
    assert by_leader is not None and "the leaders shrank the ISR" in by_leader
    shrunk["brokers"][2]["registered"] = False
    by_session = scenarios.PAUSE_A_FOLLOWER.steps[2].check(shrunk, context)
    assert by_session is not None and "its ZooKeeper session expired first" in by_session


def _cluster_dir(tmp_path: Path) -> Path:
    spec = ClusterSpec(str(tmp_path), 1, 1, 30092, 30181)
    processes = {
        key: ProcessRecord(command=["true"], log_path=str(tmp_path / f"{key}.log"), cwd="/")
        for key in ("broker-1", "zookeeper-1")
    }
    save_state(tmp_path, ClusterState(spec, processes))
    return tmp_path


def _posts(allow_actions: bool, tmp_path: Path) -> set[str]:
    app = build_app(_cluster_dir(tmp_path), allow_actions, "127.0.0.1", CsrfGuard())
    return {
        route.path
        for route in app.routes
        if isinstance(route, Route) and route.methods and "POST" in route.methods
    }


def test_action_routes_exist_only_with_allow_actions(tmp_path: Path) -> None:
    assert _posts(False, tmp_path) == set()
    assert _posts(True, tmp_path) == {
        "/api/action",
        "/api/elect",
        "/api/reassign",
        "/api/produce",
        "/api/members/start",
        "/api/members/stop",
        "/api/scenario/{name}",
    }
