"""Settings shared by every test session."""

import os

# The ZooKeeper servers the tests start through scripts/cluster add SERVER_JVMFLAGS to their
# JVM options, as ZooKeeper's zkServer.sh does. Stopping at the C1 compiler halves the CPU the
# JVM spends starting up, which is most of what a test's ZooKeeper does. (Kafka's reference
# brokers keep Kafka's JVM options: they do enough work for C2 to pay.) A value set outside wins.
os.environ.setdefault("SERVER_JVMFLAGS", "-XX:TieredStopAtLevel=1")
