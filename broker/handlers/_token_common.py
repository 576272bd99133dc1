"""What the four delegation-token handlers share: Kafka's allowTokenRequests rule and the
principal strings ("User:alice") they pass around."""

from __future__ import annotations

import datetime

from broker.network.context import RequestContext
from broker.network.tls import ANONYMOUS


def allow_token_requests(context: RequestContext) -> bool:
    """Tokens are not handed out on unauthenticated channels (PLAINTEXT, one-way SSL) nor to
    a connection that authenticated with a token (Kafka's KafkaApis.allowTokenRequests)."""
    if context.sasl is not None and context.sasl.token_authenticated:
        return False
    protocol = context.services.config.security_protocol(context.listener_name)
    if protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and context.principal == ANONYMOUS)


def principal(principal_type: str, name: str) -> str:
    return f"{principal_type}:{name}"


def split_principal(text: str) -> tuple[str, str]:
    """(type, name) of "Type:name", as Kafka's SecurityUtils.parseKafkaPrincipal reads it."""
    principal_type, _, name = text.partition(":")
    return principal_type, name


def timestamp(ms: int) -> datetime.datetime:
    """A response's timestamp field as kio writes it, -1 (Kafka's "none") included."""
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
