"""The Starlette app: the page, the server-sent event stream, the znode browser and, with
--allow-actions only, the action and scenario endpoints (each requiring the CSRF token)."""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from _cluster.layout import load_state
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from . import scenario, snapshot
from .collector import Collector, read_znode
from .members import MemberPool
from .operator import PARTITION_VERBS, SIGNALS, Operator, Outcome
from .scenarios import SCENARIOS
from .security import CSRF_HEADER, CsrfGuard, allowed_hosts

STATIC_DIR = Path(__file__).resolve().parent / "static"
KEEPALIVE_S = 15.0
MAX_BURST_RECORDS = 100_000
TARGETS = ("broker", "zookeeper")
MAX_ZNODE_PATH = 1024


class Lab:
    def __init__(self, directory: Path, allow_actions: bool, csrf: CsrfGuard) -> None:
        self.directory = directory
        self.allow_actions = allow_actions
        self.csrf = csrf
        self.spec = load_state(directory).spec
        self.members = MemberPool(directory, self.spec)
        self.collector = Collector(directory, self.members)
        self.operator = Operator(directory, self.spec, self._note)
        self._bursts = 0
        self.scenario: scenario.ScenarioRun | None = None
        self._scenario_task: asyncio.Task[None] | None = None

    async def page(self, request: Request) -> Response:
        template = (STATIC_DIR / "index.html").read_text()
        page = (
            template.replace("{{CSRF_TOKEN}}", self.csrf.token if self.allow_actions else "")
            .replace("{{ACTIONS}}", "on" if self.allow_actions else "off")
            .replace("{{DIR}}", html.escape(str(self.directory)))
            .replace("{{SCENARIOS}}", _scenario_options())
        )
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def events(self, request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            async with self.collector.hub.subscribe() as queue:
                if self.collector.latest is not None:
                    yield _sse("snapshot", self.collector.latest)
                yield _sse("timeline", self.collector.timeline)
                if self.scenario is not None:
                    yield _sse("scenario", self.scenario.as_json())
                while True:
                    try:
                        item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    if item is None:
                        return  # too slow: the page's EventSource reconnects
                    yield _sse(*item)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def state(self, request: Request) -> Response:
        return JSONResponse(self.collector.latest)

    async def current_scenario(self, request: Request) -> Response:
        return JSONResponse(self.scenario.as_json() if self.scenario is not None else None)

    async def znode(self, request: Request) -> Response:
        path = request.query_params.get("path", "/")
        if not path.startswith("/") or len(path) > MAX_ZNODE_PATH or "//" in path:
            return JSONResponse({"path": path, "error": "not a znode path"}, status_code=400)
        if len(path) > 1:
            path = path.rstrip("/")
        try:
            found = await asyncio.to_thread(read_znode, self.collector.session, path)
        except Exception as error:
            found = {"path": path, "error": f"ZooKeeper read failed: {error}"}
        return JSONResponse(found)

    def _refused(self, request: Request) -> Response | None:
        if not self.csrf.accepts(request.headers.get(CSRF_HEADER)):
            return JSONResponse({"error": "missing or wrong CSRF token"}, status_code=403)
        return None

    async def _guarded_body(self, request: Request) -> dict[str, Any] | Response:
        """The JSON body of an action request, or the answer refusing it."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return JSONResponse({"error": "expected a JSON object"}, status_code=400)
        return body

    async def action(self, request: Request) -> Response:
        body = await self._guarded_body(request)
        if isinstance(body, Response):
            return body
        try:
            target = str(body["target"])
            target_id = int(body["id"])
            verb = str(body["action"])
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "expected {target, id, action}"}, status_code=400)
        if target not in TARGETS or (
            verb not in SIGNALS and verb != "start" and verb not in PARTITION_VERBS
        ):
            return JSONResponse({"error": "unknown target or action"}, status_code=400)
        if verb in PARTITION_VERBS:
            return _outcome(await self.operator.partition(target, target_id, verb))
        return _outcome(await self.operator.signal(target, target_id, verb))

    async def elect(self, request: Request) -> Response:
        body = await self._guarded_body(request)
        if isinstance(body, Response):
            return body
        topic = body.get("topic")
        partition = body.get("partition")
        if (topic is None) != (partition is None) or (
            topic is not None and (not isinstance(topic, str) or not isinstance(partition, int))
        ):
            return JSONResponse({"error": "expected {topic, partition} or {}"}, status_code=400)
        return _outcome(await self.operator.elect("preferred", topic, partition))

    async def reassign(self, request: Request) -> Response:
        body = await self._guarded_body(request)
        if isinstance(body, Response):
            return body
        topic, partition, replicas = body.get("topic"), body.get("partition"), body.get("replicas")
        if (
            not isinstance(topic, str)
            or not isinstance(partition, int)
            or not isinstance(replicas, list)
            or not replicas
            or not all(isinstance(r, int) for r in replicas)
        ):
            return JSONResponse({"error": "expected {topic, partition, replicas}"}, status_code=400)
        return _outcome(await self.operator.reassign(topic, partition, replicas))

    async def produce(self, request: Request) -> Response:
        body = await self._guarded_body(request)
        if isinstance(body, Response):
            return body
        topic, count = body.get("topic"), body.get("count")
        if not isinstance(topic, str) or not isinstance(count, int):
            return JSONResponse({"error": "expected {topic, count}"}, status_code=400)
        if not 0 < count <= MAX_BURST_RECORDS:
            return JSONResponse({"error": f"count must be 1..{MAX_BURST_RECORDS}"}, status_code=400)
        self._bursts += 1
        values = [f"lab-burst-{self._bursts}-{i}" for i in range(count)]
        delivered = await self.operator.produce(topic, values)
        output = f"{len(delivered.records)} of {count} records acknowledged"
        if delivered.errors:
            output += f"; {len(delivered.errors)} failed: {delivered.errors[0]}"
        return _outcome(Outcome(not delivered.errors, output))

    async def start_member(self, request: Request) -> Response:
        body = await self._guarded_body(request)
        if isinstance(body, Response):
            return body
        group, topic = body.get("group"), body.get("topic")
        if not isinstance(group, str) or not group or not isinstance(topic, str) or not topic:
            return JSONResponse({"error": "expected {group, topic}"}, status_code=400)
        started = self.members.start(group, topic)
        if isinstance(started, str):
            return JSONResponse({"error": started}, status_code=409)
        self._note(f"action: consumer {started.client_id} joins group {group} on {topic}")
        return JSONResponse({"ok": True, "output": f"started {started.client_id}"})

    async def stop_member(self, request: Request) -> Response:
        body = await self._guarded_body(request)
        if isinstance(body, Response):
            return body
        number = body.get("id")
        stopped = self.members.stop(number) if isinstance(number, int) else None
        if stopped is None:
            return JSONResponse({"error": "no such running member"}, status_code=404)
        self._note(f"action: consumer {stopped.client_id} leaves group {stopped.group}")
        return JSONResponse({"ok": True, "output": f"stopping {stopped.client_id}"})

    def _note(self, message: str) -> None:
        self.collector.add_timeline(
            [snapshot.entry(snapshot.format_time(time.time()), "lab", message, kind="action")]
        )

    async def start_scenario(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        chosen = SCENARIOS.get(request.path_params["name"])
        if chosen is None:
            return JSONResponse({"error": "unknown scenario"}, status_code=404)
        if self.scenario is not None and self.scenario.status == "running":
            return JSONResponse({"error": "a scenario is already running"}, status_code=409)
        view = self.collector.latest
        if view is None:
            return JSONResponse({"error": "no view of the cluster yet"}, status_code=409)
        context = chosen.prepare(view, dict(self.spec.overrides))
        if isinstance(context, str):
            return JSONResponse({"error": context}, status_code=409)
        run = scenario.ScenarioRun(chosen.name, chosen.steps, context, slug=chosen.slug)
        self.scenario = run
        self._note(f"scenario {run.name}: started")
        self._scenario_task = asyncio.create_task(self._drive(run))
        return JSONResponse(run.as_json())

    async def _drive(self, run: scenario.ScenarioRun) -> None:
        def publish() -> None:
            self.collector.hub.publish("scenario", run.as_json())

        await scenario.drive(run, self.operator, self.collector, publish)
        self._note(
            f"scenario {run.name}: {run.status}" + (f" ({run.reason})" if run.reason else "")
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        poller = asyncio.create_task(self.collector.run())
        try:
            yield
        finally:
            for task in (poller, self._scenario_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            await asyncio.to_thread(self.members.stop_all)
            await asyncio.to_thread(self.collector.session.close)


def _outcome(outcome: Outcome) -> Response:
    return JSONResponse(
        {"ok": outcome.ok, "output": outcome.output}, status_code=200 if outcome.ok else 409
    )


def _scenario_options() -> str:
    return "".join(
        f'<option value="{html.escape(s.slug)}" title="{html.escape(s.summary)}">'
        f"{html.escape(s.name)}</option>"
        for s in SCENARIOS.values()
    )


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def build_app(directory: Path, allow_actions: bool, host: str, csrf: CsrfGuard) -> Starlette:
    lab = Lab(directory, allow_actions, csrf)
    routes: list[BaseRoute] = [
        Route("/", lab.page),
        Route("/events", lab.events),
        Route("/api/state", lab.state),
        Route("/api/znode", lab.znode),
        Route("/api/scenario", lab.current_scenario),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    if allow_actions:
        routes += [
            Route("/api/action", lab.action, methods=["POST"]),
            Route("/api/elect", lab.elect, methods=["POST"]),
            Route("/api/reassign", lab.reassign, methods=["POST"]),
            Route("/api/produce", lab.produce, methods=["POST"]),
            Route("/api/members/start", lab.start_member, methods=["POST"]),
            Route("/api/members/stop", lab.stop_member, methods=["POST"]),
            Route("/api/scenario/{name}", lab.start_scenario, methods=["POST"]),
        ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lab.lifespan)
    app.state.lab = lab
    return app
