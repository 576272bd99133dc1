"""The kafka-python source distribution whose integration tests `scripts/client_suites` runs.

The sdist ships `test/integration/` but not two files those tests import: the `test` package's
`__init__.py` and `test/service.py` (the process wrappers kafka-python's fixtures use). Against
an external broker (`KAFKA_URI`) only `ExternalService` is ever built, so small stand-ins are
written next to the tests; spawning a real Kafka is refused loudly instead of half-working.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

DISTRIBUTION = "kafka-python"
ARCHIVE_PREFIX = "kafka_python"
PIP_DOWNLOAD_TIMEOUT_S = 600.0

# `test/__init__.py` upstream makes errors inside future callbacks fail the test; keep that.
_PACKAGE_INIT = '''"""Stand-in for kafka-python's test/__init__.py (absent from the sdist)."""

from kafka.future import Future

Future.error_on_callbacks = True
'''

_SERVICE_MODULE = '''"""Stand-in for kafka-python's test/service.py (absent from the sdist).

scripts/client_suites points the fixtures at a running cluster (KAFKA_URI), so they only build
ExternalService; SpawnedService exists for imports and refuses to start a Kafka of its own.
"""

__all__ = ["ExternalService", "SpawnedService"]


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, args=None, env=None):
        raise RuntimeError("scripts/client_suites runs against an external cluster only")
'''


class SdistError(Exception):
    """The sdist could not be downloaded or unpacked; the message says why."""


def installed_version() -> str:
    return version(DISTRIBUTION)


def ensure_sdist(cache_dir: Path, release: str) -> Path:
    """The unpacked sdist of `release` under `cache_dir`, downloaded with pip if absent."""
    tree = cache_dir / f"{ARCHIVE_PREFIX}-{release}"
    if not (tree / "test" / "integration").is_dir():
        archive = cache_dir / f"{ARCHIVE_PREFIX}-{release}.tar.gz"
        if not archive.is_file():
            _download(cache_dir, release)
        _unpack(archive, cache_dir)
    _write_missing(tree / "test" / "__init__.py", _PACKAGE_INIT)
    _write_missing(tree / "test" / "service.py", _SERVICE_MODULE)
    return tree


def _download(cache_dir: Path, release: str) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--no-binary", ":all:", "--dest", str(cache_dir), f"{DISTRIBUTION}=={release}"]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_DOWNLOAD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise SdistError(f"pip download took over {PIP_DOWNLOAD_TIMEOUT_S:.0f} s") from None
    if result.returncode != 0:
        raise SdistError(f"pip download {DISTRIBUTION}=={release} failed: {result.stderr.strip()}")


def _unpack(archive: Path, cache_dir: Path) -> None:
    if not archive.is_file():
        raise SdistError(f"pip download left no {archive.name} in {cache_dir}")
    try:
        with tarfile.open(archive) as bundle:
            bundle.extractall(cache_dir, filter="data")
    except (OSError, tarfile.TarError) as error:
        raise SdistError(f"cannot unpack {archive}: {error}") from None


def _write_missing(path: Path, text: str) -> None:
    if not path.exists():
        path.write_text(text)
