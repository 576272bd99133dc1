"""Write pytest's assertion-rewritten bytecode of every test module and conftest.py (`make test`).

pytest rewrites the asserts of each test module it imports and caches the result beside it
(`__pycache__/NAME.cpython-311-pytest-X.pyc`), but, like Python, writes nothing when
PYTHONDONTWRITEBYTECODE is set, as on CI machines and here. Then every pytest process of
`make test` (four xdist workers, each collecting every module, and Spark's pytest) rewrote all
~220 modules again: 5 of the 10 s of CPU a collection takes. This does it once, with pytest's
own rewriter, into the file pytest reads (a checked-hash pyc, valid until the source changes).

Best effort: anything unexpected (another pytest whose internals moved) is reported in one
line and leaves pytest to rewrite the modules itself, as before.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent


def _rewrite(path: Path) -> None:
    from _pytest.assertion.rewrite import PYC_TAIL, _write_pyc_fp, get_cache_dir, rewrite_asserts

    source = path.read_bytes()
    tree = ast.parse(source, filename=str(path))
    # pytest passes its config only for enable_assertion_pass_hook, off unless an ini sets it.
    rewrite_asserts(tree, source, str(path), None)
    code = compile(tree, str(path), "exec", dont_inherit=True)
    cache_dir = get_cache_dir(path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    pyc = cache_dir / (path.name[:-3] + PYC_TAIL)
    partial = f"{pyc}.{os.getpid()}"  # then renamed, as pytest does: never a torn pyc
    with open(partial, "wb") as stream:
        _write_pyc_fp(stream, importlib.util.source_hash(source), code)
    os.replace(partial, pyc)


def main() -> int:
    paths = [
        path
        for path in sorted(TESTS_DIR.rglob("*.py"))
        if path.name.startswith("test_") or path.name == "conftest.py"
    ]
    try:
        with ProcessPoolExecutor() as pool:
            list(pool.map(_rewrite, paths, chunksize=8))
    except Exception as error:  # best effort: pytest rewrites them itself
        print(f"tests/assertion_bytecode.py: skipped ({error!r})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
