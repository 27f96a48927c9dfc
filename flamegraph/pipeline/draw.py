"""The pipeline of `flamegraph render`: folded stacks (ours, flamegraph.pl's, inferno's; plain or
differential) -> their capture facts (FILE.json beside a single input) -> MXNet's group by operator ->
the views (focus, callers, hide...) -> the SVG (or an export: `export.write`).

    got = read_for_drawing(DrawInput(["out.folded"], views=ViewOptions(callers="gemm").compile()))
    svg = draw_svg(got, RenderOptions(title=got.title("Flame Graph"), views=got.applied))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis.views import Applied, Views
    from ..io.folded import FoldedRead
    from ..io.sidecar import Context
    from ..model import FoldedProfile
    from ..render import RenderOptions


@dataclass(frozen=True)
class DrawInput:
    """The folded inputs to draw and what is done to them before drawing."""

    inputs: list[str]  # ["-"]: stdin
    strict: bool = False  # stop at the first malformed line
    keep_order: bool = False  # --flamechart: each record in input order
    context: bool = True  # read the capture facts saved beside a single folded file
    group_by_op: bool = False  # re-root stacks at their [op] frame (recorded with --mxnet)
    views: Views | None = None


@dataclass
class ReadForDrawing:
    read: FoldedRead  # the profile (AFTER of a differential input), its BEFORE, the records in order
    context: Context | None  # the capture facts, and how the graph was drawn when recorded
    applied: Applied | None  # the views applied, for the header

    def title(self, default: str) -> str:
        return self.context.title if self.context is not None and self.context.title else default


def read_for_drawing(
    request: DrawInput,
    describe: Callable[[FoldedProfile], None] = lambda _profile: None,
    warn: Callable[[str], None] = print,
) -> ReadForDrawing:
    """Read, give each side its facts (`describe`: the command's --event/--unit/--meta), group, apply the views."""
    from ..analysis.views import apply_views
    from ..io.diagnostics import Diagnostics
    from ..io.folded import read_folded_inputs

    diagnostics = Diagnostics(strict=request.strict)
    read = read_folded_inputs(request.inputs, diagnostics, keep_order=request.keep_order)
    context = read_context(request.inputs, warn) if request.context else None
    sides = [side for side in (read.profile, read.before) if side is not None]
    for side in sides:
        if context is not None:
            context.apply(side)
    if request.group_by_op:
        from ..frameworks.mxnet.views import group_by_op  # only for this option: start-up stays lean

        read.profile = group_by_op(read.profile)
        read.before = group_by_op(read.before) if read.before is not None else None
    diagnostics.finish()
    for described in (read.profile, read.before):
        if described is not None:
            describe(described)
    applied = None
    views = request.views
    if views is not None and views.steps:
        if read.before is not None:  # a differential file: both sides seen the same way
            read.before, _ = apply_views(read.before, views, allow_empty=True)
        read.profile, applied = apply_views(read.profile, views)
        if read.stacks is not None:
            read.stacks = views.map_stacks(read.stacks)
    return ReadForDrawing(read, context, applied)


def read_context(paths: list[str], warn: Callable[[str], None]) -> Context | None:
    """The capture facts beside a single folded file (several inputs, or stdin, have none)."""
    from ..io.sidecar import read_sidecar

    if len(paths) != 1 or paths[0] == "-":
        return None
    context, note = read_sidecar(paths[0])
    if note is not None:
        warn(f"warning: {note}")
    return context


def draw_svg(got: ReadForDrawing, options: RenderOptions) -> bytes:
    """The flame graph, or for a differential input the differential graph (flamegraph.pl's geometry)."""
    from ..io.diagnostics import BadOption
    from ..render import render_diff, render_svg

    read = got.read
    if read.before is None:
        return render_svg(read.profile, options, read.stacks)
    if options.flamechart:
        raise BadOption("--flamechart: two-count (differential) input has no time order to keep")
    options.diff_width = "after"  # flamegraph.pl's geometry for difffolded input
    return render_diff(read.before, read.profile, options)
