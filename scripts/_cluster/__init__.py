"""Helpers behind ``scripts/cluster``: the local ZooKeeper + broker launcher.

The command-line contract lives in CLUSTER_CONTRACT.md; each module does one job:
``layout`` (ports, paths, cluster.json), ``processes`` (spawn/signal/observe pids),
``zookeeper`` (find an installation, write zoo.cfg, four-letter words), ``brokers``
(server.properties), ``zk_view`` (what ZooKeeper says about the cluster), ``runtime``
(what the commands share), ``up``, ``restart`` (start), ``commands`` (down, status, kill)
and ``cli`` (argument parsing).
"""
