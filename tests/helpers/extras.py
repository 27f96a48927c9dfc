"""The optional extras of pyproject.toml in the tests: `pip install -e '.[dev]'` alone must collect
the whole suite. A test (or, called at module level, a whole file) that needs a module of another
extra skips with its name; `make venv` installs every extra, so `make test` skips none of them."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

EXTRA = {
    "numpy": "collect",
    "mxnet": "collect",
    "capstone": "jit",
    "cairosvg": "png",
    "distributed": "fleet",
    "msgpack": "fleet",  # Dask's wire format
}


def reason(module: str) -> str:
    return f"needs {module}: pip install -e '.[{EXTRA[module]}]'"


def need(module: str) -> ModuleType:
    """`module` imported, or skip: it comes with an extra the `dev` install does not have."""
    return pytest.importorskip(module, reason=reason(module))


def need_installed(module: str) -> None:
    """Skip unless `module` is installed, for tests that run it in another process (found, not
    imported here: MXNet takes seconds to load)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason(module))
