"""render_svg: frames equal the merged input, the static header, options, determinism, escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.extras import need
from helpers.oracle import merged_weights
from helpers.svg import SVG, frames, parse, paths, stacks_data, texts
from helpers.svg import settings as svg_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from flamegraph.color import Painter, format_palette, parse_palette, random_namehash
from flamegraph.io.diagnostics import BadOption, Diagnostics, NoSamples
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_png, render_svg

PEER = "flamegraph-pl"


def drawn_widths(svg: bytes) -> dict[tuple[str, ...], float]:
    return {path: frame.width for path, frame in paths(frames(svg)).items() if path}


def count_in_title(title: str) -> float:
    match = re.search(r" \(([\d,.]+) ", title)
    assert match, title
    return float(match.group(1).replace(",", ""))


names = st.sampled_from(["main", "a", "a+b", "ab", "b", "std::map<int, int>", "x y", "[unknown]", "é"])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.lists(names, min_size=1, max_size=7).map(";".join), st.integers(1, 10_000), min_size=1))
def test_frames_drawn_are_the_merged_input(counts: dict[str, float]) -> None:
    svg = render_svg(FoldedProfile(dict(counts)), RenderOptions(min_width="0"))
    assert drawn_widths(svg) == merged_weights(counts)
    for frame in paths(frames(svg)).values():  # the tooltip says the same count
        assert count_in_title(frame.title) == frame.width


def test_peer_suite_inputs_draw_their_merged_stacks(shared: Path) -> None:
    from flamegraph.folding.perf import FoldOptions, PerfCollapser

    for source in sorted((shared / "peer-tests" / PEER).glob("perf-*.txt"))[:6]:
        collapser = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
        with source.open("rb") as lines:
            collapser.feed(lines, source.name)
        profile = collapser.profile()
        svg = render_svg(profile, RenderOptions(min_width="0"))
        assert drawn_widths(svg) == pytest.approx(merged_weights(profile.counts)), source.name
        pruned = render_svg(profile, RenderOptions())  # 0.1 px: only the narrow frames go
        minimum = 0.1 * profile.total / 1180
        expected = {p: w for p, w in merged_weights(profile.counts).items() if w >= minimum}
        assert drawn_widths(pruned) == pytest.approx(expected), source.name


def test_same_input_same_bytes() -> None:
    counts = {f"main;f{i % 7};g{i}": i + 1 for i in range(300)}
    options = RenderOptions(preset="onednn", highlights=["f3:three"], random=True)
    first = render_svg(FoldedProfile(dict(counts)), options)
    again = render_svg(FoldedProfile(dict(reversed(list(counts.items())))), options)
    assert first == again


def test_header_is_readable_without_javascript() -> None:
    profile = FoldedProfile(
        {"python;main;work": 30, "python;main;idle": 10},
        event="cpu-clock",
        metadata={
            "command": "python train.py --epochs 1",
            "perf version": "6.1.187",
            "host": "vm",
            "date": "2026-01-02",
        },
    )
    svg = render_svg(profile, RenderOptions(title="MLP <on-CPU>"))
    assert texts(svg, "summary") == ["cpu-clock · 40 samples · 2 stacks"]  # one line above the graph
    facts = texts(svg, "facts")  # below it in the static view; the script folds them into a block
    assert facts == [
        "Capture facts",
        "command: python train.py --epochs 1",
        "perf version: 6.1.187",
        "host: vm",
        "date: 2026-01-02",
    ]
    page = svg_settings(svg)
    assert page["detailsY"] < page["graphTop"] < page["belowTop"] < page["factsTop"]  # type: ignore[operator]
    root = parse(svg)
    assert root.findtext(f"{SVG}title") == "MLP <on-CPU>"
    table = texts(svg, "top")
    assert table[0] == "Top 2 functions by self samples"
    assert table[1:4] == ["75.00%", "30", "work"] and table[4:7] == ["25.00%", "10", "idle"]
    labels = texts(svg, "labels")  # the static labels, before any script runs
    assert {"all", "python", "main", "work", "idle"} <= set(labels)


def test_large_totals_use_coordinates_browsers_can_draw() -> None:
    counts = {"a;b": 5_000_000_000, "a;c;d": 3, "a;c;e": 2, "z": 700_000_000}
    svg = render_svg(FoldedProfile(dict(counts), unit="microseconds"), RenderOptions(min_width="0"))
    view = parse(svg).find(f".//{SVG}svg[@id='view']")
    assert view is not None and view.get("viewBox", "").split()[2] == "5700000.005"
    assert drawn_widths(svg) == pytest.approx(merged_weights(counts))
    assert b'<rect x="5000000" y="17" width="0.005"' in svg  # in milliseconds: exact, and below 2**25


def test_off_cpu_profiles_say_so_and_are_blue() -> None:
    profile = FoldedProfile({"app;read;[S]": 2_500_000, "app;poll": 500_000}, unit="microseconds",
                            event="sched:sched_switch", metadata={"blocked S": "2.5 s"})  # fmt: skip
    svg = render_svg(profile, RenderOptions())
    assert texts(svg, "summary") == ["off-CPU time (sched:sched_switch) · 3.000 s in 1 thread · 2 stacks"]
    assert texts(svg, "facts")[1] == "blocked S: 2.5 s"
    assert parse(svg).findtext(f"{SVG}title") == "Off-CPU Time Flame Graph"
    for frame in frames(svg)[1:]:
        red, green, blue = (int(frame.fill[i : i + 2], 16) for i in (1, 3, 5))
        assert red == green and blue > red, frame  # flamegraph.pl's "io" palette


def test_default_colours_are_flamegraph_pl_colours() -> None:
    svg = render_svg(FoldedProfile({"main;foo;bar": 5, "main;baz": 3}), RenderOptions())
    # From flamegraph.pl on the same input: main rgb(243,179,42), foo rgb(220,71,17), bar rgb(217,57,13).
    fills = {f.name: f.fill for f in frames(svg)}
    assert fills["main"] == "#f3b32a" and fills["foo"] == "#dc4711" and fills["bar"] == "#d9390d"
    assert random_namehash("main") == pytest.approx(0.7786, abs=1e-4)


@pytest.mark.parametrize("palette", ["hot", "mem", "io", "wakeup", "chain", "java", "js", "perl", "python",
                                     "red", "green", "blue", "aqua", "yellow", "purple", "orange"])  # fmt: skip
def test_every_palette(palette: str) -> None:
    profile = FoldedProfile(
        {"java;Lcom/foo:::bar_[j];inl_[i];do_sys_[k]": 3, "x;--;waker;wake_up": 2, "perl;Perl_run": 1}
    )
    svg = render_svg(profile, RenderOptions(colors=palette))
    fills = {f.name: f.fill for f in frames(svg)}
    assert all(re.fullmatch(r"#[0-9a-f]{6}", fill) for fill in fills.values())
    if palette == "java":
        assert fills["Lcom/foo:::bar"] == Painter("green").fill("Lcom/foo:::bar_[j]")  # _[j]: green
        assert fills["inl"] == Painter("aqua").fill("inl_[i]")  # _[i]: aqua
        assert fills["do_sys"] == Painter("orange").fill("do_sys_[k]")  # _[k]: orange
    if palette == "chain":
        assert fills["wake_up"] == Painter("aqua").fill("wake_up_[w]")  # after "--": the waker
        assert fills["--"] == "#a0a0a0"


def test_hash_and_palette_map() -> None:
    profile = FoldedProfile({"main;alpha": 2, "main;beta": 1})
    hashed = {f.name: f.fill for f in frames(render_svg(profile, RenderOptions(hash=True)))}
    assert hashed["main"] == "#f7532e"  # flamegraph.pl --hash: rgb(247,83,46)
    palette = parse_palette("alpha->rgb(1,2,3)\n")
    svg = render_svg(profile, RenderOptions(palette_map=palette))  # the library edits the map in memory
    assert {f.name: f.fill for f in frames(svg)}["alpha"] == "#010203"
    assert format_palette(palette).decode().splitlines() == [
        "alpha->rgb(1,2,3)", "beta->rgb(252,216,51)", "main->rgb(243,179,42)"
    ]  # fmt: skip
    other = render_svg(FoldedProfile({"beta": 1}), RenderOptions(palette_map=palette))
    assert frames(other)[1].fill == "#fcd833"  # the same colour in the next graph


def test_random_colours_are_reproducible() -> None:
    profile = FoldedProfile({"main;alpha": 2, "main;beta": 1})
    first = render_svg(profile, RenderOptions(random=True))
    assert first == render_svg(profile, RenderOptions(random=True))
    assert first != render_svg(profile, RenderOptions())


def test_layout_options() -> None:
    profile = FoldedProfile({"main;f;leaf": 3, "main;g;leaf": 1})
    svg = render_svg(profile, RenderOptions(width=600, frame_height=20, font_size=10, font_type="DejaVu Sans",
                                            title="T", subtitle="sub", count_name="hits", name_type="Fn:"))  # fmt: skip
    root = parse(svg)
    assert root.get("width") == "600"
    assert root.find(f".//{SVG}svg[@id='view']").get("width") == "580"  # type: ignore[union-attr]
    rects = [f for f in frames(svg)]
    assert {r.depth for r in rects} == {0, 1, 2, 3}
    assert root.find(f".//{SVG}g[@font-family]").get("font-family").startswith("DejaVu Sans")  # type: ignore[union-attr]
    assert root.find(f".//{SVG}text[@id='subtitle']").text == "sub"  # type: ignore[union-attr]
    assert rects[1].title == "main (4 hits, 100.00%)"
    assert b'"nameType":"Fn:"' in svg
    assert re.search(rb'<rect x="0" y="\d+" width="4" height="19"', svg)
    reversed_ = paths(frames(render_svg(profile, RenderOptions(reverse=True))))
    assert reversed_[("leaf",)].width == 4 and ("leaf", "f", "main") in reversed_
    icicle = render_svg(profile, RenderOptions(inverted=True))
    assert parse(icicle).findtext(f"{SVG}title") == "Icicle Graph"
    assert paths(frames(icicle)).keys() == paths(frames(render_svg(profile, RenderOptions()))).keys()


def test_min_width_pixels_and_percent() -> None:
    counts = {"main;big": 990, "main;small": 10}
    assert ("main", "small") in drawn_widths(render_svg(FoldedProfile(counts), RenderOptions(min_width="11")))
    assert ("main", "small") not in drawn_widths(render_svg(FoldedProfile(counts), RenderOptions(min_width="12")))
    assert ("main", "small") in drawn_widths(render_svg(FoldedProfile(counts), RenderOptions(min_width="1%")))
    assert ("main", "small") not in drawn_widths(render_svg(FoldedProfile(counts), RenderOptions(min_width="1.1%")))


def test_factor_and_notes() -> None:
    svg = render_svg(FoldedProfile({"a": 3, "a;b": 1}), RenderOptions(factor=1000, notes="run 7 & <friends>"))
    assert frames(svg)[1].title == "a (4,000 samples, 100.00%; self 3,000, 75.00%)"  # the page adds the unit
    assert parse(svg).findtext(f"{SVG}desc[@id='notes']") == "run 7 & <friends>"


def test_flame_chart_keeps_the_time_order() -> None:
    stacks = [("main;step", 2.0), ("main;wait", 1.0), ("main;step", 2.0)]
    svg = render_svg(FoldedProfile({"main;step": 4, "main;wait": 1}), RenderOptions(flamechart=True), stacks)
    row = sorted((f for f in frames(svg) if f.depth == 2), key=lambda f: f.x)
    assert [(f.name, f.x, f.width) for f in row] == [("step", 0, 2), ("wait", 2, 1), ("step", 3, 2)]
    assert parse(svg).findtext(f"{SVG}title") == "Flame Chart"


def test_highlight_classes_colour_frames_and_count_a_stack_once() -> None:
    profile = FoldedProfile({
        "python;mxnet::MKLDNNRun;dnnl::impl::gemm;jit_avx512_common_gemm_f32_xbyak_gemm": 6,  # both classes, twice
        "python;mxnet::MKLDNNRun;memcpy": 2,
        "python;MultiSGDKernel": 12,
    })  # fmt: skip
    svg = render_svg(profile, RenderOptions(preset="onednn", highlights=["MultiSGD=#ff00ff:optimizer"]))
    legend = texts(svg, "legend")  # name and shares; the regular expression is the tooltip
    assert legend == ["oneDNN JIT kernels 30.00 % (self 30.00 %)", "oneDNN / MKLDNN 40.00 % (self 30.00 %)",
                      "optimizer 60.00 % (self 60.00 %)"]  # fmt: skip
    tooltips = [t.text or "" for t in parse(svg).find(f".//{SVG}g[@id='legend']").iter(f"{SVG}title")]  # type: ignore[union-attr]
    assert tooltips[2].startswith("optimizer: /MultiSGD/ · 60.00 % of all")
    fills = {f.name: f.fill for f in frames(svg)}
    assert fills["MultiSGDKernel"] == "#ff00ff"
    assert fills["jit_avx512_common_gemm_f32_xbyak_gemm"] == Painter("aqua").fill(
        "jit_avx512_common_gemm_f32_xbyak_gemm"
    )
    assert fills["mxnet::MKLDNNRun"] == Painter("green").fill("mxnet::MKLDNNRun")
    assert fills["memcpy"] == Painter("hot").fill("memcpy")


@pytest.mark.parametrize(
    ("spec", "pattern", "color", "label"),
    [
        ("dnnl=aqua:oneDNN", "dnnl", "aqua", "oneDNN"),
        ("MultiSGD=#FF00ff", "MultiSGD", "#ff00ff", None),
        ("std::vector", "std::vector", None, None),
        ("std::vector:Vectors", "std::vector", None, "Vectors"),
        ("(?:gemm|gemv):BLAS", "(?:gemm|gemv)", None, "BLAS"),
        ("^jit_:JIT kernels", "^jit_", None, "JIT kernels"),
        ("a(?=b)", "a(?=b)", None, None),
        ("(?P<x>a)(?P=x)", "(?P<x>a)(?P=x)", None, None),
        ("x[=]y", "x[=]y", None, None),
        ("x\\=y", "x\\=y", None, None),
        ("operator=", "operator=", None, None),
    ],
)
def test_highlight_specs(spec: str, pattern: str, color: str | None, label: str | None) -> None:
    from flamegraph.color import parse_highlight

    rule = parse_highlight(spec)
    assert (rule.pattern, rule.color, rule.label) == (pattern, color, label)


@pytest.mark.parametrize(("spec", "colour"), [("main=notacolour", "notacolour"), ("main=#zz:Main", "#zz")])
def test_a_highlight_with_an_unknown_colour_is_a_usage_error(spec: str, colour: str) -> None:
    """REGEX=WORD typed as a colour: one line naming the colour and the choices, not a regex matching nothing."""
    from flamegraph.color import parse_highlight

    with pytest.raises(BadOption) as info:
        parse_highlight(spec)
    assert str(info.value) == (
        f"--highlight {spec!r}: unknown colour {colour!r} (a hue: red, green, blue, aqua, yellow, purple, orange; "
        "or #rrggbb); to match a '=' in names, write it [=]"
    )
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "options",
    [RenderOptions(colors="rainbow"), RenderOptions(min_width="wide"), RenderOptions(highlights=["(unclosed"]),
     RenderOptions(preset="cuda"), RenderOptions(width=10), RenderOptions(factor=0)],
)  # fmt: skip
def test_bad_options_are_one_line_errors(options: RenderOptions) -> None:
    with pytest.raises(BadOption) as info:
        render_svg(FoldedProfile({"a": 1}), options)
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_empty_profile() -> None:
    with pytest.raises(NoSamples):
        render_svg(FoldedProfile(), RenderOptions())


HOSTILE = [
    "<script>alert(1)</script>",
    "a]]>b<![CDATA[c",
    "fish & chips &amp &#x3c &lt",  # no ";": it separates frames
    "say \"hi\" 'there'",
    '</title><rect onload="alert(2)"/>',
    'x" onmouseover="alert(3)',
    "bytes\udcff\udcfe-end",
    "ctrl\x01\x1b[31m",
    '<g id="frames">',
    "-->",
]


def test_hostile_names_stay_text() -> None:
    counts = {f"main;{name}": 10 + i for i, name in enumerate(HOSTILE)}
    counts["main;" + HOSTILE[0] + ";" + HOSTILE[4]] = 5
    profile = FoldedProfile(counts, event="<b>ev</b>", metadata={"cmd</title>": "a ]]> b & \udcff"})
    options = RenderOptions(
        title="</title><script>x()</script>",
        subtitle="]]>",
        notes="--><script>",
        count_name='"><x',
        name_type="</text>",
        highlights=[r"script=red:<i>label</i>"],
    )
    svg = render_svg(profile, options)
    root = ET.fromstring(svg)  # well-formed XML
    tags = [element.tag.replace(SVG, "") for element in root.iter()]
    assert tags.count("script") == 2  # the settings and ours, nothing else (every stack drawn: none embedded)
    assert not [name for element in root.iter() for name in element.attrib if name.lower().startswith("on")]
    assert set(tags) <= {"svg", "title", "desc", "defs", "linearGradient", "stop", "style", "g", "rect", "text"} | {
        "script",
        "tspan",
    }
    titles = {f.name for f in frames(svg)}
    stacks = stacks_data(svg)  # names the drawing shows are read from it, as the page does
    for name in HOSTILE:
        shown = (
            name.replace("\udcff", "\\xff").replace("\udcfe", "\\xfe").replace("\x01", "\\x01").replace("\x1b", "\\x1b")
        )
        assert shown in titles, shown
        assert shown in stacks["names"], shown  # the page's views show them as the frames do
    assert texts(svg, "facts")[1] == "cmd</title>: a ]]> b & \\xff"
    # Same element structure as a graph of harmless names with the same shape.
    tame = {f"main;n{i}": 10 + i for i in range(len(HOSTILE))}
    tame["main;n0;n4"] = 5
    tame_svg = render_svg(FoldedProfile(tame, event="ev", metadata={"k": "v"}), RenderOptions(highlights=["n=red:l"]))
    assert tags.count("g") == [e.tag for e in ET.fromstring(tame_svg).iter()].count(f"{SVG}g")


def test_folded_bytes_round_trip_into_titles() -> None:
    profile = read_folded([b"main;caf\xc3\xa9;bad\xff 3\n"], "x", Diagnostics())
    svg = render_svg(profile, RenderOptions())
    assert [f.name for f in frames(svg)] == ["all", "main", "café", "bad\\xff"]


def test_long_names_are_cut_with_two_dots() -> None:
    name = "mxnet::engine::ThreadedEnginePerDevice::PushToExecute(mxnet::engine::OprBlock*, bool)::{lambda()#4}"
    svg = render_svg(FoldedProfile({f"main;{name}": 10, "main;other": 20}), RenderOptions(width=400))
    labels = texts(svg, "labels")
    cut = [label for label in labels if label.startswith("mxn")]
    assert cut and all(label.endswith("..") and name.startswith(label[:-2]) for label in cut)


def test_png_preview(tmp_path: Path) -> None:
    need("cairosvg")
    svg = render_svg(FoldedProfile({"main;a": 3, "main;b": 1}), RenderOptions(preset="onednn"))
    png = render_png(svg)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, round(height)) == (1200, round(float(parse(svg).get("height", "0"))))


@pytest.mark.parametrize("options", [RenderOptions(), RenderOptions(reverse=True), RenderOptions(flamechart=True)])
def test_top_self_table_adds_up_each_function_once(options: RenderOptions) -> None:
    # The table comes from the leaves' weights the stacks encoder adds up (reversed stacks end in
    # their roots: the table still counts the leaves); annotations are stripped, a stack that ends
    # where another passes counts once.
    profile = FoldedProfile({"a;b_[k]": 3, "a;c;b": 2, "x;b_[k]": 1, "a": 4, "a;c": 1})
    table = texts(render_svg(profile, options), "top")
    assert table[0] == "Top 3 functions by self samples"
    assert table[1:] == ["54.55%", "6", "b", "36.36%", "4", "a", "9.09%", "1", "c"]


def test_weights_with_a_common_period_draw_short_integer_coordinates() -> None:
    """perf's cpu-clock weighs each sample by its period (1001001 ns at 999 Hz): the coordinates are
    in units of the weights' common divisor, short integers, and the counts still read back exactly."""
    period = 1_001_001
    counts = {"main;a": 3 * period, "main;b;c": 7 * period, "main;b": 2 * period}
    svg = render_svg(FoldedProfile(counts), RenderOptions())
    assert svg_settings(svg)["coordinateDivisor"] == period
    rects = parse(svg).findall(f".//{SVG}g[@id='frames']/{SVG}g/{SVG}rect")
    assert {r.get("width") for r in rects} == {"12", "3", "9", "7"}  # all, main; a; b; c
    drawn = {path: frame.width for path, frame in paths(frames(svg)).items() if path}
    assert drawn == merged_weights(counts)
    fractional = render_svg(FoldedProfile({"main;a": 1.5, "main;b": 3.0}), RenderOptions())
    assert svg_settings(fractional)["coordinateDivisor"] == 1


def test_the_page_carries_the_script_and_styles_verbatim() -> None:
    """House style: the script and the stylesheet are inlined as their files are, comments included."""
    from flamegraph.render.document import HERE

    page = render_svg(FoldedProfile({"a;b": 1}, "samples"), RenderOptions()).decode()
    for name in ("flamegraph.js", "flamegraph.css"):
        assert (HERE / "assets" / name).read_text("utf-8") in page, name
