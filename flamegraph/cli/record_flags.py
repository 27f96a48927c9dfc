"""What `record` and `offcpu` share: the target (a command after -- or --pid), the --call-graph and
--window parsers, the options every recording command has, the checks made before recording and the
graph's options (`render_options`, also for `fleet record`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..export import ExportRequest
from ..io.diagnostics import BadOption
from .numbers import finite

if TYPE_CHECKING:
    from ..pipeline.outputs import Outputs
    from ..record import Status
    from ..render import RenderOptions

Command = Annotated[
    list[str] | None,
    typer.Argument(metavar="COMMAND", help="the program to profile and its arguments, after --", show_default=False),
]
Duration = Annotated[
    float | None,
    typer.Option(
        "--duration",
        metavar="SECONDS",
        parser=finite("--duration", 0.1),
        help="stop after this long, at least 0.1 (default: exit/Ctrl-C)",
    ),
]
Every = Annotated[
    float | None,
    typer.Option(
        "--every",
        metavar="SECONDS",
        parser=finite("--every", 1.0),
        help="also a graph per interval of this long (STEM-001.svg, .folded) and STEM-trend.svg; folds as it "
        "records (as --max-spool)",
    ),
]
MaxSpool = Annotated[
    str | None,
    typer.Option(
        "--max-spool",
        metavar="SIZE",
        help="fold while recording with at most SIZE of raw data on disk (default 256M; 0: record whole)",
    ),
]
PerfData = Annotated[
    Path | None,
    typer.Option("--perf-data", metavar="FILE", help="record whole into FILE and keep it (default: none kept)"),
]
Title = Annotated[str | None, typer.Option("--title", metavar="TEXT", help="graph title")]
NoSvg = Annotated[bool, typer.Option("--no-svg", help="write only --folded and the exports")]
Output = Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="the SVG to write")]
Folded = Annotated[
    Path | None,
    typer.Option("--folded", metavar="FILE", help="also write the folded stacks here (and FILE.json beside it)"),
]
Pid = Annotated[int | None, typer.Option("--pid", "-p", metavar="PID", help="profile this running process instead")]
# The graph options `record`, `offcpu` and `fleet record` share (named as `render` names them).
Preset = Annotated[
    str | None, typer.Option("--preset", metavar="NAME", help="highlight preset: onednn, mxnet-ops, python")
]
Highlight = Annotated[
    list[str] | None,
    typer.Option("--highlight", metavar="REGEX[=COLOUR][:LABEL]", help="highlight class (repeatable)"),
]
Threads = Annotated[bool, typer.Option("--threads", help="one root per thread (comm-pid/tid)")]
Width = Annotated[int, typer.Option("--width", metavar="PIXELS", help="image width in pixels")]
Top = Annotated[int, typer.Option("--top", metavar="N", help="rows of the self-time table (0: none)")]
Png = Annotated[Path | None, typer.Option("--png", metavar="FILE", help="also write a PNG of the static view")]
PythonFrames = Annotated[
    bool | None,
    typer.Option(
        "--python/--no-python",
        help="the Python functions of a Python 3.12+ command as frames (PYTHONPERFSUPPORT=1, unwind info for its "
        "perf trampolines, perf inject --jit); default: on for one",
        show_default=False,
    ),
]
KeepInterpreter = Annotated[
    bool,
    typer.Option(
        "--keep-interpreter",
        help="keep CPython's own frames between two Python functions (_PyEval_EvalFrameDefault, "
        "PyObject_Vectorcall...; default: folded away, their time on the Python function)",
    ),
]
Open = Annotated[bool, typer.Option("--open", help="open the SVG in your web browser when it is written")]


def parse_call_graph_option(text: str) -> str:
    """--call-graph's callback: perf's spelling, or one usage line."""
    from ..record.spec import parse_call_graph  # here: --help shows the defaults without the recorder

    try:
        return parse_call_graph(text)
    except ValueError as err:
        raise BadOption(str(err)) from None


def check_request(command: Sequence[str] | None, pid: int | None, no_svg: bool, folded: Path | None,
                  exports: ExportRequest) -> None:  # fmt: skip
    """One target, and something to write: checked before anything is recorded."""
    if bool(command) == (pid is not None):
        raise BadOption("give either --pid PID or -- COMMAND ARGS, not both and not neither")
    if no_svg and folded is None and not exports:
        raise BadOption("--no-svg needs --folded or an export (--speedscope, --pprof, --chrome-trace)")


def stdout_taken(no_svg: bool, output: Path, folded: Path | None, exports: ExportRequest) -> bool:
    """Whether an output goes to stdout (`-`): the command's own prints must not end up in it."""
    paths = (None if no_svg else output, folded, *(path for _, path in exports.files))
    return any(path is not None and str(path) == "-" for path in paths)


def check_every(every: float | None, no_svg: bool, output: Path, folded: Path | None) -> None:
    """--every names its files after the SVG (or --folded with --no-svg): stdout gives no name to take."""
    option, base = ("--folded", folded) if no_svg else ("-o", output)
    if every is not None and base is not None and str(base) == "-":
        raise BadOption(
            f"--every names its files after {option}'s (STEM-001.*, STEM-trend.svg): {option} - (stdout) has no "
            f"name to take; give {option} FILE"
        )


def render_options(
    name: str,
    title: str | None,
    subtitle: str,
    preset: str | None,
    highlights: list[str],
    width: int = 1200,
    top: int = 10,
    memory: bool = False,
    palette: str | None = None,
    show_idle: bool = False,
) -> RenderOptions:
    """The SVG's options, checked before anything is recorded (a typo must not cost a recording)."""
    from ..color import HighlightRule, resolve_highlights
    from ..render import RenderOptions

    rules: list[str | HighlightRule] = list(highlights)
    what = "memory" if memory else "on-CPU"
    options = RenderOptions(
        title=title or f"{name}: {what}", subtitle=subtitle, preset=preset, highlights=rules, width=width, top=top,
        show_idle=show_idle,
    )  # fmt: skip
    options.check()
    resolve_highlights(options.highlights, options.preset, palette or ("mem" if memory else "hot"))
    return options


def say_whole(note: str | None, outputs: Outputs, perf_data: Path | None, status: Status) -> None:
    """The "recorded whole" line, once every check that can refuse the run has passed (a refused run says only
    why it was refused)."""
    if note is not None:
        outputs.check(perf_data)
        status.note(note)
