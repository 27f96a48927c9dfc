"""The SVG readers the render tests use (tests/helpers/svg.py), checked on a tiny graph."""

from __future__ import annotations

from helpers.svg import frames, paths


def test_reader_on_a_tiny_graph() -> None:
    from flamegraph.model import FoldedProfile
    from flamegraph.render import RenderOptions, render_svg

    svg = render_svg(FoldedProfile({"m;a": 3, "m;b": 1}), RenderOptions())
    drawn = paths(frames(svg))
    assert {p: f.width for p, f in drawn.items()} == {("m",): 4, ("m", "a"): 3, ("m", "b"): 1}
    assert drawn[("m", "a")].title == "a (3 samples, 75.00%; all self)"
    inverted = paths(frames(render_svg(FoldedProfile({"m;a": 3, "m;b": 1}), RenderOptions(inverted=True))))
    assert {p: f.width for p, f in inverted.items()} == {p: f.width for p, f in drawn.items()}
