"""Operator tools behind scripts/bench and scripts/chaos."""
