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
from flamegraph import Diagnostics, FoldOptions, PerfCollapser
from flamegraph.folding.stage import fold_perf, jobs_for
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

    monkeypatch.setattr(parallel, "_fold_chunk", broken)  # a worker folding a chunk of its own (-j3)
    monkeypatch.setattr(parallel, "_fold_back", broken)  # the worker sharing the front with this process
    for jobs in (2, 3):
        with pytest.raises(InputMissing, match="simulated"):
            fold_collapser(path, FoldOptions(), jobs)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every worker was reaped


def _pieces_taken(monkeypatch: pytest.MonkeyPatch, record: Path) -> Path:
    """Make every claim of a piece leave a line in `record`: 'F 3' (this process) or 'B 7' (the worker)."""
    for kind in (parallel.SharedClaims, parallel.FixedClaims):

        def logged(self: parallel.Claims, from_back: bool, take=kind.take) -> int | None:  # type: ignore[no-untyped-def]
            taken = take(self, from_back)
            if taken is not None:
                with open(record, "a") as out:
                    out.write(f"{'B' if from_back else 'F'} {taken}\n")
            return taken

        monkeypatch.setattr(kind, "take", logged)
    return record


def test_the_worker_folds_more_while_this_process_is_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`meanwhile` (convert: importing the renderer) runs once while the worker folds; the worker takes
    the pieces this process cannot, from the back, and the result is one process's, in its order."""
    path = tmp_path / "in.txt"
    path.write_bytes(SOURCE.read_bytes() * 40)
    called: list[float] = []
    record = _pieces_taken(monkeypatch, tmp_path / "claims")
    one = fold_collapser(path, FoldOptions(), 1)
    with small_chunks():
        split = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
        lines = parallel.fold_parallel(str(path), split, 2, lambda: called.append(time.sleep(0.5) or 1.0))
    assert called == [1.0]
    taken = [line.split() for line in record.read_text().splitlines()]
    front = [int(k) for who, k in taken if who == "F"]
    back = [int(k) for who, k in taken if who == "B"]
    assert sorted(front + back) == list(range(len(taken)))  # each piece once
    assert front == list(range(len(front))) and back == sorted(back, reverse=True)  # from either end
    assert len(back) > len(front)  # the worker folded on while this process slept
    assert split.by_event == one.by_event
    assert [list(stacks) for stacks in split.stacks.values()] == [list(stacks) for stacks in one.stacks.values()]
    assert split.diagnostics.records == one.diagnostics.records
    assert lines == len(path.read_bytes().split(b"\n")) - 1


def test_meanwhile_waits_for_no_worker_when_one_process_folds(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(SOURCE.read_bytes())
    called: list[int] = []
    fold_perf([str(path)], FoldOptions(), Diagnostics(echo=False), jobs=1, meanwhile=lambda: called.append(1))
    assert called == []  # the caller does its work after the fold, as it would anyway


def test_without_a_memory_file_the_front_is_split_in_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(SOURCE.read_bytes() * 8)
    one = fold_collapser(path, FoldOptions(), 1)
    record = _pieces_taken(monkeypatch, tmp_path / "claims")

    def no_memory_file(name: str, flags: int = 0) -> int:
        raise OSError(24, "Too many open files")

    for missing in ("absent", "failing"):
        if missing == "absent":
            monkeypatch.delattr(os, "memfd_create")
        else:
            monkeypatch.setattr(os, "memfd_create", no_memory_file, raising=False)
        two = fold_collapser(path, FoldOptions(), 2)
        assert sorted(record.read_text().splitlines()) == ["B 1", "F 0"]
        record.unlink()
        assert two.by_event == one.by_event and two.diagnostics.records == one.diagnostics.records


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
