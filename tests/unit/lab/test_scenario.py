"""The "kill the controller" scenario advances only on what the lab observes, and its routes
exist only with --allow-actions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _cluster.layout import ClusterSpec, ClusterState, ProcessRecord, save_state
from _lab import scenario
from _lab.app import build_app
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
            {"id": i, "alive": i in alive, "registered": i in registered} for i in (1, 2, 3)
        ],
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition": p,
                        "leader": leader,
                        "leader_epoch": 3,
                        "offline": leader not in alive or leader not in registered,
                    }
                    for p, leader in enumerate(leaders)
                ],
            }
        ],
    }


def _run(before: dict[str, Any]) -> scenario.ScenarioRun:
    context = scenario.prepare(before)
    assert isinstance(context, scenario.Context)
    return scenario.ScenarioRun("kill the controller", scenario.KILL_THE_CONTROLLER, context)


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
    assert scenario.prepare(_view((1,), (1,), controller=None, epoch=4, leaders=(1, 1))) == (
        "there is no controller right now"
    )


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
    assert _posts(True, tmp_path) == {"/api/action", "/api/scenario/{name}"}
