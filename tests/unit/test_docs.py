"""What the documentation says that the code can say is checked against the code: the API
table is generated from the registry, each handler's docstring names its registry range, and
every relative link of README.md and docs/*.md resolves (anchors included)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from broker.handlers import build_registry
from broker.protocol.registry import ApiSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from _tools import docs_apis  # noqa: E402

README = REPO_ROOT / "README.md"
HANDLERS_DIR = REPO_ROOT / "broker" / "handlers"
README_MAX_LINES = 250
DOCUMENTS = [README, REPO_ROOT / "DEVIATIONS.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$", re.M)
# "Produce v0-v11", "OffsetFetch: v0-v9", "CreateTopics: advertised v0-v7", "OffsetDelete: v0".
_FIRST_RANGE = re.compile(r"^(?P<name>\w+):?\s+(?:advertised\s+)?v(?P<low>\d+)(?:-v(?P<high>\d+))?")
_IMPLEMENTED = re.compile(r"implemented\s+v(?P<low>\d+)(?:-v(?P<high>\d+))?")


def _specs_by_module() -> dict[str, ApiSpec]:
    return {docs_apis._module_of(spec.handler): spec for spec in build_registry().all()}


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _range(match: re.Match[str]) -> tuple[int, int]:
    low = int(match["low"])
    return low, int(match["high"]) if match["high"] is not None else low


def test_api_table_is_generated_from_the_registry() -> None:
    assert docs_apis.API_PAGE.read_text() == docs_apis.render(), (
        "docs/apis.md differs from the registry: run scripts/docs-apis"
    )


@pytest.mark.parametrize("module", sorted(_specs_by_module()))
def test_handler_docstring_states_the_registry_range(module: str) -> None:
    spec = _specs_by_module()[module]
    docstring = _docstring(REPO_ROOT / (module.replace(".", "/") + ".py"))
    first = _FIRST_RANGE.match(docstring)
    assert first is not None, f"{module}'s docstring does not start with '{spec.name}: vA-vB'"
    assert first["name"] == spec.name
    assert _range(first) == (spec.min_version, spec.max_version), (
        f"{module} says {spec.name} {first.group(0)!r}; the registry advertises "
        f"v{spec.min_version}-v{spec.max_version}"
    )
    implemented = _IMPLEMENTED.search(docstring)
    if implemented is not None:
        assert _range(implemented) == (spec.min_decodable_version, spec.max_version), (
            f"{module} says {implemented.group(0)!r}; the registry decodes "
            f"v{spec.min_decodable_version}-v{spec.max_version}"
        )


def test_every_api_range_the_docs_name_is_served() -> None:
    # "Produce v0-v2", "OffsetCommit v0-1": in a handler's docstring, the README, DEVIATIONS.md
    # or docs/, a range within what the registry advertises.
    ranges = {spec.name: (spec.min_version, spec.max_version) for spec in build_registry().all()}
    mention = re.compile(
        r"\b(?P<name>" + "|".join(ranges) + r"):?\s+v(?P<low>\d+)(?:-v?(?P<high>\d+))?\b"
    )
    texts = {path.name: _docstring(path) for path in sorted(HANDLERS_DIR.glob("*.py"))}
    texts.update({path.name: path.read_text() for path in DOCUMENTS})
    outside = []
    for name, text in texts.items():
        for match in mention.finditer(text):
            low, high = _range(match)
            served_low, served_high = ranges[match["name"]]
            if not served_low <= low <= high <= served_high:
                outside.append(f"{name}: {match.group(0)!r}")
    assert outside == []


def _slug(title: str) -> str:
    # GitHub's anchors: lower case, punctuation dropped, spaces become hyphens.
    title = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", title)
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    for match in _HEADING.finditer(_FENCE.sub("", path.read_text())):
        slug = _slug(match["title"])
        candidate, count = slug, 0
        while candidate in anchors:
            count += 1
            candidate = f"{slug}-{count}"
        anchors.add(candidate)
    return anchors


def _relative_links(path: Path) -> list[str]:
    text = _FENCE.sub("", path.read_text())
    return [
        match["target"]
        for match in _LINK.finditer(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", match["target"])
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_relative_links_resolve(document: Path) -> None:
    broken = []
    for target in _relative_links(document):
        file_part, _, anchor = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        missing_anchor = bool(anchor) and linked.suffix == ".md" and anchor not in _anchors(linked)
        if not linked.exists() or missing_anchor:
            broken.append(target)
    assert broken == []


def test_readme_is_a_map() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES
    opening = "\n".join(lines[:8])
    assert "make up" in opening and "make test" in opening


_REPO_PATH = re.compile(
    r"(?<![\w/.{<-])(?:broker|controller|zk|pipeline|kafka_cli|scripts|tests|reference)/[\w/.-]*\w"
)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_named_repository_paths_exist(document: Path) -> None:
    # Paths a page names in prose or commands (`broker/log/log.py`, `scripts/cluster`), not
    # only its links; `reference/lib/` and the like are made by make targets.
    generated = ("reference/lib", "reference/spark/lib")
    missing = {
        path
        for path in _REPO_PATH.findall(document.read_text())
        if not path.startswith(generated) and not (REPO_ROOT / path).exists()
    }
    assert missing == set()
