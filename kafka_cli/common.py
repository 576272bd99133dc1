"""What every tool shares: one-line errors and exit codes, the way Kafka's tools fail."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn


class ToolError(Exception):
    """A failure to report as one line on stderr (no traceback) and exit status 1."""


def run_tool(body: Callable[[list[str]], int], argv: Sequence[str] | None = None) -> int:
    """Run a tool's body; turn expected failures into `Error: <message>` and a non-zero exit.

    Anything a user can cause (bad flags, unreachable brokers, a Kafka error code, a missing
    file) must reach here as a ToolError, a client library's exception or an OSError."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return body(args)
    except ToolError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `kafka-console-consumer ... | head`: the reader went away, which is not an error.
        return 0
    except Exception as error:  # a client library's or the OS's: still one line
        print(f"Error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1


def bootstrap_servers(value: str | None) -> str:
    if not value:
        raise ToolError("--bootstrap-server is required (host:port[,host:port...])")
    return value


class ToolArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are ToolErrors: one line on stderr, exit 1, like any other
    failure (`--help` still prints the full help and exits 0)."""

    def error(self, message: str) -> NoReturn:
        raise ToolError(f"{message} (see --help)")
