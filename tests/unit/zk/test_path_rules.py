"""zk/path_rules.py follows ZooKeeper's PathUtils.validatePath."""

from __future__ import annotations

import pytest

from zk.path_rules import path_error


@pytest.mark.parametrize(
    "path",
    ["/", "/brokers/topics/t", "/config/users/alice%40EXAMPLE", "/a/.b/..c/x.", "/ünïcode"],
)
def test_legal_paths(path: str) -> None:
    assert path_error(path) is None


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "start with /"),
        ("brokers", "start with /"),
        ("/brokers/topics/", "end with /"),
        ("/brokers//topics", "empty name"),
        ("/brokers/topics/..", ". or .."),
        ("/brokers/./topics", ". or .."),
        ("/a\x00b", "control"),
        ("/a\x1fb", "control"),
        ("/a\x85b", "control"),
        ("/a\ue000b", "reserved"),
        ("/a\ufff0b", "reserved"),
    ],
)
def test_illegal_paths_say_why(path: str, reason: str) -> None:
    problem = path_error(path)
    assert problem is not None and reason in problem


def test_a_sequential_create_may_end_with_a_slash() -> None:
    assert path_error("/isr_change/", sequence=True) is None
    assert path_error("/isr_change/") is not None
