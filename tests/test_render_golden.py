"""Golden SVGs: tests/golden/render/NAME.folded rendered with each option set -> NAME.VARIANT.svg.

Any change to the template, script, styles or layout shows up here; UPDATE_GOLDEN=1 rewrites them
(look at the new files in a browser first).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GOLDEN, check_golden

from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_diff, render_svg

DIR = GOLDEN / "render"
CAPTURE = {"command": "python -m collectors.train_mlp --epochs 2", "perf": "6.1.187", "host": "vm",
           "date": "2026-11-22T03:16:17+00:00"}  # fmt: skip
VARIANTS: dict[str, RenderOptions] = {
    "default": RenderOptions(),
    "onednn": RenderOptions(title="MXNet MLP (oneDNN)", subtitle="on-CPU, training window", preset="onednn",
                            highlights=["MultiSGD=#ff00ff:optimizer update"]),
    "icicle": RenderOptions(inverted=True, reverse=True, colors="java", hash=True, width=800, min_width="1%",
                            font_size=10, frame_height=14, count_name="ms", factor=2, notes="golden", top=3),
}  # fmt: skip
INPUTS = sorted(DIR.glob("*.folded"))


def load(path: Path) -> FoldedProfile:
    with path.open("rb") as lines:
        profile = read_folded(lines, path.name, Diagnostics())
    if path.stem.startswith("offcpu"):
        profile.unit, profile.event = "microseconds", "sched:sched_switch"
        profile.metadata = {"blocked [S]": "7.050 s", "blocked [D]": "0.030 s"}
        profile.window_us = 3_000_000  # python-1250 is idle all of it: one line says so, not drawn
    else:
        profile.event, profile.metadata = "cpu-clock", dict(CAPTURE)
    return profile


def test_there_are_golden_inputs() -> None:
    assert {p.name for p in INPUTS} >= {"mlp.folded", "mlp-openblas.folded", "offcpu.folded"}


@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_golden(source: Path, variant: str) -> None:
    check_golden(render_svg(load(source), VARIANTS[variant]), DIR / f"{source.stem}.{variant}.svg")


@pytest.mark.parametrize("variant", ["default", "normalize-negate"])
def test_golden_diff(variant: str) -> None:
    options = RenderOptions(normalize=True, negate=True) if variant != "default" else RenderOptions()
    svg = render_diff(load(DIR / "mlp.folded"), load(DIR / "mlp-openblas.folded"), options)
    check_golden(svg, DIR / f"diff.{variant}.svg")
