"""`flamegraph record`: perf record -> perf script -> fold -> SVG, for a command or a running pid."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

# Only what the command's signature and Drawing need: `flamegraph --help` imports every command module,
# so the recording, JIT, folding and rendering stages are imported where they run.
from ..export import ExportRequest
from ..record.memory import MODES as MEMORY_MODES
from ..record.spec import DEFAULT_CALL_GRAPH, DEFAULT_EVENT, DEFAULT_FREQ
from .app import app
from .numbers import parse_window_option
from .record_flags import (
    Command,
    Duration,
    Every,
    Folded,
    Highlight,
    KeepInterpreter,
    MaxSpool,
    NoSvg,
    Open,
    Output,
    PerfData,
    Pid,
    Png,
    Preset,
    PythonFrames,
    Threads,
    Title,
    Top,
    Width,
    check_outputs,
    check_request,
    parse_call_graph_option,
)

if TYPE_CHECKING:
    from ..frameworks.jit.hook import JitHook
    from ..frameworks.mxnet.hook import MxnetHook
    from ..model import FoldedProfile
    from ..record import Recording, RecordSpec, Status
    from ..record.memory import MemoryRequest
    from ..render import RenderOptions
    from ..window import Window
    from .scratch import ScratchRecording


def report_top(profile: FoldedProfile, status: Status, n: int = 8) -> None:
    from ..render.summary import top_self

    total = profile.total or 1
    status.note(f"top frames by self {profile.unit} ({profile.total:,.0f} in all):")
    for name, weight in top_self(profile.counts.items(), n):
        status.note(f"  {100 * weight / total:5.1f} %  {name}")


def render_options(
    name: str,
    title: str | None,
    subtitle: str,
    preset: str | None,
    highlights: list[str],
    width: int = 1200,
    top: int = 10,
    memory: bool = False,
) -> RenderOptions:
    """The SVG's options, checked before anything is recorded (a typo must not cost a recording)."""
    from ..color import HighlightRule, resolve_highlights
    from ..render import RenderOptions

    rules: list[str | HighlightRule] = list(highlights)
    what = "memory" if memory else "on-CPU"
    options = RenderOptions(
        title=title or f"{name}: {what}", subtitle=subtitle, preset=preset, highlights=rules, width=width, top=top
    )
    options.check()
    resolve_highlights(options.highlights, options.preset, "mem" if memory else "hot")
    return options


def with_memory_mode(args: list[str]) -> list[str]:
    """`--memory` alone means `--memory alloc` (typer has no option with an optional value): the mode is
    added unless a word follows that is one, or that cannot be the command (`--` comes after it:
    `--memory peak -- CMD` is a bad mode, `--memory ./prog` a command)."""
    given = list(args)
    end = given.index("--") if "--" in given else len(given)
    for at in range(end - 1, -1, -1):
        following = given[at + 1] if at + 1 < end else None
        is_value = following is not None and (
            following in MEMORY_MODES or not following.startswith("-") and end < len(given)
        )
        if given[at] == "--memory" and not is_value:
            given.insert(at + 1, "alloc")
    return given


class MemoryOptionCommand(TyperCommand):
    """The record command, its bare `--memory` given its mode before parsing (`with_memory_mode`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's (vendored) click.Context
        return super().parse_args(ctx, with_memory_mode(args))


@app.command(
    "record",
    cls=MemoryOptionCommand,
    short_help="Profile a command or a process on-CPU and draw its graph.",
    context_settings={"allow_interspersed_args": False},
)
def record_cli(
    ctx: typer.Context,
    command: Command = None,
    pid: Pid = None,
    duration: Duration = None,
    freq: Annotated[int, typer.Option("--freq", "-F", metavar="HZ", min=1, help="samples per second")] = DEFAULT_FREQ,
    call_graph: Annotated[
        str,
        typer.Option(
            "--call-graph", metavar="MODE", callback=parse_call_graph_option, help="fp, lbr, dwarf or dwarf,SIZE"
        ),
    ] = DEFAULT_CALL_GRAPH,
    event: Annotated[str, typer.Option("--event", "-e", metavar="EVENT", help="perf event to sample")] = DEFAULT_EVENT,
    window: Annotated[
        str | None,
        typer.Option("--window", metavar="START,END", help="keep samples in this CLOCK_MONOTONIC span (s)"),
    ] = None,
    output: Output = Path("flamegraph.svg"),
    folded: Folded = None,
    perf_data: PerfData = None,
    max_spool: MaxSpool = None,
    every: Every = None,
    title: Title = None,
    preset: Preset = None,
    highlight: Highlight = None,
    width: Width = 1200,
    top: Top = 10,
    png: Png = None,
    open_: Open = False,
    threads: Threads = False,
    group_unknown: Annotated[
        bool,
        typer.Option(
            "--group-unknown/--no-group-unknown",
            help="name [unknown] frames by function (.eh_frame) where the DSO's build-id matches the recording",
        ),
    ] = True,
    no_svg: NoSvg = False,
    speedscope: Annotated[
        Path | None, typer.Option("--speedscope", metavar="FILE", help="also write a speedscope file (per thread)")
    ] = None,
    pprof: Annotated[
        Path | None, typer.Option("--pprof", metavar="FILE", help="also write a pprof profile (gzip'd profile.proto)")
    ] = None,
    chrome_trace: Annotated[
        Path | None,
        typer.Option("--chrome-trace", metavar="FILE", help="also write a Chrome trace (samples in time order)"),
    ] = None,
    jit: Annotated[
        bool,
        typer.Option(
            "--jit/--no-jit",
            help="name oneDNN's JIT kernels and unwind through them (DNNL_JIT_DUMP=1, jitdump, perf inject "
            "--jit; the call graph default becomes dwarf,65528)",
        ),
    ] = False,
    wall: Annotated[
        bool,
        typer.Option(
            "--wall",
            help="wall time: on-CPU samples (weighed by their period) and off-CPU waits (sched_switch) "
            "per thread on one axis, waits in cold colours",
        ),
    ] = False,
    python: PythonFrames = None,
    keep_interpreter: KeepInterpreter = False,
    mxnet: Annotated[
        bool,
        typer.Option(
            "--mxnet/--no-mxnet",
            help="MXNet operators and oneDNN primitives as frames: [op] NAME, [dnnl] KIND PROPAGATION SHAPE (IMPL) "
            "(the profiler and DNNL_VERBOSE on in the process, bulk execution off; Python commands only)",
        ),
    ] = False,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            metavar="[alloc|live]",
            help="draw bytes, not time: every allocation (alloc, the default) or what is still allocated at the "
            "end (live); uprobes on malloc, calloc, realloc, posix_memalign, aligned_alloc, anonymous mmap (root)",
        ),
    ] = None,
) -> None:
    """Profile a command or a running process on-CPU and draw its flame graph, in one step.

    Records with `perf record -N --buildid-all -k CLOCK_MONOTONIC -e cpu-clock -F 499 --call-graph dwarf,16384`;
    Ctrl-C stops the recording and still draws the graph.

    \b
    Examples:
      flamegraph record -o train.svg -- python train.py --epochs 1
      flamegraph record --jit --mxnet --preset onednn --png mlp.png -o mlp.svg -- python train.py
      flamegraph record --memory live -o leaks.svg -- ./server
    """
    from ..frameworks.jit.hook import JIT_CALL_GRAPH
    from ..record import RecordOptions, RecordSpec
    from ..record.memory import MemoryRequest

    source = ctx.get_parameter_source("call_graph")
    if jit and (source is None or source.name == "DEFAULT"):
        call_graph = JIT_CALL_GRAPH  # (why: see JIT_CALL_GRAPH)
    exports = ExportRequest.of(title, speedscope=speedscope, pprof=pprof, chrome_trace=chrome_trace)
    check_request(command, pid, no_svg, folded, exports)
    span = parse_window_option(window)
    name = Path(command[0]).name if command else f"pid {pid}"
    if wall:
        return _record_wall(ctx, command, pid, duration, freq, call_graph, span, name, title, preset, highlight,
                            width, top, no_svg, output, folded, perf_data, group_unknown, png, open_, jit or mxnet,
                            exports, event)  # fmt: skip
    subtitle = f"{event}, {freq} Hz, call graph {call_graph}" + (f", window {window}" if window else "")
    wanted = None
    if memory is not None:
        wanted = MemoryRequest(memory)  # a bad mode: one line, before recording
        what = "bytes allocated" if wanted.mode == "alloc" else "bytes still allocated at the end"
        subtitle = f"{what}, every allocation call, call graph {call_graph}" + (f", window {window}" if window else "")
    options = render_options(name, title, subtitle, preset, list(highlight or []), width, top, wanted is not None)
    how = RecordOptions(event=event, freq=freq, call_graph=call_graph, duration=duration)
    spec = RecordSpec(command=tuple(command or ()), pid=pid, options=how)
    exports = ExportRequest(exports.files, options.title)
    draw = OutputRequest(
        options if not no_svg else None, output, folded, threads, group_unknown, exports, png if not no_svg else None,
        open_, keep_interpreter,
    )  # fmt: skip
    from ..record.streaming import python_frames_on, streaming_plan

    blockers = [name for name, on in (("--perf-data", perf_data is not None), ("--jit", jit), ("--mxnet", mxnet),
                ("--memory", wanted is not None), ("Python frames", python_frames_on(python, spec.command)),
                ("exports", bool(exports))) if on]  # fmt: skip
    plan = streaming_plan(max_spool, every, blockers)  # (folds while perf records unless one needs the whole file)
    if plan.cap is not None:
        record_streaming(spec, span, draw, plan.cap, every)
        return
    record_and_draw(spec, span, draw, perf_data, jit, mxnet, wanted, python, plan.note)


def _record_wall(  # noqa: PLR0913 (the flags of record it honours)
    ctx: typer.Context,
    command: list[str] | None,
    pid: int | None,
    duration: float | None,
    freq: int,
    call_graph: str,
    span: Window | None,
    name: str,
    title: str | None,
    preset: str | None,
    highlight: list[str] | None,
    width: int,
    top: int,
    no_svg: bool,
    output: Path,
    folded: Path | None,
    perf_data: Path | None,
    group_unknown: bool,
    png: Path | None,
    open_: bool,
    hooked: bool,
    exports: ExportRequest,
    event: str,
) -> None:
    from ..folding.wall_time import ONCPU_EVENT, wall_options
    from ..io.diagnostics import BadOption
    from ..record import RecordSpec
    from ..record.spec import OFFCPU_CALL_GRAPH
    from .wall import record_wall

    if hooked or exports or event != DEFAULT_EVENT:
        raise BadOption("--wall records cpu-clock and sched_switch itself: not with --jit, --mxnet, --event or exports")
    source = ctx.get_parameter_source("call_graph")
    if source is None or source.name == "DEFAULT":
        call_graph = OFFCPU_CALL_GRAPH  # a sched_switch stack dump per switch: dwarf,8192 as offcpu records
    how = wall_options(freq, duration, call_graph)
    spec = RecordSpec(command=tuple(command or ()), pid=pid, options=how)
    subtitle = f"wall time (µs): {ONCPU_EVENT} {freq} Hz (on-CPU, warm) + sched:sched_switch (waits, cold)"
    options = render_options(name, title or f"Wall time: {name}", subtitle, preset, list(highlight or []), width, top)
    record_wall(spec, span, None if no_svg else options, output, folded, perf_data, group_unknown, png, open_)


def record_streaming(
    spec: RecordSpec, window: Window | None, draw: OutputRequest, spool: int,
    every: float | None,
) -> None:  # fmt: skip
    """--max-spool / --every: folded while perf records (flamegraph.cli.streamed)."""
    from ..record import Status
    from .scratch import exit_like_the_command
    from .streamed import record_streamed

    status = Status()
    check_outputs(draw.svg if draw.options is not None else None, draw.folded, draw.exports, None, draw.png)
    recording = record_streamed(spec, window, draw, spool, every, status)
    exit_like_the_command(recording, status.note)


@dataclass(frozen=True)
class OutputRequest:
    """What to make of a recording: the SVG (None: none), the folded text, how to fold."""

    options: RenderOptions | None
    svg: Path
    folded: Path | None
    threads: bool = False
    group_unknown: bool = True
    exports: ExportRequest = ExportRequest()  # --speedscope, --pprof, --chrome-trace
    png: Path | None = None  # --png: the static view as an image
    open: bool = False  # --open: the SVG in the user's browser
    keep_interpreter: bool = False  # --keep-interpreter: CPython's frames between Python functions stay


def record_and_draw(
    spec: RecordSpec,
    window: Window | None,
    draw: OutputRequest,
    perf_data: Path | None,
    jit: bool = False,
    mxnet: bool = False,
    memory: MemoryRequest | None = None,
    python: bool | None = None,
    whole_note: str | None = None,
) -> None:
    """Record, fold, write; perf.data goes to a temporary directory unless `perf_data` is given, and
    is kept (and its path printed) when a later step fails, so nothing recorded is lost.
    With `jit`, the JIT files (dumps, jitdump, jitted-*.so that perf.data refers to) go to PERF_DATA.jit/;
    with `mxnet`, the profiler trace and verbose log go to PERF_DATA.mxnet/; with `memory`, allocation probes
    are added for the recording (and deleted after it) and the graph weighs bytes."""
    from ..frameworks.jit.hook import JitHook
    from ..frameworks.mxnet.hook import MxnetHook
    from ..record import Status
    from .scratch import ScratchRecording, exit_like_the_command

    status = Status()
    check_outputs(draw.svg if draw.options is not None else None, draw.folded, draw.exports, perf_data, draw.png)
    with ScratchRecording("flamegraph-record-", perf_data, status.note) as session:
        data_path = session.data_path
        jit_dir = data_path.absolute().with_name(data_path.name + ".jit")
        wanted = jit or python is not False  # Python frames: for a Python 3.12+ command unless --no-python
        jit_hook = JitHook(jit_dir, note=status.note, dnnl=jit, python=python) if wanted else None
        mx = MxnetHook(data_path.absolute().with_name(data_path.name + ".mxnet"), note=status.note) if mxnet else None
        try:
            recording = _record_and_write(spec, window, draw, session, status, jit_hook, mx, memory, whole_note)
        finally:
            if jit_hook is not None:
                jit_hook.cleanup()  # the perf maps we wrote, once every perf script pass has read them
    exit_like_the_command(recording, status.note)


def _record_and_write(
    spec: RecordSpec,
    window: Window | None,
    draw: OutputRequest,
    session: ScratchRecording,
    status: Status,
    jit_hook: JitHook | None,
    mx: MxnetHook | None,
    memory: MemoryRequest | None = None,
    whole_note: str | None = None,
) -> Recording:
    from ..folding.perf import FoldOptions
    from ..folding.python import fold_interpreter
    from ..folding.with_report import fold_with_report
    from ..io.sidecar import Context
    from ..io.writer import write_results
    from ..naming.grouping import namer_for_recording
    from ..naming.observer import FrameObserver
    from ..record import record
    from ..render import render_svg
    from .inputs import open_in_browser

    data_path = session.data_path
    hooks = [h for h in (jit_hook, mx) if h is not None]
    if memory is not None:
        from ..record.memory import memory_probes
        from ..record.memory_fold import fold_memory_recording

        with memory_probes(memory, spec.pid, status.note) as probes:  # deleted however the recording ends
            _say(status, whole_note)
            recording = record(probes.apply(spec), data_path, hooks=hooks, on_recording=session.mark_recorded)
        status.note(_summary(recording.samples, recording.seconds, data_path, recording.exit_status))
        joiner = mx.joiner(recording, window) if mx else None
        profile = fold_memory_recording(recording, probes, window, status, draw.threads, draw.group_unknown, joiner)
    else:
        _say(status, whole_note)
        recording = record(spec, data_path, hooks=hooks, on_recording=session.mark_recorded)
        status.note(_summary(recording.samples, recording.seconds, data_path, recording.exit_status))
        joiner = mx.joiner(recording, window) if mx else None
        unwound = jit_hook is not None and jit_hook.unwound
        profile = fold_with_report(recording, window, status, draw.threads, draw.group_unknown, joiner, unwound)
    if not draw.keep_interpreter:
        fold_interpreter(profile)
    if mx and joiner:
        mx.report(joiner, profile)
    options = draw.options
    svg = draw.svg if options is not None else None
    context = Context.of(profile, **drawn_with(options))
    write_results(
        profile, draw.folded, svg, lambda: render_svg(profile, options), status.note,  # type: ignore[arg-type]
        context, draw.png,
    )  # fmt: skip
    if draw.open and svg is not None:
        open_in_browser(svg)
    if draw.exports:
        from ..export.files import write_recording_exports

        # The trace's frames named as the fold named them (build-id checked grouping included).
        timed = any(fmt == "chrome-trace" for fmt, _ in draw.exports.files) and draw.group_unknown
        namer = namer_for_recording(str(recording.perf_data)) if timed else None
        fold = FoldOptions.with_all(tid=True, frame_hook=FrameObserver(namer))
        write_recording_exports(draw.exports, profile, recording, status.note, fold, window)
    report_top(profile, status)
    return recording


def _say(status: Status, note: str | None) -> None:
    """Why the whole perf.data is recorded, said as it begins (after every check that could refuse the run)."""
    if note is not None:
        status.note(note)


def drawn_with(options: RenderOptions | None) -> dict[str, object]:
    """How the graph was drawn, saved beside the folded file so `render` draws it the same way."""
    if options is None:
        return {}
    rules = [rule for rule in options.highlights if isinstance(rule, str)]
    return {"title": options.title, "subtitle": options.subtitle, "preset": options.preset, "highlights": rules}


def _summary(samples: int | None, seconds: float, path: Path, exit_status: int | None) -> str:
    counted = f" {samples:,} samples" if samples is not None else ""
    size = path.stat().st_size / 1e6 if path.exists() else 0.0
    from .scratch import command_ended

    ended = f"; {command_ended(exit_status)}" if exit_status else ""
    return f"recorded{counted} in {seconds:.1f} s ({size:.1f} MB){ended}"
