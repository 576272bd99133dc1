"""Find a ZooKeeper installation, write each server's config, and talk four-letter words.

Discovery order (CLUSTER_CONTRACT.md): $ZOOKEEPER_HOME, the jars inside the installed
pyspark package, then Debian's /usr/share/zookeeper. All are run the same way:
`java -cp <classpath> org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import zk_sasl_material
from .errors import ClusterError
from .layout import ClusterSpec, zookeeper_dir

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
MINIMUM_JAVA_MAJOR = 17
DEBIAN_HOME = Path("/usr/share/zookeeper")
# A short tick makes elections and session expiry fast on loopback; the limits are in ticks
# (10 s to sync a follower, 5 s of follower lag) and the session bounds keep Kafka's
# zookeeper.session.timeout.ms defaults usable despite the short tick.
TICK_TIME_MS = 500
INIT_LIMIT_TICKS = 20
SYNC_LIMIT_TICKS = 10
MIN_SESSION_TIMEOUT_MS = 1000
MAX_SESSION_TIMEOUT_MS = 60000
FOUR_LETTER_TIMEOUT_S = 2.0
# What the server needs of pyspark's ~280 jars (ZooKeeper, its logging, Netty for its TLS
# classes). A JVM that scans them all spends twice the CPU starting up.
PYSPARK_ZOOKEEPER_JARS = (
    "zookeeper-[0-9]*.jar",
    "zookeeper-jute-*.jar",
    "slf4j-api-*.jar",
    "log4j-api-*.jar",
    "log4j-core-*.jar",
    "log4j-slf4j2-impl-*.jar",
    "audience-annotations-*.jar",
    "commons-io-*.jar",
    "commons-cli-*.jar",
    "metrics-core-*.jar",
    "snappy-java-*.jar",
    "netty-buffer-*.jar",
    "netty-codec-[0-9]*.jar",
    "netty-codec-base-*.jar",
    "netty-common-*.jar",
    "netty-handler-[0-9]*.jar",
    "netty-resolver-[0-9]*.jar",
    "netty-transport-[0-9]*.jar",
    "netty-transport-native-unix-common-*.jar",
    "netty-transport-classes-epoll-*.jar",
)
# The serial collector is enough for a local ensemble, and so is the quick C1 compiler: with C2
# too, a fresh server compiled the paths a failover first takes while the brokers needed the
# CPUs (1.0-1.3 s of compiler CPU in the 2 s after a controller's election, 5,000 partitions
# on 2 cores; C1 only: 0.4-0.6 s of ZooKeeper CPU in all, and loop stalls of the brokers under
# 100 ms). ZooKeeper's own zkServer.sh appends SERVER_JVMFLAGS to the server's JVM options; so
# does the launcher (-XX:TieredStopAtLevel=4 there brings C2 back).
DEFAULT_JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SERVER_JVMFLAGS_ENV = "SERVER_JVMFLAGS"


@dataclass(frozen=True, slots=True)
class Installation:
    description: str
    classpath: str


def _has_zookeeper_jar(directory: Path) -> bool:
    return any(directory.glob("zookeeper-*.jar")) or any(directory.glob("zookeeper.jar"))


def _from_home(home: Path, description: str) -> Installation | None:
    entries = [home / "lib", home, home / "conf"]
    if not any(_has_zookeeper_jar(entry) for entry in entries[:2]):
        return None
    classpath = f"{home / 'lib'}/*:{home}/*:{home / 'conf'}"
    return Installation(description=f"{description} ({home})", classpath=classpath)


def _pyspark_jars() -> Path | None:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    jars = Path(spec.origin).parent / "jars"
    return jars if _has_zookeeper_jar(jars) else None


def _pyspark_classpath(jars: Path) -> str:
    """The jars the server needs; the whole directory when one of them is missing (another
    pyspark release may name them differently)."""
    found = [sorted(jars.glob(pattern)) for pattern in PYSPARK_ZOOKEEPER_JARS]
    if not all(found):
        return f"{jars}/*"
    return ":".join(str(matches[-1]) for matches in found)


def server_jvm_options() -> list[str]:
    return [*DEFAULT_JVM_OPTIONS, *shlex.split(os.environ.get(SERVER_JVMFLAGS_ENV, ""))]


def find_installation() -> Installation:
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        found = _from_home(Path(home), "$ZOOKEEPER_HOME")
        if found is None:
            raise ClusterError(f"ZOOKEEPER_HOME={home} holds no zookeeper-*.jar (nor in lib/)")
        return found
    jars = _pyspark_jars()
    if jars is not None:
        return Installation(
            description=f"pyspark jars ({jars})", classpath=_pyspark_classpath(jars)
        )
    if DEBIAN_HOME.is_dir():
        # Debian keeps the jar and its dependencies in /usr/share/java.
        classpath = f"{DEBIAN_HOME}/*:{DEBIAN_HOME}/lib/*:/usr/share/java/*:/etc/zookeeper/conf"
        return Installation(description=f"Debian package ({DEBIAN_HOME})", classpath=classpath)
    raise ClusterError(
        "no ZooKeeper found: set ZOOKEEPER_HOME to a ZooKeeper distribution, install the "
        "project's dev extras (pyspark ships ZooKeeper jars: make setup), or install Debian's "
        "zookeeper package"
    )


def check_java() -> str:
    """Return the java executable; fail clearly if missing or older than Java 17."""
    java = shutil.which("java")
    if java is None:
        raise ClusterError(
            f"Java {MINIMUM_JAVA_MAJOR}+ is required to run ZooKeeper, but `java` is not on "
            "PATH (Debian/Ubuntu: apt-get install openjdk-17-jre-headless)"
        )
    result = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if match is None:
        raise ClusterError(f"could not read the Java version from `{java} -version`")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    if major < MINIMUM_JAVA_MAJOR:
        raise ClusterError(f"Java {MINIMUM_JAVA_MAJOR}+ is required, found Java {major} ({java})")
    return java


def zoo_cfg(spec: ClusterSpec, server_id: int, data_dir: Path) -> str:
    lines = [
        f"tickTime={TICK_TIME_MS}",
        f"initLimit={INIT_LIMIT_TICKS}",
        f"syncLimit={SYNC_LIMIT_TICKS}",
        f"minSessionTimeout={MIN_SESSION_TIMEOUT_MS}",
        f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
        f"dataDir={data_dir}",
        f"clientPortAddress={spec.zookeeper_host(server_id)}",
        f"clientPort={spec.zookeeper_client_port(server_id)}",
        "admin.enableServer=false",
        "4lw.commands.whitelist=*",
        "maxClientCnxns=0",
    ]
    if spec.zookeeper_count > 1:
        for peer in spec.zookeeper_ids:
            quorum = spec.zookeeper_quorum_port(peer)
            election = spec.zookeeper_election_port(peer)
            host = spec.zookeeper_host(peer)
            lines.append(f"server.{peer}={host}:{quorum}:{election}")
    if zk_sasl_material.enabled(spec.overrides):
        lines += zk_sasl_material.zoo_cfg_lines()
    return "\n".join(lines) + "\n"


LOG4J2_PROPERTIES = """\
# Written by scripts/cluster: INFO to stdout, which the launcher sends to zookeeper.log.
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}] %-5p %m (%c{1})%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
"""


def prepare_server(
    spec: ClusterSpec, server_id: int, java: str, installation: Installation
) -> list[str]:
    """Write zoo.cfg, myid and logging config for server `server_id`; return its command."""
    server_dir = zookeeper_dir(Path(spec.directory), server_id)
    data_dir = server_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    if spec.zookeeper_count > 1:
        (data_dir / "myid").write_text(f"{server_id}\n")
    config_path = server_dir / "zoo.cfg"
    config_path.write_text(zoo_cfg(spec, server_id, data_dir))
    log4j2_path = server_dir / "log4j2.properties"
    log4j2_path.write_text(LOG4J2_PROPERTIES)
    sasl_options = (
        zk_sasl_material.server_jvm_options(Path(spec.directory))
        if zk_sasl_material.enabled(spec.overrides)
        else []
    )
    return [
        java,
        "-Xms32m",
        "-Xmx256m",
        *server_jvm_options(),
        f"-Dlog4j2.configurationFile={log4j2_path}",
        # Read by the log4j/logback configs that ZooKeeper distributions ship in conf/.
        "-Dzookeeper.root.logger=INFO,CONSOLE",
        "-Dzookeeper.console.threshold=INFO",
        *sasl_options,
        "-cp",
        installation.classpath,
        MAIN_CLASS,
        str(config_path),
    ]


def four_letter_word(port: int, word: str, host: str = "127.0.0.1") -> str | None:
    """Send a four-letter command to host:port; None if the server does not answer."""
    try:
        with socket.create_connection((host, port), timeout=FOUR_LETTER_TIMEOUT_S) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode("utf-8", errors="replace")


def is_ok(port: int, host: str = "127.0.0.1") -> bool:
    return four_letter_word(port, "ruok", host) == "imok"


def server_mode(port: int, host: str = "127.0.0.1") -> str:
    """leader, follower, standalone or observer; 'not-serving' or 'unreachable' otherwise."""
    answer = four_letter_word(port, "srvr", host)
    if answer is None:
        return "unreachable"
    match = re.search(r"^Mode: (\S+)", answer, re.MULTILINE)
    return match.group(1) if match else "not-serving"
