"""Exceptions of the ZooKeeper layer.

Our own classes so that nothing above `zk/client.py` needs to know kazoo exists.
"""

from __future__ import annotations


class ZkError(Exception):
    """Any ZooKeeper failure. `path` is the znode concerned when known; `op_index` is the
    position of the failing operation inside a multi (None outside a multi)."""

    def __init__(self, message: str = "", path: str | None = None, op_index: int | None = None):
        super().__init__(message or type(self).__name__)
        self.path = path
        self.op_index = op_index


class NodeExistsError(ZkError):
    """The znode to create is already there."""


class NoNodeError(ZkError):
    """The znode (or the parent of the znode to create) does not exist."""


class InvalidPathError(NoNodeError):
    """The path breaks ZooKeeper's rules (zk/path_rules.py), so no znode can be there: refused
    before it is sent, and read as absent by the reads that answer None for a missing znode."""


class BadVersionError(ZkError):
    """A conditional write or check saw another zkVersion."""


class NotEmptyError(ZkError):
    """A znode with children cannot be deleted non-recursively."""


class ConnectionLossError(ZkError):
    """The connection dropped before the answer arrived; the outcome is unknown."""


class SessionExpiredError(ZkError):
    """The session is gone (expired or the client was closed); ephemerals are deleted."""


class NoAuthError(ZkError):
    """The znode's ACL does not let this session do that."""


class AuthFailedError(ZkError):
    """ZooKeeper refused the session's credentials (SASL); the client stops connecting."""


# Domain errors raised by kafka_zk.py.


class BrokerIdInUseError(ZkError):
    """Another session holds /brokers/ids/<id> (Kafka: NodeExistsException at registration)."""


class TopicExistsError(ZkError):
    """The topic znode already exists."""


class ControllerMovedError(ZkError):
    """The /controller_epoch zkVersion changed: this controller has been deposed and its write
    was rejected (Kafka: ControllerMovedException)."""
