"""Helpers behind ``scripts/lab``: a live web view of a cluster started by ``scripts/cluster``.

``snapshot`` (pure: ZooKeeper data, process liveness and metrics into one JSON-able view, and
the timeline entries two views differ by), ``prometheus`` (the metrics the lab reads),
``timeline`` (tailing the brokers' state-change logs), ``security`` (the CSRF token),
``scenario`` (guided faults, confirmed step by step from what the lab observes),
``collector`` (the I/O: kazoo, four-letter words, /metrics, cluster.json), ``app`` (the
Starlette routes and the server-sent event stream) and ``cli`` (argument parsing).
"""
