"""What one authorization decision costs as the ACLs grow (review A4).

    .venv/bin/python scripts/_tools/bench_authorizer.py [--acls 2000 20000]

For each count, an AclAuthorizer loads that many ACLs from an in-memory ZooKeeper (literal
topics and groups, prefixed topics, some `*`), the way a broker loads them at start-up; then
it times `authorize` for a topic with its own literal ACL, a topic only a prefix covers, a
topic no ACL names (the `*` ACLs still apply) and a group. Prints the load time and the
microseconds per decision. No broker, no network: the decision alone, as on the event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from broker.security.acl import AuthorizerSettings, Operation, ResourceType
from broker.security.authorizer import AclAuthorizer

ACL = (
    '{{"version":1,"acls":[{{"principal":"User:{user}","permissionType":"Allow",'
    '"operation":"{op}","host":"*"}}]}}'
)
MEASURE_S = 0.5  # per case: as many decisions as fit


class MemoryZk:
    """The reads AclAuthorizer.start makes, over a dict of znodes."""

    def __init__(self, nodes: dict[str, bytes]) -> None:
        self.nodes = nodes

    async def ensure_path(self, path: str) -> None:
        self.nodes.setdefault(path, b"")

    async def get_children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.nodes if p.startswith(prefix)})

    async def get(self, path: str) -> tuple[bytes, Any] | None:
        if path not in self.nodes:
            return None
        return self.nodes[path], SimpleNamespace(version=0, ctime_ms=0)

    async def get_many(self, paths: list[str]) -> list[tuple[bytes, Any] | None]:
        return [await self.get(p) for p in paths]

    def watch_children(self, path: str, callback: Any) -> None:
        pass


def _nodes(count: int) -> dict[str, bytes]:
    """`count` ACLs: 70% literal topics, 20% literal groups, 10% prefixed topics."""
    nodes: dict[str, bytes] = {}
    for i in range(count):
        user = f"u{i % 50}"
        if i % 10 < 7:
            path, op = f"/kafka-acl/Topic/topic-{i}", "Write"
        elif i % 10 < 9:
            path, op = f"/kafka-acl/Group/group-{i}", "Read"
        else:
            path, op = f"/kafka-acl-extended/prefixed/Topic/pre-{i}-", "Read"
        nodes[path] = ACL.format(user=user, op=op).encode()
    nodes["/kafka-acl/Topic/*"] = ACL.format(user="monitor", op="Describe").encode()
    return nodes


def _per_decision_us(authorizer: AclAuthorizer, rtype: ResourceType, name: str) -> float:
    decisions = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < MEASURE_S or decisions < 10:
        for _ in range(10):
            authorizer.authorize("User:u0", "10.0.0.1", Operation.WRITE, rtype, name)
        decisions += 10
    return elapsed / decisions * 1e6


async def _run(count: int) -> None:
    authorizer = AclAuthorizer(MemoryZk(_nodes(count)), AuthorizerSettings())  # type: ignore[arg-type]
    started = time.perf_counter()
    await authorizer.start()
    load_s = time.perf_counter() - started
    cases = {
        "literal topic": (ResourceType.TOPIC, "topic-0"),
        "prefixed topic": (ResourceType.TOPIC, "pre-9-x"),
        "unnamed topic": (ResourceType.TOPIC, "other"),
        "group": (ResourceType.GROUP, "group-7"),
    }
    timings = ", ".join(
        f"{case} {_per_decision_us(authorizer, rtype, name):.2f} us"
        for case, (rtype, name) in cases.items()
    )
    print(f"{count} ACLs: loaded in {load_s:.2f} s; per decision: {timings}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acls", type=int, nargs="+", default=[2000, 20000])
    for count in parser.parse_args().acls:
        asyncio.run(_run(count))


if __name__ == "__main__":
    main()
