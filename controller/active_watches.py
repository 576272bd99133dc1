"""The ZooKeeper watches only the active controller holds; each queues its controller event.

Watching begins before the failover reads the context, so no change between the reads and the
watches is missed; an event that fires meanwhile is handled after the failover and re-reads.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.events import (
    BrokerChange,
    ControllerEvent,
    IsrChangeNotification,
    LogDirEventNotification,
    PreferredReplicaElection,
    TopicChange,
    TopicDeletion,
    ZkPartitionReassignment,
)
from controller.zk_api import ControllerZk
from zk.znodes import (
    BrokerIdsZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicsZNode,
)

Enqueue = Callable[[ControllerEvent], None]

_CHILDREN_WATCHES: dict[str, type[ControllerEvent]] = {
    BrokerIdsZNode.path(): BrokerChange,
    TopicsZNode.path(): TopicChange,
    DeleteTopicsZNode.path(): TopicDeletion,
    IsrChangeNotificationZNode.path(): IsrChangeNotification,
    LogDirEventNotificationZNode.path(): LogDirEventNotification,
}
_DATA_WATCHES: dict[str, type[ControllerEvent]] = {
    PreferredReplicaElectionZNode.path(): PreferredReplicaElection,
    ReassignPartitionsZNode.path(): ZkPartitionReassignment,
}


class ActiveWatches:
    def __init__(self, kafka_zk: ControllerZk, enqueue: Enqueue) -> None:
        self._zk = kafka_zk
        self._watching = False
        # Made once: unwatching needs the very callbacks that were registered.
        self._children = {
            path: _enqueuer(enqueue, kind) for path, kind in _CHILDREN_WATCHES.items()
        }
        self._data = {path: _enqueuer(enqueue, kind) for path, kind in _DATA_WATCHES.items()}

    def watch(self) -> None:
        if self._watching:
            return
        self._watching = True
        for path, callback in self._children.items():
            self._zk.client.watch_children(path, callback)
        for path, callback in self._data.items():
            self._zk.client.watch_data(path, callback)

    def unwatch(self) -> None:
        if not self._watching:
            return
        self._watching = False
        for path, callback in self._children.items():
            self._zk.client.unwatch_children(path, callback)
        for path, callback in self._data.items():
            self._zk.client.unwatch_data(path, callback)


def _enqueuer(enqueue: Enqueue, kind: type[ControllerEvent]) -> Callable[[], None]:
    return lambda: enqueue(kind())
