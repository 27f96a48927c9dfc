"""The SVG template compiled ahead of time: current, used, and drawing the same bytes as the template."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, precompiled, render_svg, svg, svg_template


def _profile() -> FoldedProfile:
    return FoldedProfile({"main;std::vector<int>::push_back": 3, "main;a&b;'<c>\"": 5, "main": 2})


def test_the_committed_module_is_the_template_compiled_today() -> None:
    made = precompiled.module_text(svg._environment())
    assert Path(svg_template.__file__).read_text("utf-8") == made, (
        "templates/flamegraph.svg.j2 changed: run `python -m flamegraph.render.precompiled` and commit svg_template.py"
    )


def test_a_render_does_not_compile_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the template was compiled at run time")

    monkeypatch.setattr(jinja2.Environment, "compile", refuse)
    template = precompiled.load(svg._environment())
    assert template.root_render_func is svg_template.root


def test_the_precompiled_template_draws_the_bytes_the_template_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    options = RenderOptions(title="<a & b>", subtitle="x < y", notes="n & m")
    svg._template.cache_clear()
    fast = render_svg(_profile(), options)
    monkeypatch.setattr(svg_template, "SOURCE_SHA256", "stale")  # as after an edit of the template
    svg._template.cache_clear()
    try:
        slow = render_svg(_profile(), options)
        assert svg._template().root_render_func is not svg_template.root  # compiled from the text
    finally:
        svg._template.cache_clear()
    assert fast == slow
    assert b"std::vector&lt;int&gt;::push_back" in fast and b"a&amp;b" in fast
