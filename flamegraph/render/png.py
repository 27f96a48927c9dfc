"""A raster preview of the static view (`--png`), for trackers that refuse SVG attachments.

Uses cairosvg (the optional `png` extra); it draws what a viewer without JavaScript shows:
header, legend, frames with their labels, and the top table.
"""

from __future__ import annotations

from ..io.diagnostics import BadOption


def check_png() -> None:
    """Raise `BadOption` now if --png cannot work (before a recording is made, not after)."""
    _cairosvg()


def _cairosvg():  # type: ignore[no-untyped-def]
    try:
        import cairosvg  # type: ignore[import-untyped]
    except ImportError:
        raise BadOption("--png needs cairosvg: pip install 'flamegraph-perf[png]'") from None
    except OSError as err:  # cairocffi raises this when the cairo library itself is missing
        raise BadOption(f"--png needs the cairo library (apt-get install libcairo2): {err}") from None
    return cairosvg


def render_png(svg: bytes, scale: float = 1.0) -> bytes:
    png: bytes = _cairosvg().svg2png(bytestring=svg, scale=scale, unsafe=False)
    return png
