"""Settings shared by every test session."""

import os

# The JVMs the tests start through scripts/cluster (ZooKeeper, Apache Kafka's reference
# brokers) read their options from KAFKA_JVM_PERFORMANCE_OPTS, as Kafka's scripts do. Stopping
# at the C1 compiler halves the CPU a JVM spends starting up, which is what a test cluster's
# JVM mostly does; tests check behaviour, not peak throughput. A value set outside wins.
os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
