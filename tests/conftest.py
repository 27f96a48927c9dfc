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


def wait_for_perf_events(target_pid: int, timeout: float = 60.0) -> None:
    """Block until a `perf record` process attached to `target_pid` holds its perf_event fds open.

    Tests that need a target to do something *while* it is recorded start it paused and release it
    after this returns: a fixed sleep is not enough on a loaded machine, where perf can take seconds
    to start and attach."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if b"record" not in argv or str(target_pid).encode() not in argv:
                    continue
                links = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
            except OSError:
                continue
            if "anon_inode:[perf_event]" in links:
                time.sleep(0.2)  # perf opens the events of every thread before it enables them
                return
        time.sleep(0.02)
    raise AssertionError(f"no perf record attached to pid {target_pid} within {timeout} s")
