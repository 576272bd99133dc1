"""Kafka's command-line tools (`kafka-topics`, `kafka-console-producer`, ...), one module each,
installed as console scripts with Kafka's names and flags (see CLUSTER_CONTRACT.md)."""

import sys
from pathlib import Path

# kio registers a hypothesis strategy for each of its types whenever hypothesis can be
# imported. A tool never uses them, but in a development environment (hypothesis installed for
# the tests) that cost each start of a tool that imports kio 0.1-0.2 s of its 0.3 s of
# imports. Marked absent, as broker/_startup.py does for the broker, only when a console
# script is the program: a process that imports these modules (pytest) keeps hypothesis.
CONSOLE_SCRIPTS = frozenset(
    {
        "kafka-topics", "kafka-console-producer", "kafka-console-consumer",
        "kafka-consumer-groups", "kafka-configs", "kafka-leader-election",
        "kafka-reassign-partitions", "kafka-delete-records", "kafka-log-dirs", "kafka-dump-log",
        "kafka-transactions", "kafka-acls", "zookeeper-shell",
    }
)  # fmt: skip
if Path(getattr(sys, "argv", [""])[0] or "").name in CONSOLE_SCRIPTS:
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
