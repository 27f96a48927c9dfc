"""`flamegraph render` (folded stacks -> SVG) and `flamegraph diff` (two profiles -> differential SVG)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Annotated, BinaryIO

import typer

from ..io.diagnostics import BadOption, Diagnostics
from .app import app
from .describe import describe_profile
from .inputs import check_terminal_output, open_in_browser, reading_stdin_note, refuse_wrong_input

DEFAULT_TITLE = "Flame Graph"  # flamegraph.render.options.DEFAULT_TITLE, without importing the renderer

# Options shared by both commands (flamegraph.pl's names).
Output = Annotated[
    Path | None, typer.Option("-o", "--output", metavar="FILE", help="write the SVG here (stdout when piped)")
]
Title = Annotated[
    str | None, typer.Option("--title", metavar="TEXT", help="title text (default: the capture's, or 'Flame Graph')")
]
Subtitle = Annotated[str | None, typer.Option("--subtitle", metavar="TEXT", help="second-level title")]
Width = Annotated[int, typer.Option("--width", metavar="PIXELS", help="image width in pixels")]
Height = Annotated[int, typer.Option("--height", metavar="PIXELS", help="height of each frame in pixels")]
FontSize = Annotated[float, typer.Option("--fontsize", metavar="SIZE", help="font size")]
FontType = Annotated[str, typer.Option("--fonttype", metavar="FONT", help="font family")]
MinWidth = Annotated[
    str,
    typer.Option(
        "--minwidth", metavar="PIXELS|N%", help="omit frames narrower than this: pixels, or a percentage like 0.5%"
    ),
]
CountName = Annotated[
    str | None, typer.Option("--countname", metavar="UNIT", help="count label (default: the profile's unit)")
]
NameType = Annotated[str, typer.Option("--nametype", metavar="TEXT", help="label before a frame's details")]
Reverse = Annotated[bool, typer.Option("--reverse", help="reverse each stack: merge from the leaf")]
Inverted = Annotated[bool, typer.Option("--inverted", help="icicle graph: root at the top")]
Negate = Annotated[bool, typer.Option("--negate", help="swap the differential hues (blue <-> red)")]
Factor = Annotated[float, typer.Option("--factor", metavar="X", help="multiply displayed counts by this")]
Notes = Annotated[str, typer.Option("--notes", metavar="TEXT", help="text stored in the SVG (its <desc>)")]
Highlight = Annotated[
    list[str] | None,
    typer.Option(
        "--highlight", metavar="REGEX[=COLOUR][:LABEL]", help="colour matching frames, with a legend (repeatable)"
    ),
]
Preset = Annotated[
    str | None, typer.Option("--preset", metavar="NAME", help="built-in highlight classes: onednn, mxnet-ops, python")
]
Top = Annotated[int, typer.Option("--top", metavar="N", help="rows of the self-time table (0: none)")]
Png = Annotated[Path | None, typer.Option("--png", metavar="FILE", help="also write a PNG of the static view")]
Strict = Annotated[bool, typer.Option("--strict", help="stop at the first malformed line (exit 3)")]
Event = Annotated[str | None, typer.Option("-e", "--event", metavar="EVENT", help="the sampled event, for the header")]
Unit = Annotated[
    str | None,
    typer.Option(
        "--unit",
        metavar="UNIT",
        help="the counts' unit: samples, microseconds (off-CPU), nanoseconds or events (perf script periods)",
    ),
]
Meta = Annotated[
    list[str] | None, typer.Option("--meta", metavar="KEY=VALUE", help="a capture fact for the header (repeatable)")
]
ShowIdle = Annotated[
    bool,
    typer.Option(
        "--show-idle", help="off-CPU: draw idle threads' idle stacks too (default: one line says whose)"
    ),
]
Open = Annotated[bool, typer.Option("--open", help="open the SVG in your web browser when it is written")]
# Views (flamegraph/analysis/views.py): applied to the profile before any output, SVG, PNG or export.
Focus = Annotated[
    str | None, typer.Option("--focus", metavar="REGEX", help="keep only the stacks through a matching frame")
]
FocusRoot = Annotated[
    bool, typer.Option("--focus-root", help="with --focus: start each stack at the (outermost) matching frame")
]
Ignore = Annotated[
    str | None, typer.Option("--ignore", metavar="REGEX", help="drop the stacks through a matching frame")
]
Hide = Annotated[
    str | None,
    typer.Option("--hide", metavar="REGEX", help="remove matching frames; their samples stay on the caller"),
]
CollapseRecursion = Annotated[
    bool, typer.Option("--collapse-recursion", help="merge consecutive calls of one function: a;a;a;b -> a;b")
]
Callers = Annotated[
    str | None,
    typer.Option(
        "--callers", metavar="REGEX", help="who calls the matching function: its call paths merged, rooted at it"
    ),
]
Callees = Annotated[
    str | None,
    typer.Option("--callees", metavar="REGEX", help="what the matching function calls, merged, rooted at it"),
]
StripRoot = Annotated[bool, typer.Option("--strip-root", help="drop the root frame (the process or thread)")]
MergePids = Annotated[
    bool, typer.Option("--merge-pids", help="drop the -PID (and /TID) suffix of the root: python-1234 -> python")
]
Order = Annotated[
    str,
    typer.Option("--order", metavar="name|weight", help="siblings by name, or by weight (widest on the left)"),
]
NoContext = Annotated[
    bool, typer.Option("--no-context", help="ignore FILE.json, the capture facts saved beside a folded FILE")
]


@app.command(short_help="Draw folded stacks as an interactive SVG flame graph.")
def render(
    inputs: Annotated[
        list[str] | None,
        typer.Argument(metavar="FOLDED", help="folded stacks (text or .gz), or - for stdin", show_default=False),
    ] = None,
    output: Output = None,
    title: Title = None,
    subtitle: Subtitle = None,
    width: Width = 1200,
    height: Height = 16,
    fontsize: FontSize = 12,
    fonttype: FontType = "Verdana",
    minwidth: MinWidth = "0.1",
    countname: CountName = None,
    nametype: NameType = "Function:",
    colors: Annotated[
        str | None,
        typer.Option(
            "--colors",
            metavar="PALETTE",
            help="palette: hot (default; io for off-CPU), mem, io, wakeup, chain, "
            "java, js, perl, python, red, green, blue, aqua, yellow, purple, orange",
        ),
    ] = None,
    hash_: Annotated[bool, typer.Option("--hash", help="colour by a hash of the function name")] = False,
    random_: Annotated[bool, typer.Option("--random", help="random colours (seeded: reproducible)")] = False,
    cp: Annotated[bool, typer.Option("--cp", help="consistent palette: read and extend ./palette.map")] = False,
    palette_file: Annotated[
        Path | None, typer.Option("--palette-file", metavar="FILE", help="like --cp, with this file")
    ] = None,
    reverse: Reverse = False,
    inverted: Inverted = False,
    flamechart: Annotated[
        bool, typer.Option("--flamechart", help="keep input (time) order; merge neighbours only")
    ] = False,
    negate: Negate = False,
    factor: Factor = 1.0,
    notes: Notes = "",
    highlight: Highlight = None,
    preset: Preset = None,
    top: Top = 10,
    show_idle: ShowIdle = False,
    event: Event = None,
    unit: Unit = None,
    meta: Meta = None,
    no_context: NoContext = False,
    png: Png = None,
    open_: Open = False,
    strict: Strict = False,
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="svg, or an export: speedscope, pprof (gzip'd profile.proto), folded (see `convert`)",
        ),
    ] = "svg",
    group_by: Annotated[
        str | None,
        typer.Option(
            "--group-by", metavar="op", help="op: re-root stacks at their [op] frame (profiles recorded with --mxnet)"
        ),
    ] = None,
    focus: Focus = None,
    focus_root: FocusRoot = False,
    ignore: Ignore = None,
    hide: Hide = None,
    collapse_recursion: CollapseRecursion = False,
    callers: Callers = None,
    callees: Callees = None,
    strip_root: StripRoot = False,
    merge_pids: MergePids = False,
    order: Order = "name",
) -> None:
    """Draw folded stacks (ours, flamegraph.pl's or inferno's) as an interactive SVG flame graph.

    Reads `a;b;c 42` lines; two counts per line (difffolded.pl's `stack BEFORE AFTER`) draw a
    differential graph. The capture facts saved beside a folded file (FILE.json, written by
    `fold -o`, `record --folded` and `offcpu --folded`) give the graph its title, event, unit and header.

    \b
    Examples:
      flamegraph render out.folded -o out.svg
      flamegraph render out.folded --preset onednn --top 20 --png out.png -o out.svg
      flamegraph render out.folded --callers gemm --hide '^std::' --order weight -o gemm-callers.svg
    """
    # The renderer (jinja2, layout) is imported where it runs: `flamegraph --help` imports every command module.
    from ..analysis.views import ViewOptions
    from ..io.writer import refuse_overwriting_input
    from ..pipeline.draw import DrawInput, draw_svg, read_for_drawing
    from ..render import RenderOptions
    from ..render.options import check_order

    check_order(order, flamechart)
    views = ViewOptions(
        focus=focus, focus_root=focus_root, ignore=ignore, hide=hide, collapse_recursion=collapse_recursion,
        callers=callers, callees=callees, strip_root=strip_root, merge_pids=merge_pids,
    ).compile()  # fmt: skip
    if group_by not in (None, "op"):
        raise BadOption(f"--group-by {group_by!r}: the only grouping is op")
    if group_by is not None and flamechart:
        raise BadOption("--group-by op re-roots merged stacks: it has no time order for --flamechart")
    paths = inputs or ["-"]
    if format_ == "svg":
        check_terminal_output(output, "the SVG")
    refuse_wrong_input(paths, "folded stacks", "render")
    refuse_overwriting_input(paths, [("-o", output), ("--png", png)])
    reading_stdin_note(paths, "folded stacks")
    request = DrawInput(paths, strict, flamechart, not no_context, group_by == "op", views)
    got = read_for_drawing(request, lambda side: describe_profile(side, event, unit, meta), _warn)
    if format_ != "svg":  # an export for another viewer (flamegraph/export); the SVG options do not apply
        from .convert_run import export_profile

        export_profile(got.read, format_, output, title or DEFAULT_TITLE, png)
        return
    palette_path = palette_file or (Path("palette.map") if cp else None)
    palette_map = _palette(palette_path, output, png, got.read.before is None)
    context, drawn_before = got.context, got.context is not None and not (preset or highlight)
    options = RenderOptions(
        title=title or got.title(DEFAULT_TITLE), subtitle=subtitle if subtitle is not None else
        (context.subtitle if context else None),
        width=width, frame_height=height, font_size=fontsize, font_type=fonttype,
        min_width=minwidth, count_name=countname, name_type=nametype, colors=colors, hash=hash_, random=random_,
        palette_map=palette_map, inverted=inverted, reverse=reverse,
        flamechart=flamechart, negate=negate, factor=factor, notes=notes,
        highlights=list(highlight or (context.highlight_rules() if drawn_before and context else [])),
        preset=preset or (context.preset if drawn_before and context else None), top=top, show_idle=show_idle,
        order=order, views=got.applied,
    )  # fmt: skip
    _write(draw_svg(got, options), output, png, open_)
    if palette_path is not None and palette_map is not None:
        from ..color import format_palette
        from ..io.writer import write_atomically

        write_atomically(palette_path, partial(_put, format_palette(palette_map)))


def _palette(path: Path | None, output: Path | None, png: Path | None, used: bool) -> dict[str, str] | None:
    """--cp / --palette-file: never one of the outputs; read when `used` (a missing file is an empty palette)."""
    if path is None:
        return None
    _check_distinct(path, output, png)
    from .palette import load_palette

    return load_palette(path) if used else None


def _warn(text: str) -> None:
    typer.echo(text, err=True)


@app.command(short_help="Draw what changed between two profiles (differential graph).")
def diff(
    before: Annotated[str, typer.Argument(metavar="BEFORE", help="folded stacks BEFORE the change (text, .gz, or -)")],
    after: Annotated[str, typer.Argument(metavar="AFTER", help="folded stacks AFTER the change")],
    output: Output = None,
    title: Title = None,
    subtitle: Subtitle = None,
    width: Width = 1200,
    height: Height = 16,
    fontsize: FontSize = 12,
    fonttype: FontType = "Verdana",
    minwidth: MinWidth = "0.1",
    countname: CountName = None,
    nametype: NameType = "Function:",
    normalize: Annotated[bool, typer.Option("--normalize", help="scale BEFORE to AFTER's total first")] = False,
    negate: Negate = False,
    diff_width: Annotated[
        str,
        typer.Option(
            "--diff-width",
            metavar="max|after|before",
            help="frame widths: max (of before and after; nothing vanishes), after, before",
        ),
    ] = "max",
    reverse: Reverse = False,
    inverted: Inverted = False,
    factor: Factor = 1.0,
    notes: Notes = "",
    highlight: Highlight = None,
    preset: Preset = None,
    top: Top = 10,
    event: Event = None,
    unit: Unit = None,
    meta: Meta = None,
    no_context: NoContext = False,
    png: Png = None,
    open_: Open = False,
    strict: Strict = False,
    strip_root: StripRoot = False,
    merge_pids: MergePids = False,
    order: Order = "name",
) -> None:
    """Draw a differential flame graph: red where AFTER has more self time than BEFORE, blue where less.

    Each side's capture facts (FILE.json beside it) give its event, unit and header lines. Sides in
    different units (samples, microseconds) are compared only as shares (--normalize). The root frame
    is the process: two programs (burn1, burn2) compare with --strip-root, two runs with --merge-pids.

    \b
    Examples:
      flamegraph diff before.folded after.folded -o diff.svg
      flamegraph diff before.folded after.folded --normalize --preset onednn -o diff.svg --open
      flamegraph diff burn1.folded burn2.folded --strip-root -o diff.svg
    """
    from ..analysis.views import ViewOptions, apply_views, roots_advice
    from ..io.folded import read_folded_inputs
    from ..io.inputs import label
    from ..io.writer import refuse_overwriting_input
    from ..pipeline.draw import read_context
    from ..render import RenderOptions, render_diff
    from ..render.diff import events_differ
    from ..render.options import check_order

    check_order(order, False)
    views = ViewOptions(strip_root=strip_root, merge_pids=merge_pids).compile()
    if before == "-" and after == "-":
        raise BadOption("BEFORE and AFTER cannot both be stdin")
    check_terminal_output(output, "the SVG")
    refuse_wrong_input([before, after], "folded stacks", "diff")
    refuse_overwriting_input([before, after], [("-o", output), ("--png", png)])
    diagnostics = Diagnostics(strict=strict)
    old, new = (read_folded_inputs([path], diagnostics).plain(label(path)) for path in (before, after))
    diagnostics.finish()
    for path, profile in ((before, old), (after, new)):
        context = None if no_context else read_context([path], _warn)
        if context is not None:
            context.apply(profile)
        describe_profile(profile, event, unit, meta)
    applied = None
    if views.steps:
        old, _ = apply_views(old, views, allow_empty=True)
        new, applied = apply_views(new, views, allow_empty=True)
    advice = None if strip_root else roots_advice(old, new)
    options = RenderOptions(
        title=title or DEFAULT_TITLE, subtitle=subtitle, width=width, frame_height=height, font_size=fontsize,
        font_type=fonttype, min_width=minwidth, count_name=countname, name_type=nametype, inverted=inverted,
        reverse=reverse, negate=negate, factor=factor, notes=notes, highlights=list(highlight or []), preset=preset,
        normalize=normalize, top=top, diff_width=diff_width, order=order, views=applied,
    )  # fmt: skip
    svg = render_diff(old, new, options)
    if advice is not None:  # once the graph is drawn: a refusal stays one line
        typer.echo(f"note: BEFORE and AFTER share no root frame, so every stack is new or gone: {advice}", err=True)
    if (differ := events_differ(old, new)) is not None:  # the header says both events too
        typer.echo(differ, err=True)
    _write(svg, output, png, open_)


def _check_distinct(palette: Path, *outputs: Path | None) -> None:
    """The palette file must not be the SVG or the PNG: one would overwrite the other."""
    for output in outputs:
        if output is not None and str(output) != "-" and os.path.realpath(output) == os.path.realpath(palette):
            raise BadOption(f"--palette-file {palette}: is also an output of this run")


def _write(svg: bytes, output: Path | None, png: Path | None, open_: bool = False) -> None:
    from ..io.writer import write_atomically
    from ..render import render_png

    if png is not None:
        image = render_png(svg)  # before the SVG, so a missing cairosvg leaves no half-done output
        write_atomically(png, partial(_put, image))
    write_atomically(output, partial(_put, svg))
    if open_:
        open_in_browser(output)


def _put(data: bytes, out: BinaryIO) -> None:
    out.write(data)
