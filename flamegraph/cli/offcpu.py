"""`flamegraph offcpu`: where threads wait. Record sched_switch for a pid or a command, pair, draw."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

# Only what the command's signature needs: `flamegraph --help` imports every command module, so the
# recording, pairing and rendering stages are imported where they run.
from ..record.spec import OFFCPU_CALL_GRAPH
from .app import app
from .recorder import (
    Command,
    Duration,
    NoSvg,
    PerfData,
    Title,
    check_outputs,
    check_request,
    parse_call_graph_option,
    parse_window_option,
)

if TYPE_CHECKING:
    from ..record import Recording

STATES = frozenset("SDRTtXZPI?")  # sched_switch's prev_state letters, and ? for "unknown"


def parse_states(text: str | None) -> frozenset[str] | None:
    """'S,D,R' -> {'S', 'D', 'R'}; None keeps every state."""
    if text is None:
        return None
    states = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(s for s in states if s not in STATES)
    if not states or unknown:
        raise typer.BadParameter(f"expected states among {','.join(sorted(STATES))}, got {text!r}")
    return states


def parse_window_ns(text: str | None) -> tuple[int, int] | None:
    """--window 'START,END' seconds (either side may be empty) -> nanoseconds; waits are cut to it, not dropped."""
    from ..offcpu.fold import window_ns

    span = parse_window_option(text)
    return window_ns(span) if span is not None else None


@app.command("offcpu", context_settings={"allow_interspersed_args": False})
def offcpu_cli(
    command: Command = None,
    pid: Annotated[
        int | None, typer.Option("--pid", "-p", help="every thread of this process, new ones included")
    ] = None,
    duration: Duration = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="the SVG to write")] = Path("offcpu.svg"),
    folded: Annotated[Path | None, typer.Option("--folded", help="also write the folded stacks (µs)")] = None,
    min_us: Annotated[
        float, typer.Option("--min-us", min=0, help="leave out waits shorter than N µs (they are counted)")
    ] = 0.0,
    state: Annotated[str | None, typer.Option("--state", metavar="S,D,R", help="keep only these thread states")] = None,
    kernel: Annotated[bool, typer.Option("--kernel/--no-kernel", help="keep the kernel frames")] = True,
    call_graph: Annotated[
        str, typer.Option("--call-graph", callback=parse_call_graph_option, help="fp or dwarf[,SIZE]")
    ] = OFFCPU_CALL_GRAPH,
    window: Annotated[
        str | None,
        typer.Option("--window", metavar="START,END", help="keep off-CPU time in this CLOCK_MONOTONIC span (s)"),
    ] = None,
    perf_data: PerfData = None,
    title: Title = None,
    no_svg: NoSvg = False,
    speedscope: Annotated[
        Path | None, typer.Option("--speedscope", metavar="FILE", help="also write a speedscope file (µs, per thread)")
    ] = None,
    pprof: Annotated[
        Path | None, typer.Option("--pprof", metavar="FILE", help="also write a pprof profile (off_cpu/microseconds)")
    ] = None,
    chrome_trace: Annotated[
        Path | None, typer.Option("--chrome-trace", metavar="FILE", help="also write a Chrome trace of the waits")
    ] = None,
) -> None:
    """Off-CPU flame graph: where the threads of a pid (`--pid PID`) or command (`-- CMD`) wait.

    Records `perf record -e sched:sched_switch --switch-events --call-graph dwarf,8192`, pairs each
    thread's switch-out with its next switch-in, and draws the blocked time in microseconds, each
    stack rooted at comm-tid and ending with the state ([S] sleeping, [D] uninterruptible, [R] preempted).
    Ctrl-C stops the recording and still draws the graph.
    """
    from ..collapse.perf_sched import OffCpuOptions
    from ..diagnostics import Diagnostics
    from ..export import ExportRequest
    from ..offcpu.fold import fold_offcpu_recording
    from ..offcpu.proc import snapshot_threads, whole_window_resolver
    from ..offcpu.record import offcpu_spec, record_offcpu
    from ..record import Status
    from ..render import RenderOptions, render_svg
    from ..writer import write_results
    from .scratch import ScratchRecording, exit_for_signal

    exports = ExportRequest.of(title, speedscope=speedscope, pprof=pprof, chrome_trace=chrome_trace)
    check_request(command, pid, no_svg, folded, exports)
    options = OffCpuOptions(kernel=kernel, states=parse_states(state), min_us=min_us, window=parse_window_ns(window))
    spec = offcpu_spec(pid, command or (), duration, call_graph)
    status = Status()
    render = RenderOptions(
        title=title or f"Off-CPU: {Path(spec.command[0]).name if spec.command else f'pid {pid}'}",
        subtitle=f"off-CPU time (µs), sched:sched_switch, call graph {call_graph}",
    )
    render.check()  # a bad option must not cost a recording
    svg = None if no_svg else output
    check_outputs(svg, folded, exports, perf_data)
    with ScratchRecording("flamegraph-offcpu-", perf_data, status.note) as session:
        before = snapshot_threads(pid) if pid is not None else {}
        recording = record_offcpu(spec, session.data_path, status, on_recording=session.mark_recorded)
        status.note(_summary(recording, pid))
        resolve = whole_window_resolver(pid, before) if pid is not None else None
        fold = fold_offcpu_recording(recording, options, Diagnostics(), status, resolve)
        profile = fold.profile
        write_results(profile, folded, svg, lambda: render_svg(profile, render), status.note)
        if exports:
            from .convert import write_exports

            request = ExportRequest(exports.files, render.title)
            write_exports(request, profile, recording, status.note, offcpu=options, pid=pid)
        for key, value in fold.totals.terminal().items():
            status.note(f"{key}: {value}")
    exit_for_signal(recording)


def _summary(recording: Recording, pid: int | None) -> str:
    from ..offcpu.proc import alive

    size = recording.perf_data.stat().st_size / 1e6 if recording.perf_data.exists() else 0.0
    line = f"recorded {recording.seconds:.1f} s ({size:,.1f} MB)"
    if pid is not None and not alive(pid) and not recording.interrupted:
        line += f"; pid {pid} exited during the recording: the graph covers it up to its exit"
    elif recording.exit_status:
        line += f"; the command exited with status {recording.exit_status}"
    return line


