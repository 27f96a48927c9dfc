"""`flamegraph record`: perf record -> perf script -> fold -> SVG, for a command or a running pid."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

# Only what the command's signature and Drawing need: `flamegraph --help` imports every command module,
# so the recording, JIT, folding and rendering stages are imported where they run.
from ..export import ExportRequest
from ..record.spec import DEFAULT_CALL_GRAPH, DEFAULT_EVENT, DEFAULT_FREQ
from .app import app
from .recorder import (
    Command,
    Duration,
    Every,
    Folded,
    Highlight,
    MaxSpool,
    NoSvg,
    Open,
    Output,
    PerfData,
    Pid,
    Png,
    Preset,
    Threads,
    Title,
    Top,
    Width,
    check_outputs,
    check_request,
    parse_call_graph_option,
    parse_spool_option,
    parse_window_option,
)

if TYPE_CHECKING:
    from ..jit.recording import JitHook
    from ..model import FoldedProfile
    from ..mxnet.recording import MxnetHook
    from ..record import Recording, RecordSpec, Status
    from ..render import RenderOptions
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
) -> RenderOptions:
    """The SVG's options, checked before anything is recorded (a typo must not cost a recording)."""
    from ..color import HighlightRule, resolve_highlights
    from ..render import RenderOptions

    rules: list[str | HighlightRule] = list(highlights)
    options = RenderOptions(
        title=title or f"{name}: on-CPU", subtitle=subtitle, preset=preset, highlights=rules, width=width, top=top
    )
    options.check()
    resolve_highlights(options.highlights, options.preset, "hot")
    return options


@app.command(
    "record",
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
    mxnet: Annotated[
        bool,
        typer.Option(
            "--mxnet/--no-mxnet",
            help="MXNet operators and oneDNN primitives as frames: [op] NAME, [dnnl] KIND PROPAGATION SHAPE (IMPL) "
            "(the profiler and DNNL_VERBOSE on in the process, bulk execution off; Python commands only)",
        ),
    ] = False,
) -> None:
    """Profile a command or a running process on-CPU and draw its flame graph, in one step.

    Records with `perf record -N --buildid-all -k CLOCK_MONOTONIC -e cpu-clock -F 499 --call-graph dwarf,16384`;
    Ctrl-C stops the recording and still draws the graph.

    \b
    Examples:
      flamegraph record -o train.svg -- python train.py --epochs 1
      flamegraph record --pid 4242 --duration 10 --folded app.folded -o app.svg --open
      flamegraph record --jit --mxnet --preset onednn --png mlp.png -o mlp.svg -- python train.py
    """
    from ..jit.recording import JIT_CALL_GRAPH
    from ..record import RecordOptions, RecordSpec, Status

    source = ctx.get_parameter_source("call_graph")
    if jit and (source is None or source.name == "DEFAULT"):
        call_graph = JIT_CALL_GRAPH  # (why: see JIT_CALL_GRAPH)
    exports = ExportRequest.of(title, speedscope=speedscope, pprof=pprof, chrome_trace=chrome_trace)
    check_request(command, pid, no_svg, folded, exports)
    span = parse_window_option(window)
    name = Path(command[0]).name if command else f"pid {pid}"
    subtitle = f"{event}, {freq} Hz, call graph {call_graph}" + (f", window {window}" if window else "")
    options = render_options(name, title, subtitle, preset, list(highlight or []), width, top)
    how = RecordOptions(event=event, freq=freq, call_graph=call_graph, duration=duration)
    spec = RecordSpec(command=tuple(command or ()), pid=pid, options=how)
    exports = ExportRequest(exports.files, options.title)
    draw = OutputRequest(
        options if not no_svg else None, output, folded, threads, group_unknown, exports, png if not no_svg else None,
        open_,
    )  # fmt: skip
    spool = parse_spool_option(max_spool, every)
    if spool is not None:
        whole_file = [name for name, on in (("--perf-data", perf_data), ("--jit", jit), ("--mxnet", mxnet),
                      ("--speedscope/--pprof/--chrome-trace", bool(exports))) if on]  # fmt: skip
        if whole_file and every is not None:  # (they read the whole perf.data after the run: not streamed yet)
            raise typer.BadParameter(f"--every folds while recording: not yet with {', '.join(whole_file)}")
        if not whole_file:
            record_streaming(spec, span, draw, spool, every)
            return
        note = f"note: {', '.join(whole_file)} read the whole perf.data after the run: recorded whole, --max-spool"
        Status().note(f"{note} not applied (the disk is not bounded)")
    record_and_draw(spec, span, draw, perf_data, jit, mxnet)


def record_streaming(
    spec: RecordSpec, window: tuple[float | None, float | None] | None, draw: OutputRequest, spool: int,
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


def record_and_draw(
    spec: RecordSpec,
    window: tuple[float | None, float | None] | None,
    draw: OutputRequest,
    perf_data: Path | None,
    jit: bool = False,
    mxnet: bool = False,
) -> None:
    """Record, fold, write; perf.data goes to a temporary directory unless `perf_data` is given, and
    is kept (and its path printed) when a later step fails, so nothing recorded is lost.
    With `jit`, the JIT files (dumps, jitdump, jitted-*.so that perf.data refers to) go to PERF_DATA.jit/;
    with `mxnet`, the profiler trace and verbose log go to PERF_DATA.mxnet/."""
    from ..jit.recording import JitHook
    from ..mxnet.recording import MxnetHook
    from ..record import Status
    from .scratch import ScratchRecording, exit_like_the_command

    status = Status()
    check_outputs(draw.svg if draw.options is not None else None, draw.folded, draw.exports, perf_data, draw.png)
    with ScratchRecording("flamegraph-record-", perf_data, status.note) as session:
        data_path = session.data_path
        jit_hook = JitHook(data_path.absolute().with_name(data_path.name + ".jit"), note=status.note) if jit else None
        mx = MxnetHook(data_path.absolute().with_name(data_path.name + ".mxnet"), note=status.note) if mxnet else None
        try:
            recording = _record_and_write(spec, window, draw, session, status, jit_hook, mx)
        finally:
            if jit_hook is not None:
                jit_hook.cleanup()  # the perf maps we wrote, once every perf script pass has read them
    exit_like_the_command(recording, status.note)


def _record_and_write(
    spec: RecordSpec,
    window: tuple[float | None, float | None] | None,
    draw: OutputRequest,
    session: ScratchRecording,
    status: Status,
    jit_hook: JitHook | None,
    mx: MxnetHook | None,
) -> Recording:
    from ..collapse.perf import FoldOptions
    from ..grouping import namer_for_recording
    from ..observer import FrameObserver
    from ..oncpu import fold_with_report
    from ..record import record
    from ..render import render_svg
    from ..sidecar import Context
    from ..writer import write_results
    from .inputs import open_in_browser

    data_path = session.data_path
    hooks = [h for h in (jit_hook, mx) if h is not None]
    recording = record(spec, data_path, hooks=hooks, on_recording=session.mark_recorded)
    status.note(_summary(recording.samples, recording.seconds, data_path, recording.exit_status))
    joiner = mx.joiner(recording, window) if mx else None
    unwound = jit_hook is not None and jit_hook.unwound
    profile = fold_with_report(recording, window, status, draw.threads, draw.group_unknown, joiner, unwound)
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
        from .convert import write_exports

        # The trace's frames named as the fold named them (build-id checked grouping included).
        timed = any(fmt == "chrome-trace" for fmt, _ in draw.exports.files) and draw.group_unknown
        namer = namer_for_recording(str(recording.perf_data)) if timed else None
        fold = FoldOptions.with_all(tid=True, frame_hook=FrameObserver(namer))
        write_exports(draw.exports, profile, recording, status.note, fold, window)
    report_top(profile, status)
    return recording


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
