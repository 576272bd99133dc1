"""Follow /config/changes: when a notification names a topic, re-read that topic's config;
when it names `brokers/<id>` or `brokers/<default>`, the dynamic broker configs; when it names
`users/<user>[/clients/<client-id>]`, that user's SCRAM credentials and quotas; when it names
`clients/<client-id>`, that client's quotas.

Tools write the new config to /config/topics/<t> and then a sequential
`/config/changes/config_change_<n>` naming `topics/<t>` (as Kafka's AdminZkClient does).
Following the notifications (each once, in order, retried on failure, expired ones purged)
is `broker.cluster.change_notifications`' job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.cluster.change_notifications import ChangeNotificationListener
from zk.client import ZkClient
from zk.znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ZnodeDecodeError,
)

log = logging.getLogger(__name__)
TOPICS_ENTITY = "topics/"
BROKERS_ENTITY = "brokers/"
USERS_ENTITY = "users/"
CLIENTS_ENTITY = "clients/"


class ConfigChangeListener:
    def __init__(
        self,
        zk_client: ZkClient,
        on_topic_changed: Callable[[str], None],
        on_broker_changed: Callable[[str], None] | None = None,
        on_user_changed: Callable[[str], None] | None = None,
        on_client_changed: Callable[[str], None] | None = None,
    ) -> None:
        self._on_topic_changed = on_topic_changed
        self._on_broker_changed = on_broker_changed
        self._on_user_changed = on_user_changed
        self._on_client_changed = on_client_changed
        self.notifications = ChangeNotificationListener(
            zk_client,
            ConfigEntityChangeNotificationZNode.path(),
            ConfigEntityChangeNotificationSequenceZNode.SEQUENCE_PREFIX,
            self._process,
        )

    async def start(self) -> None:
        """Skip the notifications that exist now (configs are read fresh at start-up)."""
        await self.notifications.start()

    async def _process(self, notification_path: str, data: bytes) -> None:
        try:
            entity_path = ConfigEntityChangeNotificationSequenceZNode.decode(data)
        except ZnodeDecodeError as error:
            log.warning("ignoring malformed config change %s: %s", notification_path, error)
            return
        if entity_path.startswith(TOPICS_ENTITY):
            topic = entity_path[len(TOPICS_ENTITY) :]
            log.info("config of topic %s changed", topic)
            self._on_topic_changed(topic)
        elif entity_path.startswith(BROKERS_ENTITY) and self._on_broker_changed is not None:
            name = entity_path[len(BROKERS_ENTITY) :]
            log.info("dynamic config of brokers/%s changed", name)
            self._on_broker_changed(name)
        elif entity_path.startswith(USERS_ENTITY) and self._on_user_changed is not None:
            name = entity_path[len(USERS_ENTITY) :]
            log.info("config of users/%s changed", name)
            self._on_user_changed(name)
        elif entity_path.startswith(CLIENTS_ENTITY) and self._on_client_changed is not None:
            name = entity_path[len(CLIENTS_ENTITY) :]
            log.info("config of clients/%s changed", name)
            self._on_client_changed(name)
