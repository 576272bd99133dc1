"""`python -m broker server.properties [--override key=value ...]`"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import NoReturn

import broker._startup  # noqa: F401  (first: see its docstring)
from broker.config.kafka_config import ConfigError, KafkaConfig, load_config
from broker.log.meta_properties import MetaPropertiesError
from broker.process.gc_policy import GcPolicy
from broker.process.state_change_log_file import LOG_FORMAT, route_state_change_log
from broker.security.zk_client_security import ZkClientSecurityError
from broker.server import KafkaServer
from zk.errors import BrokerIdInUseError, ZkError

log = logging.getLogger("broker")

EXIT_GRACE_S = 10.0
# Kafka's kafka.logs.dir comes from this variable (bin/kafka-run-class.sh).
LOG_DIR_ENV = "LOG_DIR"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker", description="Run one broker.")
    parser.add_argument("properties", type=Path, help="server.properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    _skip_unused_record_fields()
    listener = route_state_change_log(os.environ.get(LOG_DIR_ENV))
    try:
        code = _main(args)
    finally:
        if listener is not None:
            listener.stop()
    _exit_without_teardown(code)


def _skip_unused_record_fields() -> None:
    """LOG_FORMAT names no source line, thread or process: do not look them up for every
    record (the logging HOWTO's "Optimization" settings). A failover logs thousands of lines
    on the event loop; this takes a record from about 15 to 4 µs with the queue handler."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def _main(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.properties, args.override)
    except ConfigError as error:
        log.error("invalid configuration: %s", error)
        return 2
    if config.ignored_keys:
        log.info("accepted but not acted on yet: %s", ", ".join(config.ignored_keys))
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_run(config))
    return uvloop.run(_run(config))


async def _run(config: KafkaConfig) -> int:
    try:
        server = KafkaServer(config)
    except ZkClientSecurityError as error:  # Kafka fails the same way in startup()
        log.error("Fatal error during KafkaServer startup. Prepare to shutdown: %s", error)
        return 1
    except ValueError as error:  # a config value only a part can judge (log.cleaner.*)
        log.error("invalid configuration: %s", error)
        return 2
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, server.request_stop)
    gc_policy = GcPolicy()  # the process's, so here rather than in the server
    gc_policy.start()
    try:
        await server.start()
    except (BrokerIdInUseError, MetaPropertiesError, ZkError, OSError) as error:
        log.error("broker %d failed to start: %s", config.broker_id, error)
        await server.shutdown()
        return 1
    await server.wait_stopped()
    await server.shutdown()
    await gc_policy.stop()
    _exit_if_finalization_hangs(0)
    return 0


def _exit_if_finalization_hangs(code: int) -> None:
    """Everything is flushed and closed; if asyncio's own finalization (cancelling leftover
    tasks, joining executor threads) does not end the process soon, end it anyway: a broker
    that logged its shutdown but keeps running cannot be restarted by its supervisor."""

    def force_exit() -> None:
        log.warning("process did not exit %.0f s after shutdown; exiting now", EXIT_GRACE_S)
        logging.shutdown()
        os._exit(code)

    timer = threading.Timer(EXIT_GRACE_S, force_exit)
    timer.daemon = True
    timer.start()


def _exit_without_teardown(code: int) -> NoReturn:
    """The broker is stopped: its logs closed and synced, its threads stopped. End the process
    before the interpreter's own teardown, which frees a broker's millions of objects one by
    one (with 5,000 partitions, a few hundred milliseconds of a SIGTERM's exit); only the
    log handlers' buffers still matter, and they are flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
