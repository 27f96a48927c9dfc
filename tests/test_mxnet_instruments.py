"""The tool's own instruments are marked, never passed off as the program's work (issue 19, "MXNet
operators": the off-CPU graph's widest tower was MXNet's dump thread; oneDNN's verbose printf sat
under `[op] FullyConnected`). Stacks below are those of real `record --mxnet` / `make offcpu` runs."""

from __future__ import annotations

import re

from flamegraph.color import resolve_highlights
from flamegraph.folding.perf_sched import OffCpuOptions, SchedCollapser
from flamegraph.folding.sched_totals import OffCpuFolder
from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading
from flamegraph.frameworks.mxnet.hook import instrument_threads, parse_evidence
from flamegraph.frameworks.mxnet.instruments import (
    PROFILER,
    PROFILER_THREAD,
    TRACE_DRAIN,
    VERBOSE,
    WATCH,
    instrumentation_shares,
    mark,
)
from flamegraph.frameworks.mxnet.join import Joiner
from flamegraph.frameworks.mxnet.profile import ProfilerTrace, Span, SpanIndex
from flamegraph.frameworks.mxnet.threads import recorded_threads
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.model import FoldedProfile

ZERO = Alignment(ClockReading(0.0, 0.0, 0.0))  # realtime == monotonic
MAIN, ENGINE, DUMPER, WATCHER = 100, 101, 102, 103
P_ENGINE = 9001


def leaf_first(stack: str) -> list[bytes]:
    return [f.encode() for f in reversed(stack.split(";"))]


def root_first(frames: list[bytes]) -> str:
    return ";".join(f.decode() for f in reversed(frames))


VERBOSE_PRINT = (
    "start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;mxnet::MKLDNNStream::Submit;"
    "libmxnet.so+0x62333d0;libmxnet.so+0x6232d90;printf;buffered_vfprintf;__vfprintf_internal;"
    "_IO_new_file_xsputn;new_do_write;__GI___libc_write;entry_SYSCALL_64_after_hwframe;ksys_write;ext4_file_write_iter"
)
OPERATOR_TIMED = (
    "start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;mxnet::engine::ThreadedEngine::OnCompleteStatic;"
    "mxnet::profiler::ProfileOperator::stop;mxnet::profiler::ProfileStat::EmitSubEvent;malloc"
)


def test_onednn_verbose_print_is_marked_where_the_print_begins() -> None:
    assert root_first(mark(leaf_first(VERBOSE_PRINT))) == (
        "start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;mxnet::MKLDNNStream::Submit;"
        "libmxnet.so+0x62333d0;libmxnet.so+0x6232d90;[instrumentation] oneDNN verbose log;printf;buffered_vfprintf;"
        "__vfprintf_internal;_IO_new_file_xsputn;new_do_write;__GI___libc_write;entry_SYSCALL_64_after_hwframe;"
        "ksys_write;ext4_file_write_iter"
    )


def test_profiler_work_is_marked_above_the_outermost_profiler_frame() -> None:
    assert root_first(mark(leaf_first(OPERATOR_TIMED))) == (
        "start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;mxnet::engine::ThreadedEngine::OnCompleteStatic;"
        "[instrumentation] MXNet profiler;mxnet::profiler::ProfileOperator::stop;"
        "mxnet::profiler::ProfileStat::EmitSubEvent;malloc"
    )


def test_the_programs_own_prints_and_work_are_left_alone() -> None:
    for stack in (
        "_start;Py_RunMain;_PyEval_EvalFrameDefault;_ctypes.cpython-311-x86_64-linux-gnu.so+0x14b80;__sprintf_chk",
        "_start;main;printf;__vfprintf_internal",  # the program's own printf: not called from libmxnet
        "start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;mxnet::op::FullyConnectedCompute;gemm",
    ):
        frames = leaf_first(stack)
        assert mark(frames) == frames


def test_joiner_marks_instrument_threads_at_their_root_and_verbose_prints_under_the_operator() -> None:
    trace = ProfilerTrace({P_ENGINE: SpanIndex([Span(1000, 2000, "FullyConnected")])})
    join = Joiner(trace, None, ZERO, recorded_threads(trace.threads, {P_ENGINE: [ENGINE]}))
    join.instrument_threads = instrument_threads({"threads": {"watch": WATCHER}}, {DUMPER, MAIN}, {MAIN, WATCHER})

    def head(tid: int) -> bytes:
        return f"python {MAIN}/{tid} [000] 0.001500: cpu-clock:".encode()

    sleeping = leaf_first("clone3;start_thread;libmxnet.so+0x61b7a10;std::this_thread::__sleep_for;__nanosleep")
    assert root_first(join(head(DUMPER), sleeping)) == (
        "[instrumentation] MXNet profiler thread;clone3;start_thread;libmxnet.so+0x61b7a10;"
        "std::this_thread::__sleep_for;__nanosleep"
    )
    waiting = leaf_first("clone3;start_thread;_PyEval_EvalFrameDefault;PyThread_acquire_lock_timed")
    assert root_first(join(head(WATCHER), waiting)) == (
        "[instrumentation] flamegraph thread map;clone3;start_thread;_PyEval_EvalFrameDefault;"
        "PyThread_acquire_lock_timed"
    )
    assert root_first(join(head(ENGINE), leaf_first(VERBOSE_PRINT))) == (
        "start_thread;mxnet::engine::ThreadedEngine::ExecuteOprBlock;[op] FullyConnected;mxnet::MKLDNNStream::Submit;"
        "libmxnet.so+0x62333d0;libmxnet.so+0x6232d90;[instrumentation] oneDNN verbose log;printf;buffered_vfprintf;"
        "__vfprintf_internal;_IO_new_file_xsputn;new_do_write;__GI___libc_write;entry_SYSCALL_64_after_hwframe;"
        "ksys_write;ext4_file_write_iter"
    )
    # The main thread's final dump (through the C API) is the profiler's, marked by its frames.
    dump = leaf_first("_start;Py_RunMain;MXDumpProfile;mxnet::profiler::Profiler::DumpProfile;write")
    assert root_first(join(head(MAIN), dump)) == (
        "_start;Py_RunMain;MXDumpProfile;[instrumentation] MXNet profiler;mxnet::profiler::Profiler::DumpProfile;write"
    )
    assert join.counts.engine == 1  # the instruments' threads are no engine threads


def test_the_dump_thread_is_the_one_outside_python_that_runs_dumpprofile() -> None:
    text = (
        f"{DUMPER}  5740.100000: \n\t 61b9000 mxnet::profiler::Profiler::DumpProfile\n\t d4600 start_thread\n\n"
        f"{MAIN}  5741.000000: \n\t 61b9000 mxnet::profiler::Profiler::DumpProfile\n\t 1000 MXDumpProfile\n\n"
        f"{ENGINE}  5741.100000: \n\t 13a364b mxnet::engine::ThreadedEngine::ExecuteOprBlock\n\n"
    )
    evidence = parse_evidence(text.encode().splitlines(keepends=True), ZERO)
    assert evidence.dumpers == {DUMPER, MAIN}
    threads = instrument_threads({"threads": {"map": {}}}, evidence.dumpers, {MAIN})
    assert threads == {DUMPER: b"[instrumentation] MXNet profiler thread"}  # no watcher TID in this sidecar


def test_offcpu_waits_of_the_dump_thread_sit_under_its_instrumentation_root() -> None:
    trace = ProfilerTrace({P_ENGINE: SpanIndex([Span(1e8, 1e8 + 10, "FullyConnected")])})
    join = Joiner(trace, None, ZERO, recorded_threads(trace.threads, {P_ENGINE: [ENGINE]}))
    join.instrument_threads = {DUMPER: b"[instrumentation] MXNet profiler thread"}
    sleep = ["\tffffffff821ffb7e do_nanosleep+0x5e ([kernel.kallsyms])", "\t cf503 __nanosleep+0x23 (libc.so.6)"]
    text = (
        f"python {DUMPER:5d} 100.000000: PERF_RECORD_SWITCH IN\n"
        f"python {DUMPER:5d} 100.001000: sched:sched_switch: prev_comm=python prev_pid={DUMPER} prev_prio=120 "
        "prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n" + "\n".join(sleep) + "\n\n"
        f"python {DUMPER:5d} 101.001000: PERF_RECORD_SWITCH IN\n"
    )
    options = OffCpuOptions(sample_hook=join)
    collapser = SchedCollapser(options, Diagnostics(echo=False))
    folder = OffCpuFolder(options)
    for wait in collapser.iter_waits(text.encode().splitlines(keepends=True), "t.txt"):
        folder.add(wait)
    profile = folder.profile(folder.totals(collapser.window_ns, collapser.lost))
    assert profile.counts == {
        f"python-{DUMPER};[instrumentation] MXNet profiler thread;__nanosleep;do_nanosleep;[S]": 1_000_000
    }


def test_shares_read_back_from_any_folded_profile() -> None:
    profile = FoldedProfile()
    profile.add("python;start_thread;ExecuteOprBlock;[op] FullyConnected;gemm", 950)
    profile.add("python;start_thread;OnCompleteStatic;[instrumentation] MXNet profiler;ProfileOperator::stop", 27)
    profile.add("python;Submit;libmxnet.so+0x1;[instrumentation] oneDNN verbose log;printf", 12)
    profile.add("python-7;[instrumentation] MXNet profiler thread;clone3;DumpProfile", 11)
    shares = instrumentation_shares(profile.counts)
    assert shares.text("samples") == (
        "5.0 % of samples (MXNet profiler 2.7 %, oneDNN verbose log 1.2 %, MXNet profiler thread 1.1 %)"
    )
    assert instrumentation_shares({"a;b": 5}).text("off-CPU time") == "0.0 % of off-CPU time"


def test_the_mxnet_ops_preset_shows_the_instruments_as_a_class_of_their_own() -> None:
    rules = resolve_highlights([], "mxnet-ops", "hot")
    for frame in (PROFILER, PROFILER_THREAD, VERBOSE, WATCH):
        assert [r.label for r in rules if re.search(r.pattern, frame)] == ["the tool's own instruments"]


def test_the_verbose_logs_drainer_is_marked_as_the_verbose_log() -> None:
    drainer = 7777
    threads = instrument_threads({"threads": {"map": {}}, "verbose_drain": drainer}, set(), {MAIN})
    assert threads == {drainer: b"[instrumentation] oneDNN verbose log"}
    assert instrument_threads({"verbose_drain": None}, set(), {MAIN}) == {}  # an older sidecar, or no drainer


def test_the_traces_drainer_is_marked_as_its_own_instrument() -> None:
    """The process that empties MXNet's trace pipe into its file (drain.py) is ours: every stack of it is marked,
    apart from the verbose log's drainer and from MXNet's dump thread."""
    threads = instrument_threads({"verbose_drain": 7777, "trace_drain": 7778}, set(), {MAIN})
    assert threads == {7777: b"[instrumentation] oneDNN verbose log", 7778: TRACE_DRAIN.encode()}
    assert instrument_threads({"trace_drain": None}, set(), {MAIN}) == {}  # an older sidecar, or a file by name
    rules = resolve_highlights([], "mxnet-ops", "hot")
    assert [r.label for r in rules if re.search(r.pattern, TRACE_DRAIN)] == ["the tool's own instruments"]


def test_the_dump_timer_the_hook_saw_start_is_marked_though_never_seen_dumping() -> None:
    """A short run on a fast machine: the timer never switched inside DumpProfile, so no evidence names it; the
    hook wrote the one thread `set_config` started (its TID), and that is the dump thread."""
    marked = instrument_threads({"dump_thread": DUMPER, "threads": {}}, set(), {MAIN})
    assert marked == {DUMPER: b"[instrumentation] MXNet profiler thread"}
    assert instrument_threads({"dump_thread": MAIN}, set(), {MAIN}) == {}  # a Python thread is never the timer
    assert instrument_threads({"dump_thread": True}, set(), set()) == {}  # not a TID


def test_the_one_thread_a_call_starts_is_found_and_never_guessed() -> None:
    """How the hook finds MXNet's dump timer: the one thread `set_config` starts; none or two: no TID."""
    import threading

    from flamegraph.frameworks.mxnet.inprocess import thread_started_by

    stop = threading.Event()
    tids: list[int] = []

    def start(count: int) -> None:
        ready = threading.Barrier(count + 1)

        def run() -> None:
            tids.append(threading.get_native_id())
            ready.wait(5)
            stop.wait(10)

        for _ in range(count):
            threading.Thread(target=run, daemon=True).start()
        ready.wait(5)

    try:
        assert thread_started_by(lambda: start(1)) == tids[0]
        assert thread_started_by(lambda: start(2)) is None
        assert thread_started_by(lambda: None) is None
    finally:
        stop.set()
