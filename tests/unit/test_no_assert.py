"""DESIGN.md: invariants are checks that survive `python -O`, so product code has no `assert`
statement (python -O strips them); it raises a named error instead."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("broker", "controller", "zk", "pipeline", "kafka_cli", "scripts")


def _asserts(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
    ]


def test_product_code_has_no_assert_statements() -> None:
    found = [
        location
        for package in PRODUCT_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for location in _asserts(path)
    ]
    assert found == []
