"""Shared fixtures: where ../shared lives, and golden-file comparison."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


def shared_dir() -> Path:
    """The shared corpus: $FLAMEGRAPH_SHARED, else ../shared next to the checkout."""
    env = os.environ.get("FLAMEGRAPH_SHARED")
    return Path(env) if env else REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    assert path.is_dir(), f"shared corpus not found at {path} (set FLAMEGRAPH_SHARED)"
    return path


def check_golden(actual: bytes, golden: Path) -> None:
    """Compare with a golden file; UPDATE_GOLDEN=1 rewrites it. A missing golden fails."""
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_bytes(actual)
        return
    assert golden.exists(), f"missing golden file {golden} (run with UPDATE_GOLDEN=1 to create it on purpose)"
    assert actual == golden.read_bytes(), f"output differs from {golden}"
