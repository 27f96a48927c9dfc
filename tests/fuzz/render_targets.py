"""Fuzz targets of the drawing side: folded text (render, diff, flame chart), palette files,
`--highlight` specs and render options."""

from __future__ import annotations

import math
import re
import sys
import xml.etree.ElementTree as ET

from flamegraph.color import (
    HUES,
    PALETTES,
    BadPalette,
    Highlighter,
    format_palette,
    parse_highlight,
    parse_palette,
    resolve_highlights,
)
from flamegraph.io.diagnostics import BadOption, Diagnostics, FlamegraphError
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_diff, render_svg

from .common import check_folded_round_trip, check_svg, lines_of
from .source import Source


# -- folded text (render, diff) -------------------------------------------------------------------
def render_choices(source: Source) -> RenderOptions:
    reverse, inverted, flamechart, hashed, randomized, with_palette, negate, normalize = source.flags(8)
    palette = source.choice(PALETTES)
    return RenderOptions(
        reverse=reverse,
        inverted=inverted,
        flamechart=flamechart,
        hash=hashed,
        random=randomized,
        colors=palette if with_palette else None,
        negate=negate,
        normalize=normalize,
        min_width=source.choice(("0.1", "0", "1", "0.5%", "50%", "100%", ".5")),
        top=source.byte() % 12,
        diff_width=source.choice(("max", "after", "before")),
    )


def _records(lines: list[bytes]) -> list[tuple[str, float]]:
    """The records in input order, repeats kept, as --flamechart reads them."""
    in_order: list[tuple[str, float]] = []
    read_folded(lines, "in", Diagnostics(echo=False), in_order=in_order)
    return in_order


def folded_text(data: bytes) -> None:
    """Folded text: read, written and read again unchanged; the flame chart reader keeps the same
    records; any profile renders as well-formed SVG, alone and as a diff."""
    source = Source(data)
    options = render_choices(source)
    lines = lines_of(source.rest())
    diagnostics = Diagnostics(echo=False)
    profile = read_folded(lines, "in", diagnostics)
    assert all(w >= 0 for w in profile.counts.values()), profile.counts
    in_order: dict[str, float] = {}
    for stack, count in _records(lines):  # the flame chart's reader, summed as read_folded sums
        in_order[stack] = in_order.get(stack, 0) + count
    assert in_order == profile.counts, "the flame chart reader sees other records"
    if all(count <= sys.float_info.max for count in profile.counts.values()):
        check_folded_round_trip(profile)  # (a sum past a float is refused when drawn: BadCounts)
    drawable = 0 < profile.total < math.inf
    try:
        svg = render_svg(profile, options, _records(lines) if options.flamechart else None)
    except FlamegraphError:
        assert not drawable or options.flamechart, "a drawable profile was refused"
    else:
        assert drawable, "drew a profile with nothing (or too much) to draw"
        check_svg(svg, profile.total)
    half = len(lines) // 2
    before = read_folded(lines[:half], "a", Diagnostics(echo=False))
    after = read_folded(lines[half:], "b", Diagnostics(echo=False))
    try:
        svg = render_diff(before, after, options)
    except FlamegraphError:
        pass
    else:
        ET.fromstring(svg)


# -- palette files (--cp, --palette-file) ---------------------------------------------------------
def palette_file(data: bytes) -> None:
    """Palette text of any bytes: parsed or refused at a line; a palette is used, extended, and what the
    renderer leaves in the map is written and read back without losing a colour."""
    source = Source(data)
    names = [source.text(30) for _ in range(source.byte() % 4)]
    text = source.rest().decode("utf-8", "surrogateescape")
    try:
        colors = parse_palette(text)
    except BadPalette as bad:
        assert 1 <= bad.line <= text.count("\n") + 1, bad
        assert text.split("\n")[bad.line - 1].removesuffix("\r") == bad.text, bad
        return
    assert parse_palette(format_palette(colors).decode("utf-8", "surrogateescape")) == colors, "palette round trip"
    # Frame names as folded text can hold them: no ';' (the separator) nor '\n' (the line end).
    stacks = {f"p;{name}" if name else "p": 1.0 for name in [*colors, *names] if not {";", "\n"} & set(name)}
    profile = FoldedProfile(stacks or {"p": 1.0})
    palette_map = dict(colors)
    svg = render_svg(profile, RenderOptions(palette_map=palette_map))
    ET.fromstring(svg)
    for name, color in colors.items():
        assert palette_map.get(name) == color, f"palette entry {name!r} lost or changed"
    written = format_palette(palette_map).decode("utf-8", "surrogateescape")
    assert parse_palette(written) == palette_map, "the extended palette does not read back"


# -- --highlight specs ----------------------------------------------------------------------------
NAMES = ("mxnet::Engine::Push", "dnnl::impl::gemm", "jit_avx512_gemm_[j]", "std::vector<int>::at", "[unknown]", "")


def highlight_spec(data: bytes) -> None:
    """`REGEX[=COLOUR][:LABEL]`: a rule or BadOption; a rule colours, labels and renders."""
    source = Source(data)
    preset = source.choice((None, "onednn", None, None))
    base = source.choice(PALETTES)
    # Up to three specs separated by NUL (argv cannot hold one), then a frame name to match.
    pieces = source.rest().decode("utf-8", "surrogateescape").split("\0")
    specs, extra = pieces[:3], "\0".join(pieces[3:])
    try:
        rules = [parse_highlight(spec) for spec in specs]
        resolved = resolve_highlights(rules, preset, base)
    except BadOption:
        return
    for rule, spec in zip(rules, specs, strict=True):
        assert rule.pattern and spec.startswith(rule.pattern), (rule, spec)
        assert rule.color is None or re.fullmatch(r"#[0-9a-f]{3}|#[0-9a-f]{6}|" + "|".join(HUES), rule.color)
    highlighter = Highlighter(resolved)
    for name in (*NAMES, extra):
        index = highlighter.class_of(name)
        if index >= 0:
            assert re.fullmatch(r"#[0-9a-f]{6}|#[0-9a-f]{3}", highlighter.fill(index, name)), highlighter.fill(
                index, name
            )
    profile = FoldedProfile({f"p;{n}" if n else "p": 1.0 for n in (*NAMES, extra) if ";" not in n})
    svg = render_svg(profile, RenderOptions(highlights=list(specs), preset=preset, colors=base))
    check_svg(svg, profile.total)


# -- render options -------------------------------------------------------------------------------
def render_options(data: bytes) -> None:
    """Any option values: BadOption, or a well-formed SVG."""
    source = Source(data)
    width = source.integer(3) - 100
    height = source.byte() - 10
    font = source.integer(2) / 64 - 10
    factor = source.choice((1.0, 0.5, 1e-300, 1e300, math.inf, math.nan, -1.0, 0.0, 3.0, 1e-6))
    options = RenderOptions(
        title=source.text(), subtitle=source.text() or None, width=width, frame_height=height, font_size=font,
        font_type=source.text(), min_width=source.text(10), count_name=source.text() or None,
        name_type=source.text(), colors=source.choice((None, *PALETTES, "rainbow")), factor=factor,
        notes=source.text(), top=source.byte() - 5, inverted=source.flags(1)[0],
    )  # fmt: skip
    names = source.rest().decode("utf-8", "surrogateescape").split("\n")[:20]
    counts = {f"all;{n}": float(1 + i * 7) for i, n in enumerate(names)}
    profile = FoldedProfile(counts, unit=source.choice(("samples", "microseconds")))
    try:
        svg = render_svg(profile, options)
    except BadOption:
        return
    check_svg(svg, profile.total)
