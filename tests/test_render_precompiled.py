"""The SVG template compiled ahead of time: current, used without Jinja2, and drawing the same bytes as the template."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, document, precompiled, render_diff, render_svg, svg_template


def _profile() -> FoldedProfile:
    stacks = {"main;std::vector<int>::push_back": 3, "main;a&b;'<c>\"": 5, "main": 2}
    return FoldedProfile(stacks, metadata={"command": "./a.out <in >out", "host": "b&b"})


def test_the_committed_module_is_the_template_compiled_today() -> None:
    made = precompiled.module_text(precompiled.environment())
    assert Path(svg_template.__file__).read_text("utf-8") == made, (
        "templates/flamegraph.svg.j2 changed: run `python -m flamegraph.render.precompiled` and commit svg_template.py"
    )


def test_a_render_does_not_compile_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the template was compiled at run time")

    monkeypatch.setattr(jinja2.Environment, "compile", refuse)
    template = precompiled.load()
    assert getattr(template, "root", None) is svg_template.root


def test_a_render_does_not_import_jinja2(tmp_path: Path) -> None:
    """Importing Jinja2 (lexer, parser, compiler) costs about 90 M instructions: more than drawing a
    2,000-frame profile. The precompiled module runs on template_runtime instead."""
    folded = tmp_path / "in.folded"
    folded.write_text("main;a 3\nmain;b 2\n")
    code = (
        "import sys; from flamegraph.cli import main; sys.argv = ['flamegraph', 'convert', sys.argv[1], sys.argv[2]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jinja2'))"
    )
    out = tmp_path / "out.svg"
    result = subprocess.run([sys.executable, "-c", code, str(folded), str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"<?xml") and result.stdout.strip() == "[]"


def test_the_precompiled_template_draws_the_bytes_the_template_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    options = RenderOptions(title="<a & b>", subtitle="x < y", notes="n & m", highlights=["push_back:vectors"])
    before = FoldedProfile({"main;a&b;'<c>\"": 7, "main": 2})

    def draw() -> bytes:  # every part of the template: notes, legend, table, facts, stacks, diff
        return render_svg(_profile(), options) + render_diff(before, _profile(), options)

    document._template.cache_clear()
    fast = draw()
    monkeypatch.setattr(svg_template, "SOURCE_CRC32", -1)  # as after an edit of the template
    document._template.cache_clear()
    try:
        slow = draw()
        assert isinstance(document._template(), jinja2.Template)  # compiled from the text, run by Jinja2
    finally:
        document._template.cache_clear()
    assert fast == slow
    assert b"std::vector&lt;int&gt;::push_back" in fast and b"a&amp;b" in fast
