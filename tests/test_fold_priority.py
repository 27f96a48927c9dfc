"""The streamed folder's `perf script` at idle priority while the spool has room, normal when it is behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import BadOption
from flamegraph.io.perf import stream_script, watching_scripts
from flamegraph.record.fold_priority import (
    NORMAL,
    POLL_SECONDS,
    URGENT_WAITING,
    FoldPriority,
    can_leave_idle,
    priority_mode,
)
from flamegraph.record.spool import Spool


class Queue:
    waiting = 0
    perf_ended = False


def policy(pid: int) -> int:
    return os.sched_getscheduler(pid)


def test_a_script_idles_while_the_spool_has_room_and_goes_normal_when_it_falls_behind() -> None:
    queue = Queue()
    priority = FoldPriority(queue, mode="idle")
    seen: list[int] = []

    class Spy:
        def started(self, pid: int) -> None:
            priority.started(pid)
            seen.append(policy(pid))

        def ended(self, pid: int) -> None:
            priority.ended(pid)

    with priority.watching(), watching_scripts(Spy()):
        with stream_script([sys.executable, "-c", "import time; time.sleep(2); print('x')"], "test") as out:
            pid = next(iter([p for p in [priority._pid] if p]))  # the script being read
            assert policy(pid) == os.SCHED_IDLE
            queue.waiting = URGENT_WAITING  # the folding is behind: the running script goes normal
            time.sleep(POLL_SECONDS * 4)
            assert policy(pid) == os.SCHED_OTHER
            queue.waiting = 0  # caught up: idle again
            time.sleep(POLL_SECONDS * 4)
            assert policy(pid) == os.SCHED_IDLE
            assert out.read() == b"x\n"
    assert seen == [os.SCHED_IDLE]
    assert priority.raised == 1
    assert priority._pid is None  # ended: its pid is no longer touched


def test_once_perf_has_ended_the_running_script_and_the_next_ones_go_normal() -> None:
    """Nothing is recorded any more: the user waits for the fold. Idle, the last chunk's script starved behind
    any busy process (a --pid target still running: 12 s at 1 % CPU for a 2 s recording beside two busy loops)."""
    queue = Queue()
    priority = FoldPriority(queue, mode="idle")
    with priority.watching():
        with stream_script([sys.executable, "-c", "import time; time.sleep(2)"], "test"):
            pid = priority._pid
            assert pid is not None and policy(pid) == os.SCHED_IDLE
            queue.perf_ended = True
            time.sleep(POLL_SECONDS * 4)
            assert policy(pid) == os.SCHED_OTHER
        with stream_script([sys.executable, "-c", "import time; time.sleep(0.5)"], "test"):
            assert priority._pid is not None and policy(priority._pid) == os.SCHED_OTHER
    assert priority.raised == 0  # not behind: the folding was not late, the recording was over


def test_a_script_started_while_behind_runs_at_normal_priority() -> None:
    queue = Queue()
    queue.waiting = URGENT_WAITING + 1
    priority = FoldPriority(queue, mode="idle")
    with priority.watching():
        with stream_script([sys.executable, "-c", "import time; time.sleep(0.5)"], "test"):
            assert priority._pid is not None
            assert policy(priority._pid) == os.SCHED_OTHER


def test_fold_priority_normal_leaves_every_script_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAMEGRAPH_FOLD_PRIORITY", "normal")
    priority = FoldPriority(Queue())
    assert priority.mode == NORMAL
    with priority.watching():
        with stream_script([sys.executable, "-c", "import time; time.sleep(0.3)"], "test"):
            assert priority._pid is None


def test_a_bad_fold_priority_is_one_line() -> None:
    with pytest.raises(BadOption, match=r"FLAMEGRAPH_FOLD_PRIORITY='low': expected idle or normal"):
        priority_mode({"FLAMEGRAPH_FOLD_PRIORITY": "low"})
    assert priority_mode({}) == "idle"


def test_the_spool_counts_its_waiting_chunks(tmp_path: Path) -> None:
    spool = Spool(tmp_path, cap=64_000_000)
    assert spool.waiting == 0
    for name in ("perf.data.2026010100000001", "perf.data.2026010100000002"):
        (tmp_path / name).write_bytes(b"x")
    spool._scan(time.clock_gettime_ns(time.CLOCK_MONOTONIC))
    assert spool.waiting == 2
    chunk = spool.next_chunk(timeout=0)
    assert chunk is not None and spool.waiting == 1  # the one being folded is not waiting
    assert not spool.perf_ended
    spool.ended()
    assert spool.perf_ended


@pytest.mark.perf
def test_a_streamed_recording_folds_with_its_perf_scripts_at_idle_priority(tmp_path: Path) -> None:
    """End to end: `record` (streamed by default) runs each chunk's perf script as SCHED_IDLE."""
    busy = tmp_path / "busy.c"
    busy.write_text("static volatile double s; int main(void) { for (;;) s += 1; }\n")
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "busy"), str(busy)], check=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flamegraph", "record", "--duration", "4", "--every", "1", "--max-spool", "16M",
         "--call-graph", "dwarf,65528", "--folded", str(tmp_path / "run.folded"), "-o", str(tmp_path / "run.svg"),
         "--", str(tmp_path / "busy")],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    policies: set[int] = set()
    while proc.poll() is None:
        for pid in _descendants(proc.pid):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if argv[:2] == [b"perf", b"script"] or argv[1:2] == [b"script"]:
                    policies.add(os.sched_getscheduler(pid))
            except (OSError, IndexError):
                pass
        time.sleep(0.01)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert os.SCHED_IDLE in policies
    assert (tmp_path / "run-001.folded").is_file()


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        children = []
        try:  # (every thread's: the fold thread starts the perf scripts)
            for task in Path(f"/proc/{current}/task").iterdir():
                children += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            pass
        found += children
        todo += children
    return found


def test_a_user_who_cannot_raise_a_script_again_folds_at_normal_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sched(7): without CAP_SYS_NICE, SCHED_IDLE -> SCHED_OTHER needs RLIMIT_NICE >= 20; an idle script that
    can never be raised would starve when the folding falls behind (found in review: EPERM as nobody)."""
    assert can_leave_idle()  # root here: CAP_SYS_NICE
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nCapEff:\t0000000000000000\n")
    said = []
    for limit in (0, 19, 20):
        monkeypatch.setattr("resource.getrlimit", lambda _which, limit=limit: (limit, limit))
        said.append(can_leave_idle(str(status)))
    monkeypatch.undo()
    assert said == [False, False, True]
    soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    assert can_leave_idle(str(tmp_path / "absent")) is (soft == resource.RLIM_INFINITY or soft >= 20)  # no /proc
    # then the folder never goes idle
    monkeypatch.setattr("flamegraph.record.fold_priority.can_leave_idle", lambda: False)
    assert FoldPriority(Queue(), mode="idle").mode == NORMAL
