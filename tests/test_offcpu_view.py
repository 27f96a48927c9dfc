"""Off-CPU graphs that point at the wait that matters: idle threads summarised (--show-idle draws
them), the self table of the functions that blocked, thread roles on the roots, a per-thread table,
a header that never breaks inside a number, and [unknown] frames grouped as on-CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.dsos import QUADMATH, full_parse, need_quadmath
from helpers.svg import frames, parse, texts

from flamegraph.analysis.offcpu_threads import blocking_frame, thread_roles, thread_totals
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.perf_sched import OffCpuOptions, SchedCollapser
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.model import FoldedProfile
from flamegraph.naming.buildid import RecordedBuildIds
from flamegraph.naming.observer import FrameObserver
from flamegraph.naming.symbols import FunctionNamer
from flamegraph.render import RenderOptions, render_svg
from flamegraph.render.text import wrap

SEC = 1_000_000  # microseconds
KERNEL = "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_futex;futex_wait;schedule;__schedule"
# The MLP's threads as `make offcpu` records them (3.643 s window): five pool threads parked for all of it.
MLP = {
    f"python-3677;_start;__libc_start_main;Py_RunMain;MXNDArraySyncCopyToCPU;mxnet::engine::ThreadedEngine::WaitForVar;"
    f"std::condition_variable::wait;pthread_cond_wait@@GLIBC_2.3.2;{KERNEL};[S]": 2_510_000,
    "python-3677;_start;__libc_start_main;Py_RunMain;_PyEval_EvalFrameDefault;asm_sysvec_apic_timer_interrupt;"
    "schedule;[R]": 470_000,
    "python-3690;clone3;start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;mxnet::op::FullyConnected;"
    "asm_sysvec_apic_timer_interrupt;irqentry_exit_to_user_mode;schedule;[R]": 1_700_000,
    f"python-3690;clone3;start_thread;dmlc::ConcurrentBlockingQueue::Pop;std::condition_variable::wait;"
    f"{KERNEL};[S]": 900_000,
    **{
        f"python-{tid};clone3;start_thread;dmlc::ConcurrentBlockingQueue::Pop;std::condition_variable::wait;"
        f"pthread_cond_wait@@GLIBC_2.3.2;{KERNEL};[S]": 3_643_000
        for tid in (3691, 3692, 3693, 3694)
    },
    f"python-3681;clone3;start_thread;blas_thread_server;pthread_cond_wait@@GLIBC_2.3.2;{KERNEL};[S]": 3_642_900,
    f"python-3685;clone3;start_thread;dmlc::ThreadedIter<mxnet::DataBatch>::Init;std::condition_variable::wait;"
    f"{KERNEL};[S]": 3_600_000,
    f"python-3685;clone3;start_thread;dmlc::ThreadedIter<mxnet::DataBatch>::Next;{KERNEL};[S]": 30_000,
}
WINDOW = 3_643_000.0


def mlp(**changes: object) -> FoldedProfile:
    profile = FoldedProfile(dict(MLP), "microseconds", "sched:sched_switch", window_us=WINDOW)
    for key, value in changes.items():
        setattr(profile, key, value)
    return profile


def roots(svg: bytes) -> list[str]:
    return sorted(f.name for f in frames(svg) if f.depth == 1)


def test_idle_threads_are_one_line_and_show_idle_draws_them() -> None:
    svg = render_svg(mlp(), RenderOptions())
    # The prefetch thread's idle stack is left out, its other wait (ThreadedIter::Next, 30 ms) is drawn.
    assert roots(svg) == ["python-3677 (main)", "python-3685 (data prefetch, idle)", "python-3690 (engine worker)"]
    assert "dmlc::ThreadedIter<mxnet::DataBatch>::Next" in {f.name for f in frames(svg)}
    assert "dmlc::ThreadedIter<mxnet::DataBatch>::Init" not in {f.name for f in frames(svg)}
    summary = texts(svg, "summary")
    assert summary[0] == "off-CPU time (sched:sched_switch) · 5.610 s in 3 threads · window 3.643 s · 5 stacks"
    assert " ".join(summary[1:]) == (
        "Not drawn: the idle stack of 6 threads (4 engine worker, 1 OpenBLAS pool, 1 data prefetch; 21.815 s), "
        "each ≥ 98 % of the window (--show-idle draws them); their other waits are drawn (1 stack, 30.0 ms)"
    )
    every = render_svg(mlp(), RenderOptions(show_idle=True))
    assert len(roots(every)) == 8 and "python-3681 (OpenBLAS pool, idle)" in roots(every)
    assert len(texts(every, "summary")) == 1
    one = {"w-1;a;[S]": 980_000, "w-2;b;[S]": 400_000}  # nothing else of the idle thread: nothing said of it
    line = texts(render_svg(FoldedProfile(one, "microseconds", window_us=1_000_000), RenderOptions()), "summary")[1]
    assert line == "Not drawn: the idle stack of 1 thread (1 other; 980.0 ms), ≥ 98 % of the window " + (
        "(--show-idle draws it)"
    )


def test_an_idle_thread_keeps_its_other_waits() -> None:
    """newcomer10 a-F5: a main thread that wrote to disk, then joined its workers for 98 % of the window, is
    idle; only the join is left out, its disk waits ([D], the run's only ones) are drawn and said to be."""
    start = "waiter-5;_start;__libc_start_main;main"
    join = f"{start};__pthread_clockjoin_ex;{KERNEL};[S]"
    fsync = f"{start};do_fsync;fsync;entry_SYSCALL_64;ext4_sync_file;io_schedule;[D]"
    counts = {
        join: 490_000, fsync: 4_100, f"{start};do_fsync;__libc_open;entry_SYSCALL_64;do_truncate;io_schedule;[D]": 900,
        "waiter-8;clone3;start_thread;sleeper;do_sleep;__nanosleep;hrtimer_nanosleep;[S]": 500_000,
        "waiter-8;[new thread];[R]": 800,
        "waiter-6;clone3;start_thread;locker;hold_lock;pthread_mutex_lock;futex_wait;[S]": 120_000,
    }  # fmt: skip
    svg = render_svg(FoldedProfile(counts, "microseconds", window_us=510_000), RenderOptions())
    drawn = {f.name for f in frames(svg)}
    assert {"[D]", "ext4_sync_file", "do_truncate", "[new thread]", "locker"} <= drawn
    assert not {"__pthread_clockjoin_ex", "hrtimer_nanosleep"} & drawn
    assert texts(svg, "summary")[1:] == [
        "Not drawn: the idle stack of 2 threads (1 main, 1 other; 990.0 ms), each ≥ 96 % of the window "
        "(--show-idle draws them); their other waits are drawn (3 stacks, 5.8 ms)"
    ]
    assert "__pthread_clockjoin_ex" in {f.name for f in frames(render_svg(
        FoldedProfile(counts, "microseconds", window_us=510_000), RenderOptions(show_idle=True)))}  # fmt: skip
    # Without the window (a folded file without its facts) nothing can be called idle: all is drawn.
    assert len(roots(render_svg(mlp(window_us=None), RenderOptions()))) == 8


def test_a_thread_that_varies_is_never_idle() -> None:
    totals = {t.thread: t for t in thread_totals(MLP, WINDOW)}
    assert totals["python-3685"].idle  # 99.6 % of the window, 99.2 % of it in one stack
    assert not totals["python-3677"].idle and not totals["python-3690"].idle
    half = {"w-1;a;[S]": 1_800_000, "w-1;b;[S]": 1_800_000}  # the whole window, but in two waits that vary
    assert not thread_totals(half, 3_600_000)[0].idle
    everyone = {"w-1;a;[S]": 1_000_000, "w-2;a;[S]": 1_000_000}  # all idle: nothing would be left: draw them
    assert roots(render_svg(FoldedProfile(everyone, "microseconds", window_us=1_000_000), RenderOptions())) == [
        "w-1 (idle)", "w-2 (idle)"
    ]  # fmt: skip


def test_the_self_table_lists_the_functions_that_blocked() -> None:
    table = texts(render_svg(mlp(), RenderOptions()), "top")
    assert table[0].startswith("Top 5 functions that blocked")
    names = table[3::3]
    assert names == [
        "mxnet::engine::ThreadedEngine::WaitForVar [S]",  # not pthread_cond_wait, not [S]
        "mxnet::op::FullyConnected [R]",  # preempted in it
        "dmlc::ConcurrentBlockingQueue::Pop [S]",
        "_PyEval_EvalFrameDefault [R]",
        "dmlc::ThreadedIter<mxnet::DataBatch>::Next [S]",  # an idle thread's other wait
    ]
    assert table[1:3] == ["44.74%", "2.510 s"]  # of what is drawn, as a duration


@pytest.mark.parametrize(
    ("stack", "blocked"),
    [
        ("t-1;main;read;[S]", "main"),  # no kernel frames (offcpu --no-kernel): who called read
        ("t-1;main;load_file;[S]", "load_file"),  # the frame under the state
        ("t-1;main;poll_loop;__poll;entry_SYSCALL_64;do_sys_poll;schedule;[S]", "poll_loop"),
        ("t-1;main;work_[k];schedule_[k];[R]", "main"),  # annotated kernel frames
        ("t-1;kthread_[k];schedule_[k];[S]", "kthread_[k]"),  # a kernel thread: nothing above the kernel
        ("t-1;[S]", "t-1"),
    ],
)
def test_blocking_frame(stack: str, blocked: str) -> None:
    assert blocking_frame(stack.split(";")) == blocked


def test_roles_from_the_frames_of_each_thread() -> None:
    assert thread_roles(MLP) == {
        "python-3677": "main", "python-3690": "engine worker", "python-3691": "engine worker",
        "python-3692": "engine worker", "python-3693": "engine worker", "python-3694": "engine worker",
        "python-3681": "OpenBLAS pool", "python-3685": "data prefetch",
    }  # fmt: skip
    assert thread_roles({"app-1;clone3;start_thread;worker;[S]": 1}) == {}  # says nothing: no role invented


def test_per_thread_totals_are_a_table_and_numbers_never_wrap() -> None:
    svg = render_svg(mlp(metadata={"by thread": "python-3691 3.643 s, ..., 1 more 1.762 s"}), RenderOptions())
    facts = texts(svg, "facts")
    assert "by thread: python-3691 3.643 s, ..., 1 more 1.762 s" not in facts  # the table says it better
    start = facts.index("Off-CPU time per thread of the 3.643 s window")
    assert facts[start + 1 : start + 6] == ["off-CPU", "of window", "stacks", "thread", "role"]
    rows = facts[start + 6 :]
    assert ["3.643 s", "100.00 %", "1", "python-3691", "engine worker", "idle, not drawn"] == rows[:6]
    assert rows[rows.index("python-3685") - 3 :][:6] == ["3.630 s", "99.64 %", "2", "python-3685", "data prefetch",
                                                          "idle stack not drawn"]  # fmt: skip
    assert "python-3690" in rows and "python-3677" in rows  # the busy ones are named, never "1 more"
    line = "by thread: python-25702 2.940 s, python-25709 1.720 s, python-25711 1.762 s, 3 more 12.0 ms"
    for width in range(120, 600, 7):
        for piece in wrap(line, width, 11):
            assert not piece.startswith((".", "s,", "ms")) and not piece.endswith((" 1", " 2")), (width, piece)
        assert " ".join(wrap(line, width, 11)) == line


def test_off_cpu_folding_groups_unknown_frames_as_on_cpu() -> None:
    need_quadmath()
    (address, _), _ = full_parse(QUADMATH)[10:12]
    lib = str(QUADMATH).encode()
    frame = b"\t%x [unknown] (%s)\n\t4011 main (/usr/bin/python3)\n" % (address, lib)
    switch = (
        b"python 100 1.000001: sched:sched_switch: prev_comm=python prev_pid=100 prev_prio=120 prev_state=S "
        b"==> next_comm=swapper next_pid=0 next_prio=120\n" + frame + b"\n"
        b"python 100 1.000101: PERF_RECORD_SWITCH IN\n\n"
    )
    sample = b"python 100 1.000001: 1 cpu-clock:\n" + frame + b"\n"

    def observer() -> FrameObserver:
        recorded = RecordedBuildIds({lib: frozenset({"549b4c82347785459571c79239872ad31509dcf4"})})
        return FrameObserver(FunctionNamer(recorded))

    collapser = SchedCollapser(OffCpuOptions(frame_hook=observer()), Diagnostics(echo=False))
    waits = list(collapser.iter_waits(switch.splitlines(keepends=True), "test"))
    on_cpu = PerfCollapser(FoldOptions(frame_hook=observer()), Diagnostics(echo=False))
    on_cpu.feed(sample.splitlines(keepends=True), "test")
    name = f"{QUADMATH.name}+{address:#x}"
    assert [w.stack.decode() for w in waits] == [f"python-100;main;{name};[S]"]
    assert list(on_cpu.profile().counts) == [f"python;main;{name}"]  # the same name on both graphs


def test_render_draws_a_folded_off_cpu_file_with_its_facts(tmp_path: Path) -> None:
    """`fold --offcpu -o` writes the window beside the folded file; `render` finds the idle threads with it."""
    text = (REPO / "tests" / "golden" / "offcpu" / "attach-new-thread.perf.txt").read_bytes()
    (tmp_path / "perf.txt").write_bytes(text)
    folded = tmp_path / "waits.folded"
    run = [sys.executable, "-m", "flamegraph"]
    done = subprocess.run([*run, "fold", "--offcpu", "perf.txt", "-o", str(folded)], cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert b'"window_us"' in folded.with_name("waits.folded.json").read_bytes()
    drawn = subprocess.run([*run, "render", str(folded)], capture_output=True)
    assert drawn.returncode == 0, drawn.stderr
    assert parse(drawn.stdout).findtext("{http://www.w3.org/2000/svg}title") == "Off-CPU Time Flame Graph"
    assert texts(drawn.stdout, "summary")[0].startswith("off-CPU time (sched:sched_switch)")


def test_a_root_named_like_the_waker_separator_is_a_thread_not_a_wait() -> None:
    """A folded line may name its first frame `--` (the fuzzer's `-- 1`): that is the thread, never the
    separator, so the off-CPU page draws it instead of failing with an IndexError."""
    counts = {"--": 1.0, "--;--;a": 2.0, "--;x;--;y": 3.0, "python-7;wait [S];--;python-8;send": 4.0}
    assert thread_roles(counts) == {}
    assert {total.thread: total.total for total in thread_totals(counts)} == {"--": 6.0, "python-7": 4.0}
    drawn = {frame.name for frame in frames(render_svg(FoldedProfile(counts, "microseconds"), RenderOptions()))}
    assert {"--", "x", "y", "python-8", "send"} <= drawn
