"""The pipeline folding while perf records (`record --max-spool SIZE` / `--every SECONDS`, `offcpu
--max-spool`), the raw data on disk bounded.

perf writes rotating chunks into a private scratch directory (flamegraph.record.spool); a thread folds
each and deletes it (flamegraph.record.stream). With --every, each interval is written as it ends,
beside the output: STEM-001.svg and STEM-001.folded (its facts, with its window, in STEM-001.folded.json),
and at the end the whole run (-o) and the trend page (STEM-trend.svg). Ctrl-C leaves every finished
interval, and the whole run so far is still drawn.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..folding.offcpu import OffCpuFold
    from ..folding.perf_sched import OffCpuOptions
    from ..frameworks.jit.hook import JitHook
    from ..frameworks.mxnet.deferred import DeferredJoin
    from ..model import FoldedProfile
    from ..naming.observer import FrameObserver
    from ..naming.symbols import FunctionNamer
    from ..record import Recording, RecordSpec, Status
    from ..record.proc import Resolver
    from ..record.spool import Spool
    from ..record.stream import Interval, StreamedFold
    from ..window import Window
    from .oncpu import OnCpuRequest, OnCpuResult
    from .outputs import Outputs, Written

def interval_path(base: Path, number: int, suffix: str) -> Path:
    """STEM-001.svg beside `base` (the SVG, or --folded with --no-svg)."""
    return base.with_name(f"{base.stem}-{number:03d}{suffix}")


def trend_path(base: Path) -> Path:
    return base.with_name(f"{base.stem}-trend.svg")


def record_streamed(
    request: OnCpuRequest, outputs: Outputs, max_spool: int, every: float | None, status: Status
) -> OnCpuResult:
    """Record with the spool, fold as perf goes, write the intervals, the whole run and the trend. --jit
    and Python frames complete each chunk before it is folded (frameworks.jit.chunks); --mxnet's operators
    are joined as the trace allows and at the end (frameworks.mxnet.deferred); not with --memory (it reads the
    whole perf.data)."""
    from ..folding.perf import FoldOptions, PerfCollapser
    from ..folding.python import fold_interpreter
    from ..frameworks.flamegraph_launcher import own_frames
    from ..frameworks.jit.chunks import ChunkJit
    from ..io.diagnostics import Diagnostics, StopSignal
    from ..io.perf import find_perf
    from ..io.private import scratch_dir
    from ..naming.buildid import RecordedBuildIds
    from ..naming.observer import FrameObserver
    from ..naming.symbols import FunctionNamer
    from ..record import capture_metadata, record, script_args
    from ..record.spool import Spool
    from ..record.stream import StreamedFold
    from .oncpu import OnCpuResult

    outputs.check()
    spec, window = request.spec, request.window
    base = outputs.svg if outputs.svg is not None and outputs.render is not None else outputs.folded
    assert base is not None, "--no-svg streams with --folded"
    directory = scratch_dir("flamegraph-spool-")
    jit = _jit_hook(request, directory, status)
    try:
        spool = Spool(directory, max_spool, every, status.note, until=spec.options.duration)
        metadata = capture_metadata(spec, find_perf())
        namer = FunctionNamer(RecordedBuildIds()) if request.group_unknown else None
        hook = FrameObserver(namer)
        mxnet = _deferred_mxnet(request, directory, every, max_spool, status) if request.mxnet else None
        log = mxnet.log if mxnet is not None else None
        options = FoldOptions.with_all(tid=request.threads, frame_hook=hook, sample_hook=log)
        diagnostics = Diagnostics()
        fields = script_args(_placeholder(spec, directory), window)
        written: list[Interval] = []

        def on_interval(interval: Interval) -> None:
            if every is not None and interval.profile.counts:
                fold_interpreter(interval.profile, own_frames(), request.keep_interpreter)
                _write_interval(interval, base, outputs, metadata, spool, status)
                written.append(interval)

        completer = ChunkJit(jit, spec.cwd or os.getcwd(), directory) if jit is not None else None
        chunks = mxnet.fold_chunk if mxnet is not None else None
        fold = StreamedFold(spool, lambda: PerfCollapser(options, diagnostics), fields, namer, on_interval, chunks,
                            completer, status.note)  # fmt: skip
        fold.start()
        try:
            hooks = [hook for hook in (jit, mxnet.hook if mxnet is not None else None) if hook is not None]
            recording = record(spec, spool.data, hooks=hooks, status=status, spool=spool)
        except BaseException as stopped:
            spool.ended()  # the folder ends too, its perf script killed; what stopped the recording is the error said
            fold.stop()
            if mxnet is not None:
                mxnet.stop()
            recorded = spool.chunks or spool.size()  # (a stop before perf began recorded nothing: nothing to say)
            if isinstance(stopped, (KeyboardInterrupt, StopSignal)) and recorded:  # perf killed as it finished
                status.note(
                    f"the recording was abandoned: the samples folded so far are not drawn ({fold.counts.samples:,} "
                    f"in {fold.chunks} chunks; nothing raw is kept)"
                )
            raise
        try:
            profile = fold.finish()  # (the last chunks, renamed as perf ended, are folded now)
        except BaseException:
            fold.stop()  # a signal while the folder scripts the last chunks: its perf script ends with us
            raise
        status.note(_streamed_summary(recording, fold, spool))
        if completer is not None:
            completer.finish(recording)
        diagnostics.finish()
        _finish(recording, fold, spool, status)
        if mxnet is not None:
            mxnet.join(profile, recording)
        fold_interpreter(profile, own_frames(), request.keep_interpreter)
        unwound = jit is not None and jit.unwound
        files = _write_whole(profile, recording, outputs, hook, status, window, unwound)
        if every is not None and written and outputs.render is not None and outputs.svg is not None:
            _write_trend(written, base, outputs.render.title, outputs.render.width, status)
        return OnCpuResult(recording, profile, files)
    finally:
        if jit is not None:
            jit.cleanup()  # the perf maps we wrote in /tmp (their copies are in the directory removed now)
        shutil.rmtree(directory, ignore_errors=True)


def _deferred_mxnet(
    request: OnCpuRequest, directory: Path, every: float | None, budget: int, status: Status
) -> DeferredJoin:
    """--mxnet streamed: its files in the spool's directory (not named like perf's chunks), together bounded
    by `budget` (--max-spool's SIZE: frameworks/mxnet/limit.py); the samples kept for the join bounded by a share
    of it (frameworks/mxnet/running.py), joined as the run goes when they pass it, the rest at the end."""
    from ..folding.grammar import HEADER_OURS
    from ..folding.perf import FoldOptions, PerfCollapser
    from ..frameworks.mxnet.deferred import DeferredJoin
    from ..frameworks.mxnet.hook import MxnetHook
    from ..frameworks.mxnet.running import join_budget
    from ..io.diagnostics import Diagnostics

    naming = PerfCollapser(FoldOptions(tid=request.threads), Diagnostics())  # the fold's root frame of a header

    def root_of(header: bytes) -> bytes:
        match = HEADER_OURS.match(header)
        assert match is not None, "a sample header the fold kept"
        return naming.root_name(match)

    if every is not None:
        status.note("note: --mxnet: the interval graphs carry no [op]/[dnnl] frames (MXNet's trace exists only "
                    "after the run): the whole-run graph has them")  # fmt: skip
    hook = MxnetHook(directory / "mxnet", note=status.note, budget=budget)
    return DeferredJoin(hook, root_of, join_budget(budget))


def _jit_hook(request: OnCpuRequest, directory: Path, status: Status) -> JitHook | None:
    """--jit's and Python frames' hook, completing chunk by chunk; its files in the spool's directory
    (not beside a perf.data: nothing raw outlives a streamed run)."""
    if not request.jit and request.python is False:
        return None
    from ..frameworks.jit.hook import JitHook

    return JitHook(directory / "jit", status.note, dnnl=request.jit, python=request.python, per_chunk=True,
                   keep_python_maps=False)  # fmt: skip


def _placeholder(spec: RecordSpec, directory: Path) -> Recording:
    """script_args() wants a Recording for the options hooks add; a streamed recording has no hooks."""
    from ..record import Recording

    return Recording(directory, spec, {}, 0.0)


def _window_facts(interval: Interval, spool: Spool, every: float) -> dict[str, str]:
    """An interval's window, in seconds into the recording and in perf's clock (for --window and fold)."""
    start = (interval.start_ns - spool.started_ns) / 1e9
    end = (interval.end_ns - spool.started_ns) / 1e9
    unfolded = f", {interval.unfolded:,} not folded ({interval.unfolded_why})" if interval.unfolded else ""
    facts = {
        "interval": f"{interval.number} (every {every:g} s): {start:.1f} s to {end:.1f} s of the recording, "
        f"{interval.samples:,} samples{unfolded}",
        "window": f"{interval.start_ns / 1e9:.6f},{interval.end_ns / 1e9:.6f} (perf clock, CLOCK_MONOTONIC s)",
    }
    if interval.unfolded:
        facts["samples not folded"] = f"{interval.unfolded:,} of {interval.samples:,} ({interval.unfolded_why})"
    return facts


def _write_interval(
    interval: Interval, base: Path, outputs: Outputs, metadata: dict[str, str], spool: Spool, status: Status
) -> None:
    from .outputs import Outputs, write_outputs

    profile = interval.profile
    profile.metadata.update(metadata)
    facts = _window_facts(interval, spool, spool.every or 0.0)
    profile.metadata.update(facts)
    options = outputs.render if outputs.svg is not None else None
    if options is not None:
        options = dataclasses.replace(options, subtitle=f"{options.subtitle}; interval {facts['interval']}")
    svg = interval_path(base, interval.number, ".svg") if options is not None else None
    folded = interval_path(base, interval.number, ".folded")
    write_outputs(profile, Outputs(svg, options, folded, derived=True), status.note)


def _streamed_summary(recording: Recording, fold: StreamedFold, spool: Spool) -> str:
    from ..pipeline.scratch import command_ended

    ended = f"; {command_ended(recording.exit_status)}" if recording.exit_status else ""
    samples = fold.counts.samples + spool.dropped.samples
    chunks = fold.chunks + spool.dropped_chunks  # ('in 1 chunk', then '7 chunks were dropped', once)
    dropped = f", {spool.dropped_chunks} dropped" if spool.dropped_chunks else ""
    return (
        f"recorded {samples:,} samples in {recording.seconds:.1f} s, folded as recorded in {chunks} "
        f"chunk{'s' if chunks != 1 else ''}{dropped} ({spool.bound_text()}){ended}"
    )


def _finish(recording: Recording, fold: StreamedFold, spool: Spool, status: Status) -> None:
    """The counts perf's last line does not give with rotating chunks, and what was lost, said."""
    from ..record.lost import LostSamples
    from ..record.scope import kernel_note, user_space_only

    if (scope := user_space_only(recording.spec, fold.events or [])) is not None:  # perf's silent fallback
        recording.metadata["recorded"] = scope
        status.note(f"note: {kernel_note(scope)}")
    counts = fold.counts
    dropped = spool.dropped.samples
    recording.samples = counts.samples + dropped
    recording.metadata["duration"] = recording.metadata.get("duration", f"{recording.seconds:.1f} s")
    recording.metadata["raw data on disk"] = (
        f"at most {spool.peak / 1e6:.1f} MB (--max-spool {spool.cap / 1e6:.1f} MB; polled every 50 ms), "
        f"folded in {fold.chunks} chunks"
    )
    if counts.lost or spool.dropped.lost:
        lost = LostSamples(recording.samples, counts.lost + spool.dropped.lost, counts.lost_records)
        recording.lost = lost
        recording.metadata["lost samples"] = lost.fact()
        status.note(f"note: {lost.line()}")
    if fold.unfolded_chunks:  # each chunk was said as it came; the whole run's fact and its total here
        chunks = f"{fold.unfolded_chunks} chunk{'s' if fold.unfolded_chunks != 1 else ''}"
        fact = f"{fold.unfolded:,} of {recording.samples:,} samples in {chunks} ({', '.join(fold.unfolded_why)})"
        recording.metadata["samples not folded"] = fact
        status.note(f"warning: {fact} were not folded: the graph lacks them")
    if dropped:
        share = 100 * dropped / recording.samples
        fact = f"{dropped:,} of {recording.samples:,} samples ({share:.1f} %) in {spool.dropped_chunks} chunks"
        recording.metadata["samples dropped unfolded"] = fact
        status.note(
            f"warning: folding could not keep up with perf: {fact} were dropped unfolded to keep the raw data "
            "under --max-spool (a larger --max-spool, a lower --freq or a smaller --call-graph dwarf size)"
        )


def _write_whole(
    profile: FoldedProfile,
    recording: Recording,
    outputs: Outputs,
    hook: FrameObserver,
    status: Status,
    window: Window | None,
    unwound: bool = False,
) -> Written:
    from ..analysis.report import build_report, report_lines, report_metadata
    from ..folding.with_report import how_recorded
    from ..naming.grouping import grouping_note
    from ..record.script import recorded_profile
    from .outputs import write_outputs

    what = recording.spec.command[0] if recording.spec.command else "the process"
    profile = recorded_profile(profile, recording, window, what)
    if (note := grouping_note(hook.namer)) is not None:
        status.note(note)
    figures, fixes = build_report(profile, hook, how_recorded(recording, unwound))
    for line in report_lines(figures, fixes):
        status.note(line)
    profile.metadata.update(report_metadata(figures, fixes))
    return write_outputs(profile, outputs, status.note)


def _write_trend(intervals: list[Interval], base: Path, graph_title: str, width: int, status: Status) -> None:
    import shlex

    from ..io.writer import _put, write_atomically
    from ..render.trend import render_trend

    last = len(intervals)
    first_folded = interval_path(base, intervals[0].number, ".folded")
    last_folded = interval_path(base, intervals[-1].number, ".folded")
    # The paths as the user gave -o (relative to where the command ran, not to the page), quoted for a shell.
    paths = (first_folded, last_folded, base.with_name(f"{base.stem}-diff.svg"))
    hint = "flamegraph diff {} {} --normalize -o {}".format(*(shlex.quote(str(path)) for path in paths))
    title = f"{graph_title}: share per interval ({last} interval{'s' if last != 1 else ''})"
    image = render_trend([(i.number, i.profile) for i in intervals], title, hint if last > 1 else None, width)
    path = trend_path(base)
    write_atomically(path, lambda out: _put(out, image), derived=True)
    status.note(f"wrote {path}")


def pair_spooled(
    spec: RecordSpec,
    options: OffCpuOptions,
    group_unknown: bool,
    status: Status,
    cap: int,
    resolve: Resolver | None,
) -> tuple[OffCpuFold, Recording, FunctionNamer | None]:
    """`offcpu --max-spool`: recorded into a bounded spool and paired meanwhile; the capture facts as
    a whole recording's, with the spool's instead of the file's size."""
    from ..folding.offcpu_stream import record_and_pair
    from ..io.private import scratch_dir
    from ..naming.buildid import RecordedBuildIds
    from ..naming.observer import FrameObserver
    from ..naming.symbols import FunctionNamer
    from ..record.lost import LostSamples
    from ..record.spool import Spool
    from .scratch import pid_exited

    directory = scratch_dir("flamegraph-spool-")
    try:
        spool = Spool(directory, cap, None, status.note)
        namer = FunctionNamer(RecordedBuildIds()) if group_unknown else None
        grouped = dataclasses.replace(options, frame_hook=FrameObserver(namer)) if namer is not None else options
        fold, recording, counts, unread = record_and_pair(spec, grouped, spool, status, namer, resolve)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    chunks = spool.chunks
    exited = pid_exited(recording, spec.pid)
    status.note(
        f"recorded {recording.seconds:.1f} s, paired as recorded ({spool.bound_text()})"
        + (f"; {exited}" if exited is not None else "")
    )
    captured = {k: v for k, v in recording.metadata.items() if k not in ("frequency", "event")}
    fold.profile.metadata.update(captured)
    fold.profile.metadata["raw data on disk"] = (
        f"at most {spool.peak / 1e6:.1f} MB (--max-spool {cap / 1e6:.1f} MB; polled every 50 ms), {chunks} chunks"
    )
    if counts.lost:
        recording.lost = LostSamples(counts.samples, counts.lost, counts.lost_records)
        fold.profile.metadata["lost samples"] = recording.lost.fact()
        status.note(f"note: {recording.lost.line()}")
    if unread.chunks:  # each chunk was said as it came
        fact = unread.fact(counts.samples)
        fold.profile.metadata["records not paired"] = fact
        status.note(f"warning: {fact} were not paired: the waits across them are drawn as long as the gap")
    if spool.dropped_chunks:
        fact = f"{spool.dropped.samples:,} sched_switch records in {spool.dropped_chunks} chunks"
        fold.profile.metadata["records dropped unpaired"] = fact
        status.note(
            f"warning: pairing could not keep up with perf: {fact} were dropped unread to keep the raw data under "
            "--max-spool; the waits across them are drawn as long as the gap (a larger --max-spool, --duration)"
        )
    return fold, recording, namer
