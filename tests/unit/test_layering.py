"""DESIGN.md's layering, checked on the import statements of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = {"broker", "controller", "zk", "pipeline", "scripts"}
ALLOWED: dict[str, set[str]] = {
    "zk": set(),
    "controller": {"zk"},
    "broker": {"zk", "controller"},
    "pipeline": set(),
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_allowed_layers(package: str) -> None:
    allowed = ALLOWED[package] | {package}
    for path in sorted((ROOT / package).rglob("*.py")):
        illegal = _imported_packages(path) - allowed
        assert not illegal, f"{path.relative_to(ROOT)} imports {sorted(illegal)}"


KAZOO_USERS = {
    ROOT / "zk" / "client.py",
    ROOT / "zk" / "client_security.py",
    ROOT / "zk" / "kazoo_extensions.py",
}


def test_only_the_zk_client_modules_import_kazoo() -> None:
    for package in ALLOWED:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            names = {
                alias.name.split(".")[0]
                for node in ast.walk(tree)
                if isinstance(node, ast.Import)
                for alias in node.names
            } | {
                node.module.split(".")[0]
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module
            }
            if "kazoo" in names:
                assert path in KAZOO_USERS, f"{path} imports kazoo"


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, TYPE_CHECKING blocks included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_only_the_entry_point_imports_the_broker_server() -> None:
    """The broker's parts are handed their collaborators (broker/services.py), so
    broker/server.py and the modules it builds do not import each other in a circle."""
    allowed = {ROOT / "broker" / "__main__.py", ROOT / "broker" / "server.py"}
    for path in sorted((ROOT / "broker").rglob("*.py")):
        if path not in allowed:
            assert "broker.server" not in _imported_modules(path), f"{path} imports broker.server"


def test_the_broker_server_hands_no_part_itself() -> None:
    """The composition root hands each part named collaborators, never the server: no call in
    broker/server.py passes `self` (its bound methods, explicit callbacks, are fine)."""
    path = ROOT / "broker" / "server.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            handed = [a for a in arguments if isinstance(a, ast.Name) and a.id == "self"]
            assert not handed, f"broker/server.py:{node.lineno} hands `self` to a call"
