"""render_diff: red grew, blue shrank, vanished frames stay visible, --normalize, --negate, tooltips."""

from __future__ import annotations

from collections import defaultdict

import pytest
from helpers.svg import SVG, frames, parse, paths, texts
from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.color import MIN_CONTRAST, contrast, diff_color, label_fill
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_diff

BEFORE = {"main;compute;gemm": 50, "main;compute;relu": 10, "main;io;read": 20, "main;gone": 15}
AFTER = {"main;compute;gemm": 30, "main;compute;relu": 12, "main;io;read": 45, "main;new": 5}


def rgb(fill: str) -> tuple[int, int, int]:
    return int(fill[1:3], 16), int(fill[3:5], 16), int(fill[5:7], 16)


def drawn(before: dict[str, float], after: dict[str, float], **options: object) -> dict:  # type: ignore[type-arg]
    svg = render_diff(FoldedProfile(dict(before)), FoldedProfile(dict(after)), RenderOptions(**options))  # type: ignore[arg-type]
    return {path: frame for path, frame in paths(frames(svg)).items() if path}


def test_colours_follow_the_change_of_self_time() -> None:
    graph = drawn(BEFORE, AFTER)
    red, green, blue = rgb(graph[("main", "io", "read")].fill)
    assert (red, green, blue) == (255, 0, 0)  # the largest growth: full red
    assert (
        rgb(graph[("main", "compute", "gemm")].fill)[2] == 255 and rgb(graph[("main", "compute", "gemm")].fill)[0] < 100
    )
    assert rgb(graph[("main", "compute", "relu")].fill)[0] == 255  # grew a little: pale red
    assert graph[("main", "compute")].fill == "#ffffff"  # no self time of its own


def test_vanished_and_new_frames_are_both_visible() -> None:
    graph = drawn(BEFORE, AFTER)
    gone = graph[("main", "gone")]
    assert gone.width == 15 and rgb(gone.fill)[2] == 255 and rgb(gone.fill)[0] < 255
    assert gone.title == "gone (before 15, after 0 samples: -15 / -100.0%; self -15; 0.00% of after)"
    assert graph[("main", "new")].title.startswith("new (before 0, after 5 samples: +5 / new; self +5;")
    only_after = drawn(BEFORE, AFTER, diff_width="after")  # flamegraph.pl's geometry: the vanished frame is lost
    assert ("main", "gone") not in only_after and only_after[("main", "io", "read")].width == 45


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["m;a", "m;a;b", "m;c", "x", "m;a;d", "m;a b", "m;a+b;e"]), st.integers(0, 100), min_size=1
    ),
    st.dictionaries(
        st.sampled_from(["m;a", "m;a;b", "m;c", "y", "m;a;d", "m;a b;f", "m;a+b"]), st.integers(0, 100), min_size=1
    ),
)
def test_widths_are_max_per_stack_and_titles_carry_both_counts(before: dict, after: dict) -> None:  # type: ignore[type-arg]
    stacks = set(before) | set(after)
    if not any(max(before.get(s, 0), after.get(s, 0)) for s in stacks):
        return
    expected: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for stack in stacks:
        old, new = before.get(stack, 0), after.get(stack, 0)
        parts = tuple(stack.split(";"))
        for depth in range(1, len(parts) + 1):
            entry = expected[parts[:depth]]
            entry[0] += max(old, new)
            entry[1] += old
            entry[2] += new
    graph = drawn(before, after, min_width="0")
    assert {p: f.width for p, f in graph.items()} == {p: e[0] for p, e in expected.items() if e[0] > 0}
    for path, frame in graph.items():
        unit = "sample" if expected[path][2] == 1 else "samples"  # "1 sample", as every count is written
        assert f"(before {expected[path][1]:,.0f}, after {expected[path][2]:,.0f} {unit}" in frame.title


def test_normalize_scales_before_to_the_after_total() -> None:
    before = {"m;a": 100, "m;b": 100}
    after = {"m;a": 50, "m;b": 150}
    graph = drawn(before, after, normalize=True)
    assert graph[("m", "a")].title.startswith("a (before 100, after 50 samples: -50 / -50.0%")
    doubled = drawn({k: 2 * v for k, v in before.items()}, after, normalize=True)
    assert doubled[("m", "a")].title == graph[("m", "a")].title  # only the shares matter
    summary = texts(
        render_diff(FoldedProfile(before), FoldedProfile({"m;a": 25, "m;b": 75}), RenderOptions(normalize=True)),
        "summary",
    )
    assert "(BEFORE normalized x0.5 to AFTER's total)" in summary[0]


def test_negate_swaps_the_hues() -> None:
    plain = drawn(BEFORE, AFTER)
    negated = drawn(BEFORE, AFTER, negate=True)
    for path, frame in plain.items():
        red, green, blue = rgb(frame.fill)
        assert rgb(negated[path].fill) == (blue, green, red)


def test_header_legend_and_table() -> None:
    before = FoldedProfile(dict(BEFORE), event="cpu-clock", metadata={"host": "vm", "backend": "oneDNN"})
    after = FoldedProfile(dict(AFTER), event="cpu-clock", metadata={"host": "vm", "backend": "OpenBLAS"})
    svg = render_diff(before, after, RenderOptions(highlights=["gemm:BLAS"]))
    summary = texts(svg, "summary")
    assert summary[0].startswith("cpu-clock · BEFORE 95 samples -> AFTER 92 samples · width: max(before, after)")
    assert texts(svg, "facts")[1:] == ["host: vm", "backend: before oneDNN · after OpenBLAS"]
    legend = texts(svg, "legend")
    assert legend[0].startswith("grew") and legend[1].startswith("shrank")
    assert legend[2] == "BLAS 52.63 % -> 32.61 %"
    table = texts(svg, "top")
    assert table[1:4] == ["+25 (+125.0%)", "20 -> 45", "read"]
    assert table[7:10] == ["-15 (-100.0%)", "15 -> 0", "gone"]


def test_empty_diff() -> None:
    from flamegraph.io.diagnostics import NoSamples

    with pytest.raises(NoSamples):
        render_diff(FoldedProfile(), FoldedProfile(), RenderOptions())


BLACK, WHITE = (0, 0, 0), (255, 255, 255)
# Every fill the diff scale draws: white, and 211 shades of each hue (fade 0..210).
DIFF_FILLS = ["#ffffff", *(f"#ff{f:02x}{f:02x}" for f in range(211)), *(f"#{f:02x}{f:02x}ff" for f in range(211))]


def ink(fill: str) -> tuple[int, int, int]:
    return rgb(label_fill(fill) or "#000000")


def test_every_diff_fill_has_readable_text() -> None:
    """newcomer10 a-F10: the frame that changed most (#0000ff) had black text at 2.4:1. Every fill of the
    scale now has a label colour at WCAG AA (4.5:1) or better, and black stays wherever it passes."""
    deltas = [step / 16 for step in range(-16 * 210, 16 * 210 + 1)] + [-1e-20, 1e-20]  # the palest shades
    drawn_fills = {diff_color(delta, 210) for delta in deltas}
    assert drawn_fills <= set(DIFF_FILLS) and len(drawn_fills) == len(DIFF_FILLS)  # the whole scale
    for fill in DIFF_FILLS:
        assert contrast(rgb(fill), ink(fill)) >= MIN_CONTRAST, fill
        assert (label_fill(fill) is None) == (contrast(rgb(fill), BLACK) >= MIN_CONTRAST), fill
    assert contrast(rgb("#0000ff"), BLACK) < 2.5 and ink("#0000ff") == WHITE
    assert ink("#ff0000") == BLACK  # red passes with black (5.3:1): the reference's look kept


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e300, 1e300, allow_nan=False), st.floats(1e-300, 1e300, allow_nan=False))
def test_any_change_is_drawn_with_readable_text(delta: float, max_delta: float) -> None:
    fill = diff_color(delta, max(max_delta, abs(delta)))
    assert fill in DIFF_FILLS and contrast(rgb(fill), ink(fill)) >= MIN_CONTRAST


def test_the_labels_of_deep_blue_frames_are_white() -> None:
    svg = render_diff(FoldedProfile(dict(BEFORE)), FoldedProfile(dict(AFTER)), RenderOptions())
    graph = {path[-1]: frame.fill for path, frame in paths(frames(svg)).items() if path}
    assert (graph["gemm"], graph["gone"]) == ("#2a2aff", "#5454ff")  # -20 and -15, the scale ending at +25
    group = next(g for g in parse(svg).iter(SVG + "g") if g.get("id") == "labels")
    labels = {text.text: text.attrib for text in group.iter(SVG + "text")}
    assert set(labels) == {"all", *graph}  # every frame is labelled, wide enough
    light = {name: attrib["fill"] for name, attrib in labels.items() if attrib.get("class") == "light"}
    assert light == {"gemm": "#ffffff", "gone": "#ffffff"}  # the attribute: the static view, without CSS
    assert not {name for name, attrib in labels.items() if "fill" in attrib} - set(light)
    assert "#labels text.light { fill: #fff; }" in svg.decode()  # the page's CSS outranks the attribute
