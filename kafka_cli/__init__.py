"""Kafka's command-line tools (`kafka-topics`, `kafka-console-producer`, ...), one module each,
installed as console scripts with Kafka's names and flags (see CLUSTER_CONTRACT.md)."""
