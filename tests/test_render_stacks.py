"""The stacks embedded for the page's views: every stack comes back, exactly, from the compact form."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from helpers.svg import frames, settings, stacks_data
from hypothesis import given
from hypothesis import strategies as st

from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg
from flamegraph.render.layout import Columns, layout_stacks, order_stacks
from flamegraph.render.stacks import BASE36, base36, drawing_holds_stacks, drawn_leaf_weights, encode, encode_stacks
from flamegraph.render.text import display_name

SVG = "{http://www.w3.org/2000/svg}"


def decode(data: dict) -> list[tuple[tuple[str, ...], float]]:  # type: ignore[type-arg]
    """What the page's script does with #stacks (flamegraph.js, loadStacks)."""
    names = data["names"]
    path: list[str] = []
    out = []
    for record in data["stacks"].split(" ") if data["stacks"] else []:
        fields = record.split(",")
        del path[int(fields[0]) :]
        path += [names[int(code, 36)] for code in fields[1:-1]]
        out.append((tuple(path), float(fields[-1])))
    return out


def round_trip(pairs: list[tuple[str, float]], keep_order: bool = False) -> None:
    texts, weights = order_stacks(pairs, keep_order=keep_order)
    data = encode_stacks(texts, weights, lambda name: name, lambda name: "#000000")
    shown = [
        (tuple(map(display_name, text.split(";"))), float(weight)) for text, weight in zip(texts, weights, strict=True)
    ]
    assert decode(data) == shown  # names as the frames show them: control characters escaped


def test_known_answer() -> None:
    texts, weights = order_stacks({"main;compute;gemm": 40, "main;compute;relu": 10, "main;io;read": 12})
    data = encode_stacks(texts, weights, lambda name: name, lambda name: "#000000")
    assert data["names"] == ["main", "compute", "gemm", "relu", "io", "read"]
    assert data["stacks"] == "0,0,1,2,40 2,3,10 1,4,5,12"


def test_frame_codes_are_base_36_without_leading_zeros() -> None:
    assert BASE36 == [base36(value) for value in range(36 * 36)]
    assert [base36(value) for value in (0, 35, 36, 1295, 1296, 46655, 46656)] == [
        "0", "z", "10", "zz", "100", "zzz", "1000"
    ]  # fmt: skip
    assert all(int(base36(value), 36) == value for value in range(0, 3_000_000, 997))


def test_a_name_that_extends_another_and_a_repeated_stack() -> None:
    # "a" < "a b;x" < "a;y": the stack after "a b;x" shares no frame with it, only with "a"
    round_trip([("a", 1), ("a b;x", 2), ("a;y", 3), ("a;y;z", 4), ("ab", 5)])
    round_trip([("a;b", 1), ("a;b", 2), ("a", 3), ("a;b;c", 4), ("a;b", 1)], keep_order=True)  # a flame chart


frame_names = st.text(alphabet=st.characters(blacklist_characters=";\n"), min_size=1, max_size=4)


@given(st.lists(st.tuples(st.lists(frame_names, min_size=1, max_size=6), st.integers(1, 10**12)), max_size=30))
def test_every_stack_comes_back(stacks: list[tuple[list[str], int]]) -> None:
    pairs = [(";".join(frames), weight) for frames, weight in stacks]
    round_trip(pairs)
    round_trip(pairs, keep_order=True)


def test_the_page_holds_every_stack_even_those_too_narrow_to_draw() -> None:
    counts = {"main;hot": 1_000_000, **{f"main;site{i};malloc": 1 for i in range(50)}}
    svg = render_svg(FoldedProfile(counts), RenderOptions())
    assert b"<title>malloc" not in svg and b"<title>site" not in svg  # too narrow to draw
    data = stacks_data(svg)
    assert sorted(decode(data)) == sorted((tuple(text.split(";")), float(w)) for text, w in counts.items())
    # Names as the frames show them: annotations stripped, hidden characters escaped, XML-safe text.
    svg = render_svg(FoldedProfile({"a;hot": 1_000_000, "a;k_[k]": 1, "a;b\u202ec<&>": 2}), RenderOptions())
    assert b"<title>k " not in svg and b"<title>b" not in svg  # too narrow: written out in #stacks
    data = stacks_data(svg)
    assert data["names"] == ["a", "b\\u202ec<&>", "hot", "k"]
    assert b"<&>" not in svg.split(b'id="stacks"')[1]  # escaped in the JSON: \u003c&...


def test_a_drawn_name_is_not_written_twice() -> None:
    """A name the drawing shows is the index of its first drawn frame (title and fill read there);
    only names too narrow to draw anywhere are written out, with their fill."""
    counts = {"main;hot<T>": 1_000_000, "main;x;hot<T>": 500_000, "main;rare<T>": 1}
    svg = render_svg(FoldedProfile(counts), RenderOptions())
    raw = json.loads(ET.fromstring(svg).find(f"{SVG}script[@id='stacks']").text)  # type: ignore[union-attr]
    drawn = frames(svg)
    by_name = {d.name: i for i, d in reversed(list(enumerate(drawn))) if d.depth}
    assert raw["names"] == [by_name["main"], by_name["hot<T>"], "rare<T>", by_name["x"]]  # in the stacks' order
    assert len(raw["fills"]) == 1 and raw["fills"][0].startswith("#")  # the written name's fill alone
    assert b"hot" not in svg.split(b'id="stacks"')[1].split(b"</script>")[0]  # drawn: not in the JSON
    data = stacks_data(svg)
    assert data["names"] == ["main", "hot<T>", "rare<T>", "x"]
    assert data["fills"][1] == drawn[by_name["hot<T>"]].fill
    assert sorted(decode(data)) == sorted((tuple(text.split(";")), float(w)) for text, w in counts.items())


def test_diff_pages_carry_no_stacks() -> None:
    from flamegraph.render import render_diff

    svg = render_diff(FoldedProfile({"a;b": 1}), FoldedProfile({"a;b": 2}), RenderOptions())
    assert b'id="stacks"' not in svg and b'"views":false' in svg


plain_names = st.text(alphabet="abcxyz", min_size=1, max_size=3)


@given(
    st.lists(st.tuples(st.lists(plain_names, min_size=1, max_size=5), st.integers(1, 10**5)), min_size=1, max_size=25),
    st.sampled_from(["0.1", "0"]),
)
def test_the_page_gets_every_stack_back_whether_drawn_or_embedded(
    stacks: list[tuple[list[str], int]], minwidth: str
) -> None:
    """Either form, the page reads back the profile: from the frames when every one is drawn (then the
    file embeds nothing), else from #stacks."""
    counts: dict[str, int] = {}
    for names, weight in stacks:
        counts[";".join(names)] = counts.get(";".join(names), 0) + weight
    svg = render_svg(FoldedProfile(counts), RenderOptions(min_width=minwidth))
    drawn = settings(svg)["stacksDrawn"]
    assert drawn == (b'id="stacks"' not in svg)
    assert drawn or minwidth != "0"  # nothing pruned, integer weights: always read back from the frames
    merged: dict[tuple[str, ...], float] = {}
    for path, weight in decode(stacks_data(svg)):
        merged[path] = merged.get(path, 0) + weight
    assert merged == {tuple(text.split(";")): float(weight) for text, weight in counts.items()}


def test_the_stacks_are_embedded_when_the_drawing_cannot_give_them_back_exactly() -> None:
    whole = {"main;a": 3, "main;b": 2}
    assert settings(render_svg(FoldedProfile(whole), RenderOptions()))["stacksDrawn"] is True
    embedded = {
        "a frame too narrow to draw": {"main;a": 1_000_000, "main;b": 1},
        "fractional weights": {"main;a": 1.5, "main;b": 2},
        "coordinates in units of 10 (a total past 1e7)": {"main;a": 30_000_000, "main;b": 20_000_001},
    }
    for why, counts in embedded.items():
        svg = render_svg(FoldedProfile(counts), RenderOptions())
        assert settings(svg)["stacksDrawn"] is False and b'id="stacks"' in svg, why
    chart = render_svg(FoldedProfile(whole), RenderOptions(flamechart=True), stacks=list(whole.items()))
    assert settings(chart)["stacksDrawn"] is False  # time order: neighbours merge, the tree is not the stacks
    # two frames as written that the drawing shows alike (name and fill): the page could not tell them apart
    alike = render_svg(FoldedProfile({"a;f": 1, "a;f_[k]": 1}), RenderOptions(highlights=["f=#112233:F"]))
    assert settings(alike)["stacksDrawn"] is False
    assert sorted(decode(stacks_data(alike))) == [(("a", "f"), 1.0), (("a", "f"), 1.0)]  # two functions named f
    apart = render_svg(FoldedProfile({"a;f": 1, "a;f_[k]": 1}), RenderOptions())  # the kernel's f in its colour
    assert settings(apart)["stacksDrawn"] is True
    assert sorted(decode(stacks_data(apart))) == [(("a", "f"), 1.0), (("a", "f"), 1.0)]


@given(st.lists(st.tuples(st.lists(frame_names, min_size=1, max_size=6), st.integers(1, 10**12)), min_size=1))
def test_a_drawing_that_holds_every_stack_gives_the_leaf_weights_the_encoding_adds_up(
    stacks: list[tuple[list[str], int]],
) -> None:
    texts, weights = order_stacks([(";".join(frames), weight) for frames, weight in stacks])
    layout = layout_stacks(texts, Columns(weights))
    assert drawing_holds_stacks(layout)
    assert drawn_leaf_weights(layout) == encode(texts, weights).leaf_weights


def test_a_page_that_draws_every_stack_encodes_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stacks are encoded for #stacks (and the table's leaf weights) only when the frames cannot
    give them back; the table is the same either way."""
    import flamegraph.render.svg as svg

    counts = {"main;a;b": 5, "main;a": 2, "main;c": 3, "main;c;b": 4}
    drawn = render_svg(FoldedProfile(counts), RenderOptions())

    def refused(texts: object, weights: object) -> None:
        raise AssertionError("encoded although the drawing holds every stack")

    monkeypatch.setattr(svg, "encode", refused)
    assert render_svg(FoldedProfile(counts), RenderOptions()) == drawn
    assert settings(drawn)["stacksDrawn"] is True
    top = ET.fromstring(drawn).find(f".//{SVG}g[@id='top']")
    cells = [text.text for text in top.iter(f"{SVG}text")] if top is not None else []
    assert cells[1:4] == ["64.29%", "9", "b"]  # b ends two stacks: 9 of 14
