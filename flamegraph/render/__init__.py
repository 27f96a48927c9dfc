"""Rendering: folded profiles -> self-contained interactive SVG flame graphs (and PNG previews).

from flamegraph.render import RenderOptions, render_svg, render_diff
svg = render_svg(profile, RenderOptions(title="MXNet MLP", preset="onednn"))
svg = render_diff(before, after, RenderOptions(normalize=True))
"""

from .options import RenderOptions
from .png import render_png
from .svg import render_diff, render_svg

__all__ = ["RenderOptions", "render_diff", "render_png", "render_svg"]
