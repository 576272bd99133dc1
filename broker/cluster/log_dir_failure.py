"""A failed log dir taken offline while the broker serves its other log dirs (KIP-112).

When the log manager reports an I/O error on a log dir (see `LogManager.report_failure`),
this does what Kafka's ReplicaManager.handleLogDirFailure does: stop moves into or out of the
directory, take its logs out of service (their replicas answer KAFKA_STORAGE_ERROR from now
on and are never re-created elsewhere), close their files, then tell the controller: it
writes the broker's offline replicas to `/brokers/offline_replicas/<id>` (ours: Kafka's
controller learns them from LeaderAndIsr responses) and creates
`/log_dir_event_notification/log_dir_event_<seq>` (`{"version":1,"broker":<id>,"event":1}`),
retrying on a timer until ZooKeeper takes both. With no log dir left, the broker halts, as
Kafka's does.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from broker.log.log import Log
from broker.log.manager import LogManager
from broker.replication.alter_log_dirs import ReplicaAlterLogDirs
from broker.replication.replica_manager import ReplicaManager
from zk.errors import ZkError
from zk.kafka_zk import KafkaZk

log = logging.getLogger(__name__)

NOTIFY_RETRY_MIN_S = 0.5
NOTIFY_RETRY_MAX_S = 10.0
# Kafka's Exit.halt status when every log dir has failed.
ALL_LOG_DIRS_FAILED_EXIT_STATUS = 1


class LogDirFailureHandler:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        replica_manager: ReplicaManager,
        mover: ReplicaAlterLogDirs,
        kafka_zk: KafkaZk,
        halt: Callable[[int], None] = os._exit,
    ) -> None:
        self._broker_id = broker_id
        self._log_manager = log_manager
        self._replica_manager = replica_manager
        self._mover = mover
        self._kafka_zk = kafka_zk
        self._halt = halt
        self._tasks: set[asyncio.Task[None]] = set()
        self._notify_task: asyncio.Task[None] | None = None
        # Another dir failed while the controller was being told: tell it again after.
        self._notify_again = False

    def start(self) -> None:
        """From now on, log dir failures reported to the log manager are handled here."""
        self._log_manager.on_failure(asyncio.get_running_loop(), self.on_log_dir_failure)

    def on_log_dir_failure(self, log_dir: Path) -> None:
        """On the loop: take `log_dir` out of service at once, then close its files and tell
        the controller in the background."""
        if not self._log_manager.is_log_dir_online(log_dir):
            return
        log.warning("stopping serving replicas in failed log dir %s", log_dir)
        stopped_moves = self._mover.forget_log_dir(log_dir)
        current, future = self._log_manager.take_log_dir_offline(log_dir)
        offline = [(replica_log.topic, replica_log.partition) for replica_log in current]
        self._replica_manager.take_offline(offline)
        log.warning(
            "replicas %s are offline and moves of %s stopped: log dir %s failed",
            sorted(offline),
            stopped_moves,
            log_dir,
        )
        self._spawn(self._close(current + future), f"close-logs-{log_dir.name}")
        if not self._log_manager.online_log_dirs:
            log.critical("every log dir has failed (%s): halting", self._log_manager.log_dirs)
            self._halt(ALL_LOG_DIRS_FAILED_EXIT_STATUS)
            return
        if self._notify_task is None or self._notify_task.done():
            self._notify_task = asyncio.get_running_loop().create_task(
                self._notify_controller(), name="log-dir-event"
            )
        else:
            self._notify_again = True

    async def _close(self, logs: list[Log]) -> None:
        def close_all() -> None:
            for replica_log in logs:
                try:
                    replica_log.close()
                except OSError as error:  # the disk is failing: only the handles matter
                    log.debug("closing %s: %s", replica_log.directory, error)

        await asyncio.to_thread(close_all)

    async def _notify_controller(self) -> None:
        """Write the offline replicas, then the notification; until both are in ZooKeeper.
        A failure after this one started notifies again with the larger list."""
        delay_s = NOTIFY_RETRY_MIN_S
        while True:
            self._notify_again = False
            try:
                await self.write_offline_replicas()
                await self._kafka_zk.propagate_log_dir_event(self._broker_id)
            except ZkError as error:
                log.warning("telling the controller of a failed log dir: %s; retrying", error)
                await asyncio.sleep(delay_s)
                delay_s = min(delay_s * 2, NOTIFY_RETRY_MAX_S)
                continue
            if not self._notify_again:
                return

    async def write_offline_replicas(self) -> None:
        """Also before registering on a new ZooKeeper session: the list is ephemeral."""
        offline = self._replica_manager.offline_replicas
        if offline or self._log_manager.online_log_dirs != self._log_manager.log_dirs:
            await self._kafka_zk.set_offline_replicas(self._broker_id, offline)

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        tasks = [*self._tasks, *([self._notify_task] if self._notify_task else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
