"""`--jobs`: what it folds equals one process, what a frame hook sees is whole, and the default pays."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import GOLDEN, REPO
from helpers.fold_paths import fold_collapser, small_chunks

import flamegraph.folding.parallel as parallel
from flamegraph import FoldOptions
from flamegraph.folding.stage import jobs_for
from flamegraph.io.diagnostics import InputMissing

SOURCE = GOLDEN / "fold" / "cxx-names.perf.txt"


class Observer:
    """A frame hook like observer.FrameObserver: remembers what it saw, renames one symbol."""

    def __init__(self) -> None:
        self.seen: set[tuple[bytes, bytes, bytes]] = set()

    def __call__(self, pc: bytes, symbol: bytes, dso: bytes) -> bytes | None:
        self.seen.add((pc, symbol, dso))
        return b"renamed" if symbol == b"main" else None


def test_a_frame_hook_sees_what_the_workers_saw(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    # Each copy has frames of its own (another address for [unknown]), so each chunk shows the hook new ones.
    path.write_bytes(b"".join(SOURCE.read_bytes().replace(b"2f0 [unknown]", b"%x [unknown]" % k) for k in range(4)))
    one, many = Observer(), Observer()
    single = fold_collapser(path, FoldOptions(frame_hook=one), 1)
    split = fold_collapser(path, FoldOptions(frame_hook=many), 3)
    assert split.by_event == single.by_event
    assert any(b"renamed" in stack for stack in single.by_event[None])
    assert many.seen == one.seen
    assert len({pc for pc, symbol, _ in one.seen if symbol == b"[unknown]"}) >= 4


def test_a_failing_worker_fails_the_fold_and_leaves_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(SOURCE.read_bytes() * 4)

    def broken(*args: object) -> None:
        raise InputMissing("in.txt: read failed: simulated")

    monkeypatch.setattr(parallel, "_fold_chunk", broken)
    with pytest.raises(InputMissing, match="simulated"):
        fold_collapser(path, FoldOptions(), 2)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every worker was reaped


def test_default_jobs_one_for_small_inputs_all_cores_for_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = tmp_path / "small.txt"
    small.write_bytes(SOURCE.read_bytes())
    assert jobs_for(str(small), None, strict=False) == 1
    monkeypatch.setattr(parallel, "cpu_count", lambda: 2)
    assert parallel.default_jobs(1 << 20) == 1
    assert parallel.default_jobs(3 << 20) == 1
    assert parallel.default_jobs(4 << 20) == 2
    assert parallel.default_jobs(200 << 20) == 2
    with small_chunks():
        assert jobs_for(str(small), None, strict=False) == 2
        assert jobs_for(str(small), None, strict=True) == 1  # --strict stops at the first problem: in order
        assert jobs_for("-", 4, strict=False) == 1


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_worker_dies_with_its_parent(tmp_path: Path) -> None:
    """SIGKILL to `fold -j2` (no clean-up possible) still leaves no worker folding on."""
    path = tmp_path / "big.txt"
    record = (GOLDEN / "fold" / "cxx-names.perf.txt").read_bytes()
    path.write_bytes(record * (60_000_000 // len(record)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "flamegraph", "fold", "-j2", "--no-group-unknown", str(path), "-o", str(tmp_path / "o")],
        cwd=REPO, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while not workers and proc.poll() is None and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.001)
    assert workers, "the fold ended before a worker was seen"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(_alive(pid) for pid in workers)
