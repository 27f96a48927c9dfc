"""The files one profile becomes, each optional: the folded text with its facts beside it (FILE.json),
the SVG, a PNG of its static view, the exports. Checked before anything is recorded, written through
the one safe writer, each announced.

    outputs = Outputs(svg=Path("out.svg"), render=RenderOptions(title="train"), folded=Path("out.folded"))
    outputs.check()                                   # before recording: a typo must not cost a recording
    written = write_outputs(profile, outputs, note)   # Written(svg=..., folded=..., png=None, exports=())
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..export import ExportRequest

if TYPE_CHECKING:
    from ..folding.perf import FoldOptions
    from ..folding.perf_sched import OffCpuOptions
    from ..io.sidecar import Context
    from ..model import FoldedProfile
    from ..record import Recording
    from ..render import RenderOptions
    from ..window import Window


@dataclass(frozen=True)
class Outputs:
    """What to write. `render` is how the graph is drawn (the SVG needs it), saved in FILE.json beside
    --folded so that `flamegraph render FILE` draws it alike; `svg` None writes no SVG (and no PNG)."""

    svg: Path | None = None
    render: RenderOptions | None = None
    folded: Path | None = None
    png: Path | None = None
    exports: ExportRequest = ExportRequest()
    derived: bool = False  # names we picked (an interval's STEM-001.svg): a link there is replaced, never followed

    def check(self, *also: Path | None) -> None:
        """Every output (and `also`: perf.data, fleet's outlier SVG) can be written, and a PNG can be drawn:
        checked before recording."""
        from ..io.writer import SMALLEST_GRAPH, check_room, check_writable

        png = self.png if self.svg is not None else None
        for path in (self.svg, self.folded, *(path for _, path in self.exports.files), *also, png):
            check_writable(path)
        for path in (self.folded, *(path for _, path in self.exports.files), *also, png):
            check_room(path)  # a full disk: an empty probe file takes no block, so check_writable passes
        check_room(self.svg, SMALLEST_GRAPH if self.render is not None else 1)
        if png is not None:
            from ..render.png import check_png

            check_png()


@dataclass
class Written:
    """The files a pipeline wrote."""

    svg: Path | None = None
    folded: Path | None = None
    png: Path | None = None
    exports: tuple[Path, ...] = field(default_factory=tuple)


def drawn_with(options: RenderOptions | None) -> dict[str, object]:
    """How the graph was drawn, saved beside the folded file so `render` draws it the same way."""
    if options is None:
        return {}
    rules = [rule for rule in options.highlights if isinstance(rule, str)]
    return {"title": options.title, "subtitle": options.subtitle, "preset": options.preset, "highlights": rules}


def write_outputs(profile: FoldedProfile, outputs: Outputs, note: Callable[[str], None]) -> Written:
    """The folded text (FILE.json beside it), the SVG and its PNG, each written atomically and announced."""
    from ..io.sidecar import Context
    from ..io.writer import write_results
    from ..render import render_svg

    options = outputs.render
    svg = outputs.svg if options is not None else None
    png = outputs.png if svg is not None else None
    context = Context.of(profile, **drawn_with(options))
    draw = (lambda: render_svg(profile, options)) if options is not None else (lambda: b"")
    with _kept_if_lost(profile, outputs, context, note, delivered=False):  # the folded file itself failed
        write_results(profile, outputs.folded, None, draw, note, context, None, outputs.derived)
    with _kept_if_lost(profile, outputs, context, note):
        write_results(profile, None, svg, draw, note, context, png, outputs.derived)
    return Written(svg, outputs.folded, png)


@contextmanager
def _kept_if_lost(
    profile: FoldedProfile, outputs: Outputs, context: Context, note: Callable[[str], None], delivered: bool = True
) -> Iterator[None]:
    """An output that cannot be written (a disk that filled during the run) must not cost the recording:
    unless `outputs.folded` was written (`delivered`), the stacks are kept in a new private directory, said."""
    from ..io.diagnostics import OutputFailed

    try:
        yield
    except OutputFailed:
        if outputs.folded is None or not delivered:
            from .scratch import keep_folded

            keep_folded(profile, context, _stem(outputs), note)
        raise


def _stem(outputs: Outputs) -> str:
    """The name the outputs were given (`x` of `-o full/x.svg`), for the kept folded file."""
    for path in (outputs.svg, outputs.folded, *(path for _, path in outputs.exports.files)):
        if path is not None and str(path) != "-" and path.stem:
            return path.name.split(".")[0] or path.stem
    return "profile"


def write_exports(
    profile: FoldedProfile,
    outputs: Outputs,
    recording: Recording,
    note: Callable[[str], None],
    timeline: FoldOptions | None = None,
    window: Window | None = None,
    offcpu: OffCpuOptions | None = None,
    pid: int | None = None,
) -> tuple[Path, ...]:
    """--speedscope/--pprof/--chrome-trace of a recording; the Chrome trace re-reads the recording in time
    order with the fold's options (`timeline`, or `offcpu` for waits)."""
    if not outputs.exports:
        return ()
    from ..export.files import write_recording_exports
    from ..io.sidecar import Context

    context = Context.of(profile, **drawn_with(outputs.render))
    with _kept_if_lost(profile, outputs, context, note):
        write_recording_exports(outputs.exports, profile, recording, note, timeline, window, offcpu, pid)
    return tuple(path for _, path in outputs.exports.files)
