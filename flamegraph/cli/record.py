"""`flamegraph record`: perf record -> perf script -> fold -> SVG, for a command or a running pid."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

# Only what the command's signature and Drawing need: `flamegraph --help` imports every command module,
# so the recording, JIT, folding and rendering stages are imported where they run.
from ..export import ExportRequest
from ..record.defaults import DEFAULT_CALL_GRAPH, DEFAULT_EVENT, DEFAULT_FREQ, MEMORY_MODES
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
    check_every,
    check_request,
    parse_call_graph_option,
    render_options,
    stdout_taken,
)

if TYPE_CHECKING:
    from ..model import FoldedProfile
    from ..pipeline.oncpu import OnCpuRequest
    from ..record import Status
    from ..record.memory import MemoryRequest
    from ..record.streaming import Plan
    from ..window import Window


def report_top(profile: FoldedProfile, status: Status, n: int = 8) -> None:
    from ..render.summary import top_self

    total = profile.total or 1
    status.note(f"top frames by self {profile.unit} ({profile.total:,.0f} in all):")
    for name, weight in top_self(profile.counts.items(), n):
        status.note(f"  {100 * weight / total:5.1f} %  {name}")


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
        Path | None,
        typer.Option(
            "--speedscope", metavar="FILE", help="also write a speedscope file (one profile; one per thread: --threads)"
        ),
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
            "end (live): malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, anonymous mmap (root)",
        ),
    ] = None,
    memory_sample: Annotated[
        str | None,
        typer.Option(
            "--memory-sample",
            metavar="SIZE",
            help="with --memory: a sample every SIZE bytes allocated on average (K, M, G: powers of 1024; "
            "default 512K; more apart beyond --memory-max-rate), drawn by an allocator preloaded into the command "
            "(built with cc), each weighing its share; 'all': every call exactly, uprobes on the C library "
            "(~1.3 µs per call; --pid: the only way)",
        ),
    ] = None,
    memory_max_rate: Annotated[
        str | None,
        typer.Option(
            "--memory-max-rate",
            metavar="N",
            help="with --memory: at most N samples per second per process (default 1000; 'none': no limit); a "
            "process allocating faster is sampled at a larger mean interval, each sample weighed by its own",
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
    from ..pipeline.oncpu import OnCpuRequest, record_oncpu
    from ..pipeline.outputs import Outputs
    from ..pipeline.scratch import exit_like_the_command
    from ..record import RecordOptions, RecordSpec, Status

    if jit and defaulted(ctx, "call_graph"):
        call_graph = JIT_CALL_GRAPH  # (why: see JIT_CALL_GRAPH)
    go_note = None if jit else go_call_graph_note(ctx, command, pid)  # (--jit: Python commands; not with --wall)
    exports = ExportRequest.of(title, speedscope=speedscope, pprof=pprof, chrome_trace=chrome_trace)
    check_request(command, pid, no_svg, folded, exports)
    check_every(every, no_svg, output, folded)
    span = parse_window_option(window)
    name = Path(command[0]).name if command else f"pid {pid}"
    if wall:
        return _record_wall(ctx, command, pid, duration, freq, call_graph, span, name, title, preset, highlight,
                            width, top, no_svg, output, folded, perf_data, group_unknown, png, open_, jit or mxnet,
                            exports, event, go_note, python, keep_interpreter)  # fmt: skip
    wanted = _memory_request(memory, memory_sample, memory_max_rate, pid)  # a bad mode: one line, before recording
    rate = every_event_unless_asked(ctx, event, freq)
    call_graph = "fp" if go_note else call_graph
    how = RecordOptions(event=event, freq=rate, call_graph=call_graph, duration=duration)
    spec = RecordSpec(command=tuple(command or ()), pid=pid, options=how,
                      stdout_ours=stdout_taken(no_svg, output, folded, exports))  # fmt: skip
    fallback = None
    if wanted is not None:
        from ..record.memory import plan_request

        wanted, fallback = plan_request(wanted, spec.command, pid, spec.env, spec.cwd)
    subtitle = _subtitle(event, rate, call_graph, window, wanted)
    options = render_options(name, title, subtitle, preset, list(highlight or []), width, top, wanted is not None)
    request = OnCpuRequest(spec, span, threads, group_unknown, keep_interpreter, jit, python, mxnet, wanted, perf_data)
    drawn = None if no_svg else options
    outputs = Outputs(None if no_svg else output, drawn, folded, png, ExportRequest(exports.files, options.title))
    status = Status()
    for note in (go_note, fallback):
        if note is not None:
            status.note(note)
    plan = _streaming_plan(request, max_spool, every, bool(exports))
    if plan.cap is not None:
        from ..pipeline.streamed import record_streamed

        result = record_streamed(request, outputs, plan.cap, every, status)
    else:  # (the line why it is recorded whole comes once perf has recorded: a refused run says only why)
        from dataclasses import replace

        result = record_oncpu(replace(request, whole_note=plan.note), outputs, status)
    print_result(result.written.svg if open_ else None, result.profile, status)
    exit_like_the_command(result.recording, status.note)


def go_call_graph_note(ctx: typer.Context, command: list[str] | None, pid: int | None) -> str | None:
    """The line saying a Go binary is recorded with frame pointers, when no --call-graph was given (Go code has
    no .eh_frame: DWARF stacks stop at their first frame); None for any other program (record, offcpu)."""
    from ..record.golang import FP_NOTE, go_program

    if not defaulted(ctx, "call_graph") or go_program(command, pid) is None:
        return None
    return FP_NOTE.format(name=Path(command[0]).name if command else f"pid {pid}")


def defaulted(ctx: typer.Context, name: str) -> bool:
    """The option was not given (its default stands): --jit and --wall choose their own call graph."""
    source = ctx.get_parameter_source(name)
    return source is None or source.name == "DEFAULT"


def every_event_unless_asked(ctx: typer.Context, event: str, freq: int) -> int | None:
    """The frequency to record at: None (every event, perf's period 1) for a tracepoint unless --freq was
    given. A frequency makes perf sample a tracepoint's events (499 Hz kept 253 of 1,000 writes), and the
    fold counts samples: the graph would say 253 writes, silently."""
    from ..record.tracefs import is_tracepoint

    return None if is_tracepoint(event) and defaulted(ctx, "freq") else freq


def rate_text(freq: int | None) -> str:
    """'499 Hz', or 'every event' (a tracepoint recorded at perf's period 1: every_event_unless_asked)."""
    return "every event" if freq is None else f"{freq} Hz"


def _subtitle(event: str, freq: int | None, call_graph: str, window: str | None, memory: MemoryRequest | None) -> str:
    windowed = f", window {window}" if window else ""
    if memory is None:
        return f"{event}, {rate_text(freq)}, call graph {call_graph}{windowed}"
    what = "bytes allocated" if memory.mode == "alloc" else "bytes still allocated at the end"
    return f"{what}, {memory.rate()}, call graph {call_graph}{windowed}"


def _memory_request(memory: str | None, sample: str | None, max_rate: str | None,
                    pid: int | None) -> MemoryRequest | None:  # fmt: skip
    """--memory MODE [--memory-sample SIZE] [--memory-max-rate N]: checked before anything is recorded. A
    running process cannot be given the sampling allocator: sampling asked for with --pid is one line (by
    default it records every call, said by plan_request)."""
    from ..io.diagnostics import BadOption
    from ..record.defaults import MEMORY_MAX_RATE, MEMORY_SAMPLE
    from ..record.memory import MemoryRequest, parse_max_rate, parse_sample

    if memory is None:
        if sample is not None or max_rate is not None:
            option = "--memory-sample" if sample is not None else "--memory-max-rate"
            raise BadOption(f"{option} samples allocations: it needs --memory")
        return None
    every = parse_sample(sample) if sample is not None else MEMORY_SAMPLE
    limit = parse_max_rate(max_rate) if max_rate is not None else MEMORY_MAX_RATE
    if pid is not None and every and sample is not None:
        raise BadOption("--memory-sample with --pid: a running process cannot be given the sampling allocator "
                        "(it is preloaded at the start); use --memory-sample all (every call, probed)")  # fmt: skip
    if max_rate is not None and (pid is not None or not every):
        raise BadOption("--memory-max-rate limits the sampling allocator: not with --memory-sample all or --pid "
                        "(every call is probed)")  # fmt: skip
    return MemoryRequest(memory, every, limit)


def _streaming_plan(request: OnCpuRequest, max_spool: str | None, every: float | None, exports: bool) -> Plan:
    """Folded while perf records (raw data on disk bounded) unless an option needs the whole perf.data."""
    from ..record.streaming import streaming_plan

    attached_jit = request.jit and request.spec.pid is not None
    blockers = [name for name, on in (("--perf-data", request.perf_data is not None), ("--jit --pid", attached_jit),
                ("--memory", request.memory is not None), ("exports", exports))
                if on]  # fmt: skip
    return streaming_plan(max_spool, every, blockers)


def print_result(svg: Path | None, profile: FoldedProfile, status: Status) -> None:
    """--open's SVG in the browser, the top frames by self weight."""
    if svg is not None:
        from .inputs import open_in_browser

        open_in_browser(svg)
    report_top(profile, status)


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
    go_note: str | None,
    python: bool | None = None,
    keep_interpreter: bool = False,
) -> None:
    from ..folding.sched_totals import format_ns
    from ..folding.wall_time import ONCPU_EVENT, wall_options
    from ..io.diagnostics import BadOption
    from ..pipeline.oncpu import OnCpuRequest
    from ..pipeline.outputs import Outputs
    from ..pipeline.scratch import exit_like_the_command
    from ..pipeline.wall import record_wall
    from ..record import RecordSpec, Status
    from ..record.defaults import OFFCPU_CALL_GRAPH

    if hooked or exports or event != DEFAULT_EVENT:
        raise BadOption("--wall records cpu-clock and sched_switch itself: not with --jit, --mxnet, --event or exports")
    if defaulted(ctx, "call_graph"):  # a sched_switch stack dump per switch: dwarf,8192 as offcpu records
        call_graph = "fp" if go_note else OFFCPU_CALL_GRAPH
    how = wall_options(freq, duration, call_graph)
    spec = RecordSpec(command=tuple(command or ()), pid=pid, options=how,
                      stdout_ours=stdout_taken(no_svg, output, folded, exports))  # fmt: skip
    subtitle = f"wall time (µs): {ONCPU_EVENT} {freq} Hz (on-CPU, warm) + sched:sched_switch (waits, cold)"
    options = render_options(name, title or f"Wall time: {name}", subtitle, preset, list(highlight or []), width, top)
    request = OnCpuRequest(spec, span, group_unknown=group_unknown, keep_interpreter=keep_interpreter, python=python,
                           perf_data=perf_data)  # fmt: skip
    status = Status()
    if go_note is not None:
        status.note(go_note)
    result = record_wall(request, Outputs(None if no_svg else output, None if no_svg else options, folded, png), status)
    if open_ and result.written.svg is not None:
        from .inputs import open_in_browser

        open_in_browser(result.written.svg)
    for thread in result.threads:
        ran, waited = thread.ran_us * 1e3, thread.waited_us * 1e3
        status.note(
            f"{thread.name}: ran {format_ns(ran)}, waited {format_ns(waited)}, "
            f"wall {format_ns(ran + waited)} of the {format_ns(result.window_us * 1e3)} window"
        )
    exit_like_the_command(result.recording, status.note)
