"""Properties of the off-CPU folder: random schedules written as `perf script` text fold back exactly."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.folding.perf_sched import OffCpuOptions, SchedCollapser
from flamegraph.folding.sched_totals import OffCpuFolder
from flamegraph.io.diagnostics import Diagnostics

FRAMES = ["__schedule", "do_nanosleep", "futex_wait", "pipe_read", "io_schedule", "main", "worker_loop"]
STATES = ["S", "D", "R", "R+", "I"]
MARKER_TID = 999  # a thread that only switches in: it opens and closes the window
HOW_OUT = ["sched_switch", "sched_switch + SWITCH OUT", "SWITCH OUT", "SWITCH OUT preempt"]


@dataclass
class Thread:
    tid: int
    starts_off: bool
    times: list[int]  # µs, strictly increasing: it toggles on/off at each
    outs: list[tuple[str, list[str]]]  # (state, frames leaf first) per switch-out
    next_pid_switch_in: list[bool]  # per switch-in: also a swapper->tid sched_switch just before
    how_out: list[str]  # per switch-out: which records show it (HOW_OUT)


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[Thread], int, int]:
    count = draw(st.integers(1, 4))
    pool = draw(st.lists(st.integers(1, 10**6), min_size=2 + 2 * count, max_size=60, unique=True))
    pool.sort()
    start, end, inner = pool[0], pool[-1], pool[1:-1]
    threads = []
    for i in range(count):
        times = sorted(draw(st.sets(st.sampled_from(inner), max_size=12))) if inner else []
        outs = [
            (draw(st.sampled_from(STATES)), draw(st.lists(st.sampled_from(FRAMES), min_size=1, max_size=4)))
            for _ in times
        ]
        flags = [draw(st.booleans()) for _ in times]
        how = [draw(st.sampled_from(HOW_OUT)) for _ in times]
        threads.append(Thread(100 + i, draw(st.booleans()), times, outs, flags, how))
    return threads, start, end


def timestamp(us: int) -> str:
    return f"{us // 1_000_000}.{us % 1_000_000:06d}"


def render(threads: list[Thread], start: int, end: int) -> tuple[bytes, dict[int, int], dict[str, int]]:
    """perf script text for the schedule, the expected off-CPU µs per tid, and per folded stack."""
    events: list[tuple[int, int, str]] = []  # (time, order, text): order keeps a sched_switch before its SWITCH IN
    per_tid: dict[int, int] = {}
    per_stack: dict[str, int] = {}
    marker = f"m {MARKER_TID} {{}}: PERF_RECORD_SWITCH IN\n"
    events += [(start, 0, marker.format(timestamp(start))), (end, 9, marker.format(timestamp(end)))]
    for thread in threads:
        if not thread.times:
            continue  # a thread without a single record is invisible to any recording
        off = thread.starts_off
        since, stack = start, f"t-{thread.tid};[off-CPU since recording start];[?]"
        for k, when in enumerate(thread.times):
            if off:  # a switch-in closes the wait
                if thread.next_pid_switch_in[k]:
                    events.append((when, 1, _switch(0, "swapper", "R", thread.tid, [], when)))
                events.append((when, 2, f"t {thread.tid} {timestamp(when)}: PERF_RECORD_SWITCH IN\n"))
                _add(per_tid, per_stack, thread.tid, stack, when - since)
            else:
                state, frames = thread.outs[k]
                how = thread.how_out[k]
                if how.startswith("sched_switch"):
                    events.append((when, 1, _switch(thread.tid, "t", state, 0, frames, when)))
                    stack = ";".join([f"t-{thread.tid}", *frames[::-1], f"[{state.rstrip('+')}]"])
                else:
                    stack = f"t-{thread.tid};[no sched_switch record];[{'R' if 'preempt' in how else '?'}]"
                if "SWITCH OUT" in how:
                    record = how.replace("sched_switch + ", "")
                    events.append((when, 2, f"t {thread.tid} {timestamp(when)}: PERF_RECORD_{record}\n"))
                since = when
            off = not off
        if off:
            _add(per_tid, per_stack, thread.tid, stack, end - since)
    events.sort(key=lambda event: (event[0], event[1]))
    return "".join(text for _, _, text in events).encode(), per_tid, per_stack


def _switch(prev: int, comm: str, state: str, nxt: int, frames: list[str], when: int) -> str:
    head = (
        f"{comm} {prev} {timestamp(when)}: sched:sched_switch: "
        f"prev_comm={comm} prev_pid={prev} prev_prio=120 "
        f"prev_state={state} ==> next_comm=t next_pid={nxt} next_prio=120\n"
    )
    return head + "".join(f"\t{i:x} {name} ([kernel.kallsyms])\n" for i, name in enumerate(frames)) + "\n"


def _add(per_tid: dict[int, int], per_stack: dict[str, int], tid: int, stack: str, us: int) -> None:
    per_tid[tid] = per_tid.get(tid, 0) + us
    if us:
        per_stack[stack] = per_stack.get(stack, 0) + us


@settings(max_examples=300, deadline=None)
@given(schedules())
def test_random_schedules_fold_back_exactly(schedule: tuple[list[Thread], int, int]) -> None:
    threads, start, end = schedule
    text, per_tid, per_stack = render(threads, start, end)
    diagnostics = Diagnostics(echo=False)
    collapser = SchedCollapser(OffCpuOptions(), diagnostics)
    folder = OffCpuFolder(OffCpuOptions())
    for wait in collapser.iter_waits(text.splitlines(keepends=True), "random"):
        folder.add(wait)
    assert diagnostics.skipped == 0, diagnostics.problems
    profile = folder.profile(folder.totals(collapser.window_ns))
    assert profile.counts == per_stack
    for tid, expected in per_tid.items():
        got = sum(w for s, w in profile.counts.items() if s.startswith(f"t-{tid};"))
        assert got == expected
        assert got <= end - start  # never counted twice
    assert collapser.window_ns == (end - start) * 1000


LINES = st.sampled_from(
    [
        b"app 10 1.000000: sched:sched_switch: prev_comm=app prev_pid=10 prev_prio=120 prev_state=S "
        b"==> next_comm=b next_pid=11 next_prio=120\n",
        b"b 11 1.000100: PERF_RECORD_SWITCH IN\n",
        b"app 10 0.000000: PERF_RECORD_COMM: app:10/10\n",
        b"app 10 1.5: PERF_RECORD_FORK(10:12):(10:10)\n",
        b"app 12 1.6: PERF_RECORD_EXIT(10:12):(10:10)\n",
        b"\tffffffff821f8298 __schedule+0x618 ([kernel.kallsyms])\n",
        b"\t    7f00 [unknown] (/lib/x.so)\n",
        b"\n",
        b"   \n",
        b"x 1 2.0: PERF_RECORD_LOST lost 3\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, st.binary(max_size=80)), max_size=40))
def test_arbitrary_text_never_raises(lines: list[bytes]) -> None:
    text = b"".join(lines)
    diagnostics = Diagnostics(echo=False)
    options = OffCpuOptions(states=frozenset({"S", "R"}), min_us=1)
    collapser = SchedCollapser(options, diagnostics)
    folder = OffCpuFolder(options)
    for wait in collapser.iter_waits(text.splitlines(keepends=True), "garbage"):
        assert wait.ns >= 0
        folder.add(wait)
    profile = folder.profile(folder.totals(collapser.window_ns, collapser.lost))
    assert all(weight >= 0 for weight in profile.counts.values())
