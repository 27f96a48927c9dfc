"""The MXNet join on a recorded fixture: a 40 ms slice of a real `record --jit --mxnet` run of the MLP
(tests/golden/mxnet: perf script text of the fold and of the first pass, the profiler's trace, oneDNN's
verbose log and the sidecar; made by `python -m collectors.make_mxnet_fixture`)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import GOLDEN, check_golden

from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.stage import fold_perf
from flamegraph.frameworks.mxnet.hook import load_process, parse_evidence, read_sidecars
from flamegraph.frameworks.mxnet.join import COMPLETE, EXECUTE, SUBMITS, Joiner
from flamegraph.frameworks.mxnet.summary import summarize, summary_lines
from flamegraph.frameworks.mxnet.switches import off_cpu_intervals
from flamegraph.frameworks.mxnet.threads import learn_thread_map
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import write_folded
from flamegraph.model import FoldedProfile

FIXTURE = GOLDEN / "mxnet"
PERIOD_US = 1e6 / 1999  # the fixture's sampling frequency (perf_freq in its sidecar)


def joiner() -> Joiner:
    (facts,) = read_sidecars(FIXTURE)
    inputs = load_process(facts, FIXTURE)
    assert inputs.alignment is not None and not inputs.problems, inputs.problems
    with open(FIXTURE / "evidence.txt", "rb") as f:
        evidence = parse_evidence(f, inputs.alignment)
    join = Joiner(
        inputs.trace, inputs.verbose, inputs.alignment, learn_thread_map(inputs.trace.threads, evidence.engine_times)
    )
    join.off_cpu = off_cpu_intervals(evidence.switches, evidence.last)
    join.period_us = PERIOD_US
    return join


def fold(join: Joiner, fast: bool = True) -> FoldedProfile:
    options = FoldOptions.with_all(sample_hook=join)
    if fast:
        return fold_perf([str(FIXTURE / "script.txt")], options, Diagnostics(echo=False)).profile
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    with open(FIXTURE / "script.txt", "rb") as f:
        collapser.feed(f, "script.txt")
    return collapser.profile()


def test_golden_join() -> None:
    """The folded stacks with [op]/[dnnl] frames, and the report (coverage, clock, threads, tables)."""
    join = joiner()
    profile = fold(join)
    out = io.BytesIO()
    write_folded(profile, out)
    for line in summary_lines(summarize(join)):
        out.write(f"# {line}\n".encode())
    check_golden(out.getvalue(), FIXTURE / "expected.folded")


def test_both_fold_paths_join_alike() -> None:
    """The fast path (whole records) and the line state machine call the hook the same way."""
    assert fold(joiner(), fast=True).counts == fold(joiner(), fast=False).counts


def frames_of(profile: FoldedProfile) -> list[tuple[list[str], float]]:
    return [(stack.split(";"), weight) for stack, weight in profile.counts.items()]


def test_frames_sit_where_they_must() -> None:
    """[op] right above ExecuteOprBlock, [dnnl] right above MKLDNNStream::Submit, JIT kernels under a
    [dnnl] frame; operator names come from the trace; nothing inserted into the main thread's stacks."""
    join = joiner()
    profile = fold(join)
    names = {span.name for index in join.trace.threads.values() for span in index.spans}
    submits = {s.decode() for s in SUBMITS}
    seen_op = seen_dnnl = 0
    for frames, _ in frames_of(profile):
        executes = [i for i, frame in enumerate(frames) if frame == EXECUTE.decode()]
        if executes:  # the innermost: the engine may run an operator inside another's completion
            assert frames[executes[-1] + 1].startswith("[op] "), frames
            op = frames[executes[-1] + 1].removeprefix("[op] ")
            assert op in names or op in ("(none)", "(no profiler thread)"), op
            seen_op += op in names
        for i, frame in enumerate(frames):
            if frame in submits:
                assert frames[i + 1].startswith("[dnnl] "), frames
                seen_dnnl += frames[i + 1] != "[dnnl] (none)"
            if frame.startswith("[dnnl] ") and frame != "[dnnl] (none)":
                assert frame.endswith(")") and " (x64:" in frame or "(jit:" in frame or "(simple:" in frame, frame
        if frames[-1].endswith("_[j]"):
            assert any(f.startswith("[dnnl] ") for f in frames), frames
        if "Py_RunMain" in frames:
            assert not any(f.startswith(("[op] ", "[dnnl] ")) for f in frames), frames
    assert seen_op >= 5 and seen_dnnl >= 3


def test_the_fixture_covers_the_goals() -> None:
    """The figures the issue asks for, on the fixture: ≥ 95 % of engine-thread samples and ≥ 90 % of
    JIT-kernel samples named, the thread map certain, the clocks aligned to well under a period."""
    join = joiner()
    fold(join)
    summary = summarize(join)
    assert summary.engine_samples >= 8
    assert summary.op_coverage >= 95.0
    assert summary.jit_samples >= 3 and summary.jit_coverage >= 90.0
    assert join.threads.confidence >= 0.5
    assert summary.alignment is not None and summary.alignment.residual * 1e6 < PERIOD_US / 10
    assert not summary.problems, summary.problems


def test_completion_callback_names_the_operator_that_ended() -> None:
    """A sample in OnCompleteStatic after its span ended is that operator's, not (none)."""
    join = joiner()
    (tid,) = join.by_tid
    index = join.by_tid[tid]
    span = index.spans[len(index.spans) // 2]
    gap_end = index.spans[len(index.spans) // 2 + 1].start
    t_mono = (span.end + (gap_end - span.end) / 2) / 1e6 - join.alignment.offset(span.end / 1e6)
    header = f"python 1/{tid} {t_mono:.6f}: cpu-clock:".encode()
    frames = [b"free", COMPLETE, b"lambda", EXECUTE, b"start_thread"]
    joined = join(header, frames)
    assert joined[joined.index(EXECUTE) - 1] == f"[op] {span.name}".encode()
    without = join(header, [b"free", EXECUTE, b"start_thread"])
    assert without[without.index(EXECUTE) - 1] == b"[op] (none)"


@pytest.mark.parametrize("name", ["script.txt", "evidence.txt"])
def test_fixture_is_small(name: str) -> None:
    assert (FIXTURE / name).stat().st_size < 200_000
    assert Path(FIXTURE / name).read_bytes().count(b"\n") > 100
