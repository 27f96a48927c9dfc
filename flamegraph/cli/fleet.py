"""`flamegraph fleet record` and `flamegraph fleet diff`: one flame graph of a job on many hosts (Dask).

Dask is imported only when a fleet command runs (flamegraph.fleet.cluster); this module is cheap.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..io.diagnostics import BadOption, ClusterUnavailable, Diagnostics, PartialResult
from ..record.defaults import DEFAULT_CALL_GRAPH, DEFAULT_EVENT, DEFAULT_FREQ
from .app import app
from .inputs import refuse_binary
from .numbers import finite
from .record_flags import Highlight, Preset, Threads, render_options

if TYPE_CHECKING:  # the stages are imported where the commands run: `flamegraph --help` stays cheap
    from ..fleet.model import HostResult, Target
    from ..fleet.outlier import Outlier
    from ..model import FoldedProfile
    from ..record import Status

fleet_app = typer.Typer(
    help="One flame graph of a job that runs on many hosts, recorded on a Dask cluster.",
    no_args_is_help=True,
)
app.add_typer(fleet_app, name="fleet")

DEFAULT_GRACE = 60.0


def _call_graph(text: str) -> str:
    from ..record.spec import parse_call_graph  # here: --help shows the defaults without the recorder

    try:
        return parse_call_graph(text)
    except ValueError as err:
        raise BadOption(str(err)) from None


@fleet_app.command("record", context_settings={"allow_interspersed_args": False})
def fleet_record(
    ctx: typer.Context,
    command: Annotated[
        list[str] | None, typer.Argument(help="a program to launch on every host, after --", show_default=False)
    ] = None,
    scheduler: Annotated[
        str, typer.Option("--scheduler", help="Dask scheduler address, or local[:N] for a LocalCluster here")
    ] = "local",
    match: Annotated[
        str | None, typer.Option("--match", metavar="REGEX", help="record the processes whose command line matches")
    ] = None,
    all_cpus: Annotated[bool, typer.Option("--all-cpus", help="record each whole machine")] = False,
    duration: Annotated[
        float,
        typer.Option(
            "--duration",
            metavar="SECONDS",
            parser=finite("--duration", 0.1),
            help="seconds to record on every host, at least 0.1",
        ),
    ] = 10.0,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            metavar="SECONDS",
            parser=finite("--grace", 0.0),
            help="seconds a host may take after --duration before it counts as missing",
        ),
    ] = DEFAULT_GRACE,
    output: Annotated[Path, typer.Option("-o", "--output", help="the SVG to write")] = Path("fleet.svg"),
    folded: Annotated[Path | None, typer.Option("--folded", help="also write the merged folded stacks here")] = None,
    per_host: Annotated[bool, typer.Option("--per-host", help="each host is a root frame")] = False,
    outlier: Annotated[
        Path | None,
        typer.Option("--outlier", metavar="SVG", help="also draw the host most unlike the others against their mean"),
    ] = None,
    freq: Annotated[int, typer.Option("--freq", "-F", min=1, help="samples per second")] = DEFAULT_FREQ,
    call_graph: Annotated[
        str, typer.Option("--call-graph", callback=_call_graph, help="fp, lbr, dwarf or dwarf,SIZE")
    ] = DEFAULT_CALL_GRAPH,
    event: Annotated[str, typer.Option("--event", "-e", help="perf event to sample")] = DEFAULT_EVENT,
    title: Annotated[str | None, typer.Option("--title", help="graph title")] = None,
    preset: Preset = None,
    highlight: Highlight = None,
    threads: Threads = False,
    group_unknown: Annotated[
        bool,
        typer.Option("--group-unknown/--no-group-unknown", help="as in `flamegraph record`, on each host"),
    ] = True,
    no_svg: Annotated[bool, typer.Option("--no-svg", help="write only --folded")] = False,
    jit: Annotated[
        bool, typer.Option("--jit/--no-jit", help="name oneDNN's JIT kernels as `flamegraph record --jit` does")
    ] = False,
    mxnet: Annotated[
        bool, typer.Option("--mxnet/--no-mxnet", help="[op] and [dnnl] frames as `flamegraph record --mxnet` adds")
    ] = False,
) -> None:
    """Record every host of a Dask cluster at once (one recording per host, however many workers it has),
    fold each where its binaries are, and draw one flame graph.

    Exit status 10: the graph was drawn, but some hosts are missing (the header and stderr say why); else
    the command's status where it failed (as `flamegraph record` passes it on).
    """
    from ..fleet.cluster import connect, record_fleet
    from ..fleet.model import OK, HostRequest
    from ..fleet.outlier import find_outlier
    from ..fleet.scheduler import Scheduler
    from ..frameworks.jit.hook import JIT_CALL_GRAPH
    from ..pipeline.outputs import Outputs, write_outputs
    from ..record import Status
    from .record import defaulted, every_event_unless_asked, rate_text, report_top

    target = _target(match, all_cpus, tuple(command or ()))
    if (jit or mxnet) and not target.command:
        raise BadOption("--jit and --mxnet need the process launched by us: use -- COMMAND")
    if jit and defaulted(ctx, "call_graph"):
        call_graph = JIT_CALL_GRAPH
    if no_svg and folded is None:
        raise BadOption("--no-svg needs --folded")
    where = Scheduler.parse(scheduler)
    rate = every_event_unless_asked(ctx, event, freq)  # a tracepoint: every event, as `record` does
    subtitle = f"{event}, {rate_text(rate)}, call graph {call_graph}: {target.describe()}"
    options = render_options("fleet", title, subtitle, preset, list(highlight or []))
    outputs = Outputs(None if no_svg else output, options, folded)
    outputs.check(outlier)  # before anything is recorded, as `flamegraph record` checks
    request = HostRequest(target, duration, event, rate, call_graph, jit, mxnet, threads, group_unknown)
    status = Status()
    with connect(where) as client:
        recording = record_fleet(client, request, grace, status.note)
    results = recording.results
    for result in results:
        _report_host(result, status)
    profile = _merged(results, per_host, target, where.describe(), duration)
    write_outputs(profile, outputs, status.note)
    report_top(profile, status)
    if outlier is not None:
        straggler = find_outlier({r.host: r.profile for r in results if r.state == OK and r.profile is not None})
        _write_outlier(straggler, outlier, title, status)
    if recording.stop_signal in (signal.SIGTERM, signal.SIGHUP):
        raise SystemExit(128 + recording.stop_signal)
    missing = [r for r in results if r.state != OK]
    if missing:
        raise PartialResult(
            f"partial graph: {len(missing)} of {len(results)} hosts missing: "
            + "; ".join(f"{r.host} ({r.reason})" for r in missing)
        )
    if recording.stop_signal is None:  # (stopped by Ctrl-C: the commands were ended by us, as `record` says)
        _exit_like_the_command(results, status)


def _exit_like_the_command(results: list[HostResult], status: Status) -> None:
    """`fleet record -- pytest` fails as pytest does: the status of the first host where the command failed."""
    from ..pipeline.scratch import exit_with_the_commands_status

    failed = [r for r in results if r.command_status]
    if failed:
        others = len(failed) - 1
        on_hosts = f" on {failed[0].host}" + (f" (and on {others} other host{'s' * (others > 1)})" if others else "")
        exit_with_the_commands_status(failed[0].command_status, status.note, on_hosts)


def _target(match: str | None, all_cpus: bool, command: tuple[str, ...]) -> Target:
    from ..fleet.model import Target

    if sum((match is not None, all_cpus, bool(command))) != 1:
        raise BadOption("give exactly one of --match REGEX, --all-cpus and -- COMMAND ARGS")
    if match is not None:
        try:
            re.compile(match)
        except re.error as err:
            raise BadOption(f"--match {match!r}: not a regular expression: {err}") from None
    return Target(match=match, all_cpus=all_cpus, command=command)


def _report_host(result: HostResult, status: Status) -> None:
    from ..fleet.model import OK

    if result.state == OK:
        status.note(f"{result.host}: {result.samples:,.0f} samples in {result.seconds:.1f} s")
    else:
        status.note(f"{result.host}: {result.state}: {result.reason}")
    for line in result.notes:
        status.note(f"  {result.host}: {line}")


def _merged(
    results: list[HostResult], per_host: bool, target: Target, scheduler: str, duration: float
) -> FoldedProfile:
    """The merged profile with the fleet header; no host with samples is an error (nothing to draw)."""
    from ..fleet.merge import fleet_metadata, merge_hosts
    from ..fleet.model import OK

    if not any(r.state == OK and r.samples > 0 for r in results):
        reasons = "; ".join(f"{r.host}: {r.reason or 'no samples'}" for r in results)
        error = ClusterUnavailable(f"no host sent back samples: {reasons}")
        codes = {r.exit_code for r in results}
        if len(codes) == 1 and None not in codes:
            error.exit_code = codes.pop()  # type: ignore[assignment]  # they all failed alike: say how
        raise error
    profile = merge_hosts(results, per_host)
    profile.metadata = fleet_metadata(results, target.describe(), scheduler, duration)
    return profile


def _write_outlier(straggler: Outlier, path: Path, title: str | None, status: Status) -> None:
    from ..fleet.outlier import outlier_metadata
    from ..io.writer import atomic_output
    from ..model import FoldedProfile
    from ..render import RenderOptions, render_diff

    options = RenderOptions(title=title or f"{straggler.host} against the rest of the fleet", normalize=True)
    before, after = straggler.mean, straggler.profile
    after = FoldedProfile(after.counts, after.unit, after.event, {**outlier_metadata(straggler), **after.metadata})
    with atomic_output(path) as out:
        out.write(render_diff(before, after, options))
    status.note(f"wrote {path}: {straggler.host} differs most ({100 * straggler.distance:.1f} % of its self time)")


@fleet_app.command("diff")
def fleet_diff(
    inputs: Annotated[
        list[str], typer.Argument(help="one folded file made with --per-host, or one folded file per host")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="the SVG to write")] = Path("outlier.svg"),
    title: Annotated[str | None, typer.Option("--title", help="graph title")] = None,
) -> None:
    """Draw the host whose profile differs most from the others' mean, as a normalised differential graph.

    One input: its root frames are the hosts (`fleet record --per-host --folded F`). Several: each file
    is one host, named by its file name without `.folded`."""
    from ..fleet.outlier import find_outlier
    from ..record import Status

    status = Status()
    profiles = _read_hosts(inputs)
    straggler = find_outlier(profiles)
    for host, distance in straggler.ranking:
        status.note(f"{host}: {100 * distance:.1f} % of its self time spent differently from the others")
    _write_outlier(straggler, output, title, status)


def _read_hosts(inputs: list[str]) -> dict[str, FoldedProfile]:
    from ..fleet.outlier import split_by_root
    from ..io.folded import read_folded_inputs
    from ..io.inputs import label

    refuse_binary(inputs)
    profiles = {}
    for path in inputs:
        diagnostics = Diagnostics()
        profiles[path] = read_folded_inputs([path], diagnostics).plain(label(path))
        diagnostics.finish()
    if len(inputs) == 1:
        return split_by_root(profiles[inputs[0]])
    named = {}
    for path, profile in profiles.items():
        name = Path(path).name.removesuffix(".gz").removesuffix(".folded")
        if name in named:
            raise BadOption(f"two inputs stand for the same host {name!r}: rename one")
        named[name] = profile
    return named
