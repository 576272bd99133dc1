"""The Starlette app: the page, the server-sent event stream, the znode browser and, with
--allow-actions only, the action and scenario endpoints (each requiring the CSRF token)."""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from . import scenario, snapshot
from .collector import Collector, read_znode
from .security import CSRF_HEADER, CsrfGuard, allowed_hosts

STATIC_DIR = Path(__file__).resolve().parent / "static"
CLUSTER_SCRIPT = Path(__file__).resolve().parents[1] / "cluster"
KEEPALIVE_S = 15.0
SIGNAL_TIMEOUT_S = 15.0
START_TIMEOUT_S = 150.0
ACTION_SIGNALS = {"kill": "KILL", "term": "TERM", "stop": "STOP", "cont": "CONT"}
TARGETS = ("broker", "zookeeper")
MAX_ZNODE_PATH = 1024


class Lab:
    def __init__(self, directory: Path, allow_actions: bool, csrf: CsrfGuard) -> None:
        self.directory = directory
        self.allow_actions = allow_actions
        self.csrf = csrf
        self.collector = Collector(directory)
        self.scenario: scenario.ScenarioRun | None = None
        self._scenario_task: asyncio.Task[None] | None = None

    async def page(self, request: Request) -> Response:
        template = (STATIC_DIR / "index.html").read_text()
        page = (
            template.replace("{{CSRF_TOKEN}}", self.csrf.token if self.allow_actions else "")
            .replace("{{ACTIONS}}", "on" if self.allow_actions else "off")
            .replace("{{DIR}}", html.escape(str(self.directory)))
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

    async def action(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
            target = str(body["target"])
            target_id = int(body["id"])
            verb = str(body["action"])
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "expected {target, id, action}"}, status_code=400)
        if target not in TARGETS or (verb not in ACTION_SIGNALS and verb != "start"):
            return JSONResponse({"error": "unknown target or action"}, status_code=400)
        ok, output = await self.run_cluster_command(target, target_id, verb)
        return JSONResponse({"ok": ok, "output": output}, status_code=200 if ok else 409)

    async def run_cluster_command(self, target: str, target_id: int, verb: str) -> tuple[bool, str]:
        arguments = ["start"] if verb == "start" else ["kill", "--signal", ACTION_SIGNALS[verb]]
        arguments += [f"--{target}", str(target_id), "--dir", str(self.directory)]
        what = f"{target} {target_id}"
        label = "start" if verb == "start" else f"SIG{ACTION_SIGNALS[verb]}"
        self._note(f"action: {label} {what}")
        timeout_s = START_TIMEOUT_S if verb == "start" else SIGNAL_TIMEOUT_S
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(CLUSTER_SCRIPT),
            *arguments,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            self._note(f"action: {label} {what} timed out after {timeout_s:.0f} s")
            return False, f"timed out after {timeout_s:.0f} s"
        text = output.decode("utf-8", errors="replace").strip()
        ok = process.returncode == 0
        self._note(f"action: {label} {what} {'done' if ok else 'failed'}: {text}")
        return ok, text

    def _note(self, message: str) -> None:
        self.collector.add_timeline(
            [snapshot.entry(snapshot.format_time(time.time()), "lab", message, kind="action")]
        )

    async def start_scenario(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        if request.path_params["name"] != "kill-the-controller":
            return JSONResponse({"error": "unknown scenario"}, status_code=404)
        if self.scenario is not None and self.scenario.status == "running":
            return JSONResponse({"error": "a scenario is already running"}, status_code=409)
        view = self.collector.latest
        if view is None:
            return JSONResponse({"error": "no view of the cluster yet"}, status_code=409)
        context = scenario.prepare(view)
        if isinstance(context, str):
            return JSONResponse({"error": context}, status_code=409)
        run = scenario.ScenarioRun("kill the controller", scenario.KILL_THE_CONTROLLER, context)
        self.scenario = run
        self._scenario_task = asyncio.create_task(self._drive(run))
        return JSONResponse(run.as_json())

    async def _drive(self, run: scenario.ScenarioRun) -> None:
        self.collector.hub.publish("scenario", run.as_json())
        if run.context is None:
            return
        ok, output = await self.run_cluster_command("broker", run.context.victim, "kill")
        if not ok:
            run.fail(f"kill failed: {output}")
        while run.status == "running":
            await self.collector.wait_for_poll()
            latest = self.collector.latest
            if latest is not None and run.observe(latest):
                self.collector.hub.publish("scenario", run.as_json())
        self.collector.hub.publish("scenario", run.as_json())
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
            await asyncio.to_thread(self.collector.session.close)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def build_app(directory: Path, allow_actions: bool, host: str, csrf: CsrfGuard) -> Starlette:
    lab = Lab(directory, allow_actions, csrf)
    routes: list[BaseRoute] = [
        Route("/", lab.page),
        Route("/events", lab.events),
        Route("/api/state", lab.state),
        Route("/api/znode", lab.znode),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    if allow_actions:
        routes += [
            Route("/api/action", lab.action, methods=["POST"]),
            Route("/api/scenario/{name}", lab.start_scenario, methods=["POST"]),
        ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lab.lifespan)
    app.state.lab = lab
    return app
