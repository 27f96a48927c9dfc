"""Shared fixtures: where ../shared lives, golden-file comparison, and the CLI run as another user."""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.extras import need_installed
from helpers.shared import need_shared
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"

# Hypothesis' deadline (200 ms an example) and its too_slow check time the machine, not the code: a
# slow or loaded CPU failed them ("Unreliable test timings"). Off for every property; explicit
# @settings(...) keep what they set and inherit the rest from here.
settings.register_profile("any-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("any-machine")


@pytest.fixture(scope="session")
def shared() -> Path:
    """The peer-test corpus (tests/helpers/shared.py); a test asking for it is marked `shared`."""
    return need_shared()


@pytest.fixture(scope="session")
def mnist() -> Path:
    """Real MNIST in the cache `make flamegraph` uses, prepared before a test trains on it, under a lock on
    the cache directory: a fresh machine downloads it once, not once per xdist worker racing the other.
    Once prepared, the files are only read: the tests training on them need no lock of their own."""
    from collectors.mnist import default_cache, prepare_mnist

    cache = default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released at close: the other worker then finds the files ready
        return prepare_mnist(cache)
    finally:
        os.close(fd)


# `make test` runs the suite in two parts: the tests not marked `serial` on both cores (pytest-xdist), then
# the `serial` ones alone. A test that records with real perf, trains MXNet, drives Chromium, reads an export
# back with its client, starts a Dask cluster or is slow is `serial` by itself: a busy neighbour on the other
# core could skew it. `parallel` lifts that for a test proven to pass beside two busy loops on both cores
# (it bounds no time, rate or share a neighbour could move, and touches nothing system-wide such as uprobes
# or /tmp/perf-vdso.so-*); an explicit `serial` mark always wins, so a `parallel` module can keep one test alone.
SERIAL_MARKS = frozenset({"perf", "mxnet", "browser", "interop", "fleet", "slow"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "shared" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared)
        if item.get_closest_marker("serial") is not None or item.get_closest_marker("parallel") is not None:
            continue
        if any(item.get_closest_marker(name) is not None for name in SERIAL_MARKS):
            item.add_marker(pytest.mark.serial)


@pytest.hookimpl(tryfirst=True)  # before the skip marks: an empty parameter list of the corpus gets this reason
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("shared") is not None:
        need_shared()
    if item.get_closest_marker("mxnet") is not None:  # the MLP as `make flamegraph` trains it: MXNet, --jit
        need_installed("mxnet")
        need_installed("capstone")


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


# -- running the CLI as another user (nobody, or root without capabilities) ------------------------
NOBODY = ("--reuid=65534", "--regid=65534", "--clear-groups")
NO_CAPABILITIES = ("--inh-caps=-all", "--bounding-set=-all")
BOOT = "import sys; sys.path.insert(0, {root!r}); sys.argv[0] = 'flamegraph'; from flamegraph.cli import main; main()"


def installed_requirements(name: str, seen: set[str] | None = None) -> set[str]:
    """`name` and the distributions it needs, transitively (extras and absent optional ones left out)."""
    seen = set() if seen is None else seen
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return seen  # a dependency for another platform (colorama on Windows)
    key = dist.metadata["Name"].lower()
    if key in seen:
        return seen
    seen.add(key)
    for requirement in dist.requires or []:
        if "extra ==" not in requirement:
            installed_requirements(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0], seen)
    return seen


class Unprivileged:
    """This checkout's `flamegraph`, run by a user who may not read root's files (or the checkout).

    As root (CI runs as root, from a fresh clone under a root-only directory), `nobody` could not
    even start our Python: the package and every library it needs are copied to a world-readable
    temporary directory and run with the interpreter itself (`python -S -E`: nothing else on the
    path) under `setpriv`. A user who is not root is unprivileged already: the CLI runs as it is.
    `scratch` is a directory both may write to.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.python = os.path.realpath(sys.executable)  # the venv's python is a link to the interpreter
        self.scratch = root / "scratch"
        self.scratch.mkdir()
        self.as_root = os.geteuid() == 0
        if not self.as_root:
            return
        assert shutil.which("setpriv"), "setpriv(1) is needed to drop privileges (util-linux)"
        shutil.copytree(REPO / "flamegraph", root / "flamegraph", ignore=shutil.ignore_patterns("__pycache__"))
        for name in installed_requirements("flamegraph-perf") - {"flamegraph-perf"}:
            dist = importlib.metadata.distribution(name)
            for file in dist.files or []:
                if not str(file).startswith("..") and "__pycache__" not in file.parts:
                    (root / file).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(Path(str(dist.locate_file(file))), root / file)
        for path in [root, *root.rglob("*")]:
            path.chmod(0o777 if path == self.scratch else (0o755 if path.is_dir() else 0o644))

    def command(self, *args: str, drop: tuple[str, ...] = NOBODY) -> list[str]:
        """`flamegraph ARGS` as another user (root: `setpriv DROP`; anyone else: as themselves)."""
        if not self.as_root:
            return [sys.executable, "-m", "flamegraph", *args]
        return ["setpriv", *drop, self.python, "-S", "-E", "-c", BOOT.format(root=str(self.root)), *args]


@pytest.fixture(scope="session")
def unprivileged() -> Iterator[Unprivileged]:
    root = Path(tempfile.mkdtemp(prefix="flamegraph-unprivileged-"))
    try:
        yield Unprivileged(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
