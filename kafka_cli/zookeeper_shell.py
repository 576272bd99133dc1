"""zookeeper-shell: read-only ZooKeeper inspection for machines without zkCli.sh (kazoo).

    zookeeper-shell HOST:PORT[,HOST:PORT...][/chroot] ls|get|stat|getAcl [-s] [--pretty] PATH
    echo "ls /brokers/ids" | zookeeper-shell HOST:PORT      (commands from standard input)

Output follows zkCli: `ls` prints the children as `[a, b]` (sorted), `get` prints the data as
text (`--pretty` re-indents JSON data), `stat` prints zkCli's stat fields (cZxid, ctime,
mZxid, mtime, pZxid, cversion, dataVersion, aclVersion, ephemeralOwner, dataLength,
numChildren), `getAcl` prints the znode's ACL (`'sasl,'kafka` then `: cdrwa`, per entry);
`-s` adds the stat after `ls`/`get`/`getAcl` output. A missing node, or one this session may
not read ("Insufficient permission"), is one line on standard error and exit status 1.
zkCli's connection chatter (WATCHER::...) is not printed.

As Kafka's zookeeper-shell.sh, the tool logs in to ZooKeeper (SASL DIGEST-MD5) with the JAAS
`Client` section that `KAFKA_OPTS=-Djava.security.auth.login.config=FILE` names, if any.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Iterator
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, KazooException, NoAuthError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from broker.security.zk_client_security import (
    ZkClientSecurityError,
    system_properties,
    zk_sasl_credentials,
)
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool
from zk.zk_security import ZkAcl, describe

COMMANDS = ("ls", "get", "stat", "getAcl")
CONNECT_TIMEOUT_S = 10.0
JSON_INDENT = 2


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="zookeeper-shell",
        description="Inspect ZooKeeper: ls, get and stat a znode (zkCli's output formats). "
        "Without a command, commands are read one per line from standard input.",
    )
    parser.add_argument("connect", help="HOST:PORT[,HOST:PORT...][/chroot]")
    parser.add_argument("command", nargs="?", choices=COMMANDS, help="ls, get, stat or getAcl")
    parser.add_argument("path", nargs="?", help="The znode path, e.g. /brokers/ids")
    parser.add_argument("-s", dest="with_stat", action="store_true", help="Also print the stat.")
    parser.add_argument(
        "--pretty", action="store_true", help="get: print JSON data indented (raw otherwise)."
    )
    return parser


def _command_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(prog="command", add_help=False)
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("path")
    parser.add_argument("-s", dest="with_stat", action="store_true")
    parser.add_argument("--pretty", action="store_true")
    return parser


def _hex(value: int) -> str:
    return hex(value & (2**64 - 1))  # Java's Long.toHexString: two's complement, no padding


def _java_date(epoch_ms: int) -> str:
    """java.util.Date.toString: `Thu Nov 23 05:18:00 UTC 2023` (local time zone)."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(epoch_ms / 1000))


def stat_lines(stat: Any) -> list[str]:
    return [
        f"cZxid = {_hex(stat.czxid)}",
        f"ctime = {_java_date(stat.ctime)}",
        f"mZxid = {_hex(stat.mzxid)}",
        f"mtime = {_java_date(stat.mtime)}",
        f"pZxid = {_hex(stat.pzxid)}",
        f"cversion = {stat.cversion}",
        f"dataVersion = {stat.version}",
        f"aclVersion = {stat.aversion}",
        f"ephemeralOwner = {_hex(stat.ephemeralOwner)}",
        f"dataLength = {stat.dataLength}",
        f"numChildren = {stat.numChildren}",
    ]


def data_text(data: bytes | None, pretty: bool) -> str:
    if data is None:
        return "null"
    text = data.decode("utf-8", "replace")
    if not pretty:
        return text
    try:
        return json.dumps(json.loads(text), indent=JSON_INDENT)
    except ValueError:
        return text  # not JSON: shown as it is


def run_command(client: KazooClient, command: argparse.Namespace) -> Iterator[str]:
    path = command.path
    if not path.startswith("/"):
        raise ToolError(f"Path must start with / character: {path}")
    try:
        if command.command == "ls":
            children = sorted(client.get_children(path))
            yield "[" + ", ".join(children) + "]"
            if command.with_stat:
                yield from stat_lines(client.exists(path))
        elif command.command == "get":
            data, stat = client.get(path)
            yield data_text(data, command.pretty)
            if command.with_stat:
                yield from stat_lines(stat)
        elif command.command == "getAcl":
            acls, stat = client.get_acls(path)
            yield from describe([ZkAcl(acl.perms, acl.id.scheme, acl.id.id) for acl in acls])
            if command.with_stat:
                yield from stat_lines(stat)
        else:
            stat = client.exists(path)
            if stat is None:
                raise NoNodeError()
            yield from stat_lines(stat)
    except NoNodeError as error:
        raise ToolError(f"Node does not exist: {path}") from error
    except NoAuthError as error:
        raise ToolError(f"Insufficient permission : {path}") from error


def _connect(connect: str) -> KazooClient:
    # kazoo logs every failed connection attempt; this tool reports failure itself.
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    try:
        credentials = zk_sasl_credentials(system_properties(os.environ))
    except ZkClientSecurityError as error:
        raise ToolError(str(error)) from error
    sasl = None
    if credentials is not None:
        sasl = {
            "mechanism": "DIGEST-MD5",
            "username": credentials.username,
            "password": credentials.password,
            "service": credentials.service_name,
        }
    client = KazooClient(hosts=connect, read_only=True, sasl_options=sasl)
    try:
        client.start(timeout=CONNECT_TIMEOUT_S)
        if sasl is not None:
            client.exists("/")  # kazoo's SASL login happens after start() returns
    except AuthFailedError as error:
        client.stop()
        client.close()
        raise ToolError(f"ZooKeeper at {connect} refused the SASL login") from error
    except (KazooTimeoutError, KazooException) as error:
        client.close()
        raise ToolError(f"Could not connect to ZooKeeper at {connect}") from error
    return client


def _stdin_commands(client: KazooClient) -> int:
    """zkCli's non-interactive use: one command a line; failures are reported, not fatal."""
    status = 0
    for line in sys.stdin:
        words = shlex.split(line)
        if not words:
            continue
        try:
            for output in run_command(client, _command_parser().parse_intermixed_args(words)):
                print(output)
        except ToolError as error:
            print(f"Error: {error}", file=sys.stderr)
            status = 1
    return status


def _body(args: list[str]) -> int:
    options = _parser().parse_intermixed_args(args)
    if options.command is not None and options.path is None:
        raise ToolError(f"{options.command} needs a PATH")
    client = _connect(options.connect)
    try:
        if options.command is None:
            return _stdin_commands(client)
        for output in run_command(client, options):
            print(output)
        return 0
    finally:
        client.stop()
        client.close()


def main() -> int:
    return run_tool(_body)
