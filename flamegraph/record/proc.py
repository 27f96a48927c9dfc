"""What /proc says of a profiled process's threads, for the ones perf saw nothing of.

A thread blocked for the whole recording never switches, so perf has no record of it. Snapshots of
/proc/PID/task/*/stat and schedstat taken before and after tell whether it ran at all:
    /proc/4242/task/4250/stat        4250 (python) S 1 ...           <- the state letter after ')'
    /proc/4242/task/4250/schedstat   2617385 44120 17                <- on-CPU ns, run-queue ns, slices
    /proc/4242/task/4250/stack       [<0>] do_nanosleep+0x5e/0x170    <- where it is blocked (root only)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..folding.perf_sched import THROUGHOUT, WHOLE_RECORDING, Wait, state_frame


class ThreadState(NamedTuple):
    """One thread as /proc shows it: state letter and schedstat (on-CPU ns, run-queue ns, slices)."""

    state: str
    on_cpu_ns: int
    run_delay_ns: int
    slices: int


def snapshot_threads(pid: int) -> dict[int, ThreadState]:
    """Every thread of `pid` now; {} if it is gone. Read before and after a recording."""
    threads = {}
    try:
        tids = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return {}
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            state = Path(f"{base}/stat").read_text().rpartition(")")[2].split()[0]
            on_cpu, delay, slices = (int(x) for x in Path(f"{base}/schedstat").read_text().split()[:3])
        except (OSError, ValueError, IndexError):
            continue
        threads[tid] = ThreadState(state, on_cpu, delay, slices)
    return threads


def kernel_stack(pid: int, tid: int) -> list[bytes]:
    """Root-first kernel frames of a blocked thread ("[<0>] do_nanosleep+0x5e/0x170" lines; root only)."""
    try:
        lines = Path(f"/proc/{pid}/task/{tid}/stack").read_bytes().splitlines()
    except OSError:
        return []
    frames = [line.split(b"] ", 1)[-1].split(b"+", 1)[0].strip() for line in lines]
    return [frame.replace(b";", b":") for frame in reversed(frames) if frame]


Resolver = Callable[[list[tuple[int, bytes]], int], list[Wait]]


def whole_window_resolver(pid: int, before: dict[int, ThreadState]) -> Resolver:
    """Threads of `pid` without a single record: off-CPU for the whole recording if /proc says they
    never ran between the snapshot taken before perf started and now (their slices and CPU time
    unchanged, not runnable). Their wait is drawn with the kernel stack they are blocked in."""

    def resolve(silent: list[tuple[int, bytes]], window_ns: int) -> list[Wait]:
        after = snapshot_threads(pid)
        waits = []
        for tid, name in silent:
            old, new = before.get(tid), after.get(tid)
            if old is None or new is None or new.state.startswith("R") or new.state in "XZ":
                continue
            if (old.slices, old.on_cpu_ns) != (new.slices, new.on_cpu_ns):
                continue  # it ran, and perf lost what it did: leave it to the "no switch" note
            state = new.state.encode()
            stack = b";".join([name, WHOLE_RECORDING, *kernel_stack(pid, tid), state_frame(state)])
            waits.append(Wait(stack, name, state, window_ns, THROUGHOUT))
        return waits

    return resolve


def alive(pid: int) -> bool:
    """Still running (a zombie has exited: its threads can no longer wait)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])
