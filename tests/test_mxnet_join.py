"""The join's rules one by one, on hand-made spans, executions and stacks; the thread map; on-CPU time;
the operator views (group by op, the mxnet-ops preset, operator-by-operator comparison)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flamegraph.color import resolve_highlights
from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading
from flamegraph.frameworks.mxnet.dnnl import Primitive, VerboseLog
from flamegraph.frameworks.mxnet.hook import recorded_map
from flamegraph.frameworks.mxnet.join import COMPLETE, EXECUTE, NAIVE_EXECUTE, SUBMITS, Joiner, op_frame
from flamegraph.frameworks.mxnet.profile import ProfilerTrace, Span, SpanIndex
from flamegraph.frameworks.mxnet.summary import is_unnamed, summarize
from flamegraph.frameworks.mxnet.switches import OffCpu, off_cpu_intervals
from flamegraph.frameworks.mxnet.threads import learn_thread_map, recorded_threads
from flamegraph.frameworks.mxnet.views import compare_operators, group_by_op, operator_samples
from flamegraph.io.diagnostics import NoSamples
from flamegraph.model import FoldedProfile

SUBMIT = SUBMITS[0]
ENGINE, MAIN, OTHER = 101, 100, 102  # Linux TIDs
P_ENGINE, P_OTHER = 9001, 9002  # profiler threads
ZERO = Alignment(ClockReading(0.0, 0.0, 0.0))  # realtime == monotonic: times below are µs


def header(tid: int, us: float) -> bytes:
    return f"python {MAIN}/{tid} [000] {us / 1e6:.6f}: cpu-clock:".encode()


def make_joiner(verbose: list[Primitive] | None = None, mapped: bool = True) -> Joiner:
    spans = [Span(1000, 2000, "FullyConnected"), Span(2100, 2200, "Activation"), Span(3000, 4000, "[A,B]")]
    trace = ProfilerTrace({P_ENGINE: SpanIndex(spans), P_OTHER: SpanIndex([Span(1500, 1600, "DeleteVariable")])})
    times = {ENGINE: [1100.0 + 50 * i for i in range(10)], MAIN: [1200.0, 5000.0, 6000.0, 7000.0, 8000.0]}
    threads = learn_thread_map(trace.threads, times if mapped else {})
    log = None
    if verbose is not None:
        log = VerboseLog(verbose)
        log.index()
    return Joiner(trace, log, ZERO, threads)


def stack(*frames: bytes) -> list[bytes]:
    return list(frames)  # leaf first


def test_op_frame_goes_right_above_execute() -> None:
    join = make_joiner()
    frames = stack(b"gemm", b"FullyConnectedComputeExCPU", b"lambda", EXECUTE, b"start_thread")
    assert join(header(ENGINE, 1500), frames) == [
        b"gemm", b"FullyConnectedComputeExCPU", b"lambda", b"[op] FullyConnected", EXECUTE, b"start_thread"
    ]  # fmt: skip


def test_an_operator_run_inside_another_ones_completion_gets_one_frame_at_the_inner_entry() -> None:
    join = make_joiner()
    nested = [b"gemm", b"lambda", EXECUTE, b"PushToExecute", COMPLETE, b"lambda", EXECUTE, b"start_thread"]
    assert join(header(ENGINE, 1500), nested) == [
        b"gemm", b"lambda", b"[op] FullyConnected", EXECUTE, b"PushToExecute", COMPLETE, b"lambda", EXECUTE,
        b"start_thread",
    ]  # fmt: skip


def test_engine_outside_spans_is_none_and_idle_is_untouched() -> None:
    join = make_joiner()
    assert join(header(ENGINE, 2050), [b"malloc", EXECUTE])[1] == b"[op] (none)"
    idle = [b"futex", b"ConcurrentBlockingQueue::Pop", b"start_thread"]
    assert join(header(ENGINE, 2050), idle) == idle


def test_completion_callback_after_the_span_names_that_operator() -> None:
    join = make_joiner()
    assert join(header(ENGINE, 2050), [b"SendStat", COMPLETE, b"lambda", EXECUTE])[3] == b"[op] FullyConnected"
    assert join.counts.completions == 1


def test_cut_stack_inside_a_span_gets_the_op_below_the_root() -> None:
    join = make_joiner()
    assert join(header(ENGINE, 2150), [b"relu_kernel", b"[unknown]"]) == [
        b"relu_kernel",
        b"[unknown]",
        b"[op] Activation",
    ]
    complete = [b"relu_kernel", b"somewhere_else", b"start_thread", b"clone3"]
    assert join(header(ENGINE, 2150), complete) == complete  # complete, yet not in ExecuteOprBlock: left alone


def test_segments_are_not_called_operators() -> None:
    assert make_joiner()(header(ENGINE, 3500), [b"x", EXECUTE])[1] == b"[segment] A,B"
    assert op_frame("[_backward_SoftmaxOutput,_backward_FullyConnected,_backward_") == (
        "[segment] _backward_SoftmaxOutput,_backward_FullyConnected,_backward_..."  # MXNet cut the name short
    )
    # The engine's bulk names no operator: a placeholder (not counted as named), never "[op] ImperativeBulk".
    assert op_frame("ImperativeBulk") == "[segment] (ImperativeBulk: operators not recorded by MXNet)"
    assert is_unnamed(op_frame("ImperativeBulk"))


def test_other_threads_are_untouched_and_unmapped_engine_threads_say_so() -> None:
    join = make_joiner()
    main = [b"_PyEval_EvalFrameDefault", b"Py_RunMain", b"_start"]
    assert join(header(MAIN, 1500), main) == main
    assert join(header(OTHER, 1500), [b"x", EXECUTE])[1] == b"[op] (no profiler thread)"


def test_primitive_frame_goes_right_above_submit() -> None:
    gemm = Primitive(1100, 1300, "inner_product", "x64:gemm:jit", "backward_weights", "mb64ic784oc128")
    join = make_joiner([gemm])
    frames = join(
        header(ENGINE, 1200), [b"jit_gemm_[j]", b"libmxnet.so+0x62333d0", SUBMIT, b"MKLDNNFCBackward", EXECUTE]
    )
    assert frames == [
        b"jit_gemm_[j]", b"libmxnet.so+0x62333d0", gemm.frame.encode(), SUBMIT, b"MKLDNNFCBackward",
        b"[op] FullyConnected", EXECUTE,
    ]  # fmt: skip
    assert join(header(ENGINE, 1400), [b"printf", SUBMIT, EXECUTE])[1] == b"[dnnl] (none)"


def test_jit_stack_cut_short_gets_the_primitive_below_its_jit_frames() -> None:
    gemm = Primitive(1100, 1300, "inner_product", "x64:gemm:jit", "forward_training", "mb64ic784oc128")
    join = make_joiner([gemm])
    assert join(header(ENGINE, 1200), [b"copy_kern_[j]", b"gemm_[j]"]) == [
        b"copy_kern_[j]", b"gemm_[j]", b"[dnnl] inner_product forward_training mb64ic784oc128 (x64:gemm:jit)",
        b"[op] FullyConnected",
    ]  # fmt: skip
    assert join.counts.jit == join.counts.jit_named == 1


def test_concurrent_primitives_are_ambiguous_unless_the_span_decides() -> None:
    a = Primitive(1100, 1300, "inner_product", "x64:gemm:jit", "forward_training", "mb64ic784oc128")
    b = Primitive(900, 1250, "eltwise", "jit:avx512_common", "forward_training", "64x128")  # began before the span
    join = make_joiner([a, b])
    assert join(header(ENGINE, 1200), [b"k_[j]", SUBMIT, EXECUTE])[1] == a.frame.encode()  # only a is inside the op
    assert join(header(OTHER, 1200), [b"k_[j]", SUBMIT])[1] == b"[dnnl] (ambiguous: 2 primitives at once)"


def test_summary_counts_coverage() -> None:
    join = make_joiner()
    for t in (1200, 1300, 2150, 2050):
        join(header(ENGINE, t), [b"x", EXECUTE])
    summary = summarize(join)
    assert summary.engine_samples == 4 and summary.op_named == 3 and summary.op_coverage == 75.0
    rows = {r.frame: r for r in summary.operators}
    assert rows["[op] FullyConnected"].samples == 2 and rows["[op] FullyConnected"].calls == 1
    assert rows["[op] (none)"].samples == 1


def test_thread_map_picks_the_thread_inside_the_spans() -> None:
    join = make_joiner()
    assert join.threads.by_tid == {ENGINE: P_ENGINE}
    (engine, other) = join.threads.matches
    assert engine.best is not None and engine.best.share == 1.0 and engine.lead == 1.0
    assert other.tid is None  # DeleteVariable's thread: no TID with enough samples inside


def test_thread_map_refuses_a_tie() -> None:
    spans = {P_ENGINE: SpanIndex([Span(0, 1000, "FC")])}
    both = {ENGINE: [100.0 * i for i in range(1, 9)], OTHER: [100.0 * i + 1 for i in range(1, 9)]}
    matches = learn_thread_map(spans, both)
    assert matches.by_tid == {} and "not mapped" in matches.matches[0].describe()


def test_recorded_map_is_used_as_recorded_and_says_what_it_does_not_cover() -> None:
    spans = {P_ENGINE: SpanIndex([Span(0, 1000, "FC")]), P_OTHER: SpanIndex([Span(0, 10, "X")]), 9003: SpanIndex([])}
    threads = recorded_threads(spans, {P_ENGINE: [ENGINE], 9003: [MAIN], 9999: [OTHER]})
    assert threads.by_tid == {ENGINE: P_ENGINE, MAIN: 9003}  # a thread of the process without spans is no matter
    text = threads.describe()
    assert text.startswith("2 profiler threads mapped exactly (recorded in the process): 9001 -> TID 101 (1 spans)")
    assert f"not in the recorded map (ended before the scan?), not mapped: {P_OTHER} (1 spans)" in text


def test_recorded_map_one_profiler_thread_several_tids_and_a_reused_tid() -> None:
    spans = {P_ENGINE: SpanIndex([Span(0, 1000, "FC")]), P_OTHER: SpanIndex([Span(2000, 3000, "FC")])}
    reused_memory = recorded_threads(spans, {P_ENGINE: [ENGINE, OTHER]})  # one pthread_t, two threads in turn
    assert reused_memory.by_tid == {ENGINE: P_ENGINE, OTHER: P_ENGINE}
    assert "9001 -> TID 101, 102 (1 spans)" in reused_memory.describe()
    reused_tid = recorded_threads(spans, {P_ENGINE: [ENGINE], P_OTHER: [ENGINE]})  # the kernel reused a TID
    assert reused_tid.by_tid == {}
    assert "TID 101 recorded for 2 profiler threads (9001, 9002): not mapped" in reused_tid.describe()


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        ({}, "the sidecar holds no thread map: written by an older hook"),
        ({"threads": None}, "the process did not reach its exit handler, where the thread map is recorded"),
        ({"threads": {"map": {}, "problem": "no glibc TCB at ..."}}, "could not record its thread map: no glibc"),
        ({"threads": {"map": {"x": [1]}}}, "the sidecar's thread map is unreadable"),
        ({"threads": {"map": []}}, "the sidecar's thread map is unreadable"),
        ({"threads": {"map": {}}}, "the process recorded an empty thread map"),
    ],
)
def test_no_recorded_map_says_why(facts: dict[str, object], why: str) -> None:
    recorded, text = recorded_map(facts)
    assert recorded is None and why in text
    learnt = learn_thread_map({}, {}, text)
    assert learnt.describe().startswith(f"learnt from the samples after the run ({text}): ")


def test_recorded_map_read_from_the_sidecar() -> None:
    facts = {"threads": {"map": {"14697135246327494939": [15022]}, "python": [15001], "problem": None}}
    assert recorded_map(facts) == ({14697135246327494939: [15022]}, "")


def test_a_python_thread_with_a_few_spans_is_no_engine_thread() -> None:
    """The main thread runs a few operators itself: its Python samples must not count as engine-thread
    samples (they did once it was mapped: 29.9 % of 2,774 instead of 98.2 % of 730 on the MLP)."""
    trace = ProfilerTrace(
        {P_ENGINE: SpanIndex([Span(1000, 2000, "FullyConnected")]), P_OTHER: SpanIndex([Span(10, 20, "_zeros")])}
    )
    join = Joiner(trace, None, ZERO, recorded_threads(trace.threads, {P_ENGINE: [ENGINE], P_OTHER: [MAIN]}))
    join.engine_tids = {ENGINE}
    python = [b"_PyEval_EvalFrameDefault", b"Py_RunMain", b"_start"]
    for t in range(100, 1000, 100):
        assert join(header(MAIN, t), python) == python
    assert join(header(MAIN, 15), [b"memset", EXECUTE, b"_start"])[1] == b"[op] _zeros"
    assert join(header(ENGINE, 1500), [b"gemm", EXECUTE, b"start_thread"])[1] == b"[op] FullyConnected"
    engine_loop = [b"ConcurrentBlockingQueue::Pop", b"start_thread"]
    assert join(header(ENGINE, 2500), engine_loop) == engine_loop
    summary = summarize(join)
    assert (summary.engine_samples, summary.op_named) == (3, 2)  # the engine's own loop counts, Python does not


def test_naive_engine_operators_sit_under_the_python_frames_that_pushed_them() -> None:
    """MXNET_ENGINE_TYPE=NaiveEngine runs each operator inside NaiveEngine::PushAsync on the Python thread:
    the [op] frame goes right above it, under the Python callers perf unwound (the MLP on 3.12: none
    before, as the thread is no engine thread and its stacks are complete)."""
    trace = ProfilerTrace({P_ENGINE: SpanIndex([Span(1000, 2000, "FullyConnected")])})
    join = Joiner(trace, None, ZERO, recorded_threads(trace.threads, {P_ENGINE: [MAIN]}))
    join.engine_tids = set()  # the main thread is a Python thread
    pushed = [b"gemm_[j]", SUBMIT, b"FullyConnectedComputeExCPU", b"_M_invoke", NAIVE_EXECUTE, b"NaiveEngine::Push",
              b"MXExecutorForward", b"Executor.forward (executor.py)", b"train_epoch (train_mlp.py)", b"_start"]
    assert join(header(MAIN, 1500), pushed) == [*pushed[:4], b"[op] FullyConnected", *pushed[4:]]
    assert join(header(MAIN, 2500), pushed)[4] == b"[op] (none)"  # in the push, before its span began
    python = [b"_PyEval_EvalFrameDefault", b"train_epoch (train_mlp.py)", b"_start"]
    assert join(header(MAIN, 1500), python) == python  # Python's own work during the span: not the operator's
    summary = summarize(join)
    assert (summary.engine_samples, summary.op_named) == (2, 1)


def test_off_cpu_intervals() -> None:
    off = off_cpu_intervals({7: [(10.0, True), (20.0, False), (30.0, True), (45.0, False), (50.0, True)]}, 60.0)[7]
    assert off.off_between(0, 100) == 10 + 15 + 10
    assert off.off_between(15, 35) == 5 + 5
    assert off.off_between(21, 29) == 0
    assert OffCpu([]).off_between(0, 10) == 0


FOLDED = FoldedProfile(
    counts={
        "python;start_thread;ExecuteOprBlock;[op] FullyConnected;MKLDNNRun;gemm": 6,
        "python;start_thread;ExecuteOprBlock;[op] _backward_FullyConnected;gemm": 3,
        "python;Py_RunMain;main": 1,
    }
)


def test_group_by_op_reroots_and_counts_what_it_leaves_out() -> None:
    grouped = group_by_op(FOLDED)
    assert grouped.counts == {"[op] FullyConnected;MKLDNNRun;gemm": 6, "[op] _backward_FullyConnected;gemm": 3}
    assert grouped.metadata["grouped by"].startswith("[op] frame: 9 of 10 samples (90.0 %)")
    with pytest.raises(NoSamples, match="no \\[op\\] frames"):
        group_by_op(FoldedProfile(counts={"a;b": 1}))


def test_operator_comparison() -> None:
    after = FoldedProfile(counts={"t;[op] FullyConnected;sgemm": 2, "t;[op] _backward_FullyConnected;sgemm": 6})
    assert operator_samples(FOLDED) == {"[op] FullyConnected": 6, "[op] _backward_FullyConnected": 3}
    rows = compare_operators(FOLDED, after)
    assert [(r.frame, round(r.change, 1)) for r in rows] == [
        ("[op] FullyConnected", -41.7), ("[op] _backward_FullyConnected", 41.7)
    ]  # fmt: skip


def test_mxnet_ops_preset() -> None:
    rules = resolve_highlights([], "mxnet-ops", "hot")
    import re

    def classes(name: str) -> list[str]:
        return [r.label or "" for r in rules if re.search(r.pattern, name)]

    assert classes("[op] FullyConnected") == ["MXNet operators"]
    assert classes("[segment] A,B") == ["MXNet operators"]
    assert classes("[dnnl] inner_product forward_training mb64ic784oc128 (x64:gemm:jit)") == ["oneDNN primitives"]
    assert classes("[op] (none)") == ["outside any operator / primitive"]
    assert classes("mxnet::op::FullyConnectedComputeExCPU") == []


def test_render_group_by_op_cli(tmp_path: Path) -> None:
    source = tmp_path / "in.folded"
    source.write_text("".join(f"{s} {n}\n" for s, n in FOLDED.counts.items()))
    out = tmp_path / "ops.svg"
    argv = [sys.executable, "-m", "flamegraph", "render", str(source), "--group-by", "op", "--preset", "mxnet-ops"]
    proc = subprocess.run([*argv, "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    svg = out.read_text()
    assert "[op] FullyConnected" in svg and "Py_RunMain" not in svg and "MXNet operators" in svg
    bad = subprocess.run([*argv[:-4], "--group-by", "thread"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() == "flamegraph: --group-by 'thread': the only grouping is op"
    source.write_text("a;b 1\n")
    none = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert none.returncode == 3
    assert (
        none.stderr.strip() == "flamegraph: no [op] frames in this profile: record it with `flamegraph record --mxnet`"
    )
