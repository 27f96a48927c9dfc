"""Against flamegraph.pl: on the same folded file, the same frames with the same counts and colours.

The reference script is the unmodified copy in the shared corpus
(`../shared/peer-tests/flamegraph-pl/bin/flamegraph.pl`, CDDL); FLAMEGRAPH_PL=/path/to/flamegraph.pl
picks another. `bench/bench_render.py` runs the same comparison on a large profile and times both.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from helpers.shared import shared_dir

from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import iter_folded_lines
from flamegraph.model import FoldedProfile
from flamegraph.render import RenderOptions, render_svg

sys.path.insert(0, str(REPO / "bench"))
from bench_render import frame_counts, synthesize  # noqa: E402

SHARED_COPY = shared_dir() / "peer-tests" / "flamegraph-pl" / "bin" / "flamegraph.pl"
REFERENCE = os.environ.get("FLAMEGRAPH_PL") or str(SHARED_COPY)
FILL = re.compile(r'<title>(.*?) \([\d,.]+ [^<]*</title>\s*<rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"')


def needs_reference(test: Callable[..., None]) -> Callable[..., None]:
    """Marked `shared` (tests/helpers/shared.py) unless FLAMEGRAPH_PL names a copy outside the corpus."""
    return test if os.environ.get("FLAMEGRAPH_PL") else pytest.mark.shared(test)


@needs_reference
def test_reference_script_is_there() -> None:
    assert Path(REFERENCE).is_file(), f"flamegraph.pl not found at {REFERENCE} (set FLAMEGRAPH_SHARED or FLAMEGRAPH_PL)"


def reference(folded: Path, *options: str) -> bytes:
    result = subprocess.run(["perl", str(REFERENCE), *options, str(folded)], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def fills(svg: bytes) -> dict[str, str]:
    text = svg.decode()
    found = {}
    for match in FILL.finditer(text):
        red, green, blue = (int(value) for value in match.groups()[1:])
        found[html.unescape(match.group(1))] = f"#{red:02x}{green:02x}{blue:02x}"
    found.update(
        (html.unescape(n), f) for n, f in re.findall(r'<title>(.*?) \([^<]*</title><rect [^>]*fill="(#\w+)"', text)
    )
    return found


def fold(source: Path) -> FoldedProfile:
    collapser = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
    with source.open("rb") as lines:
        collapser.feed(lines, source.name)
    return collapser.profile()


def peer_inputs() -> list[Path]:
    return sorted((shared_dir() / "peer-tests" / "flamegraph-pl").glob("perf-*.txt"))


@pytest.mark.shared
@pytest.mark.parametrize("source", peer_inputs(), ids=lambda p: p.stem)
def test_same_frames_counts_and_colours_as_flamegraph_pl(source: Path, tmp_path: Path) -> None:
    profile = fold(source)
    folded = tmp_path / "in.folded"
    folded.write_bytes(b"".join(iter_folded_lines(profile)))
    ours = render_svg(profile, RenderOptions())
    theirs = reference(folded)
    assert len(frame_counts(ours)) > 5 and frame_counts(ours) == frame_counts(theirs)
    mine, peer = fills(ours), fills(theirs)
    peer.pop("all", None), mine.pop("all", None)
    assert len(mine) >= 5 and mine == peer
    hashed = render_svg(profile, RenderOptions(hash=True, min_width="0.5%"))
    assert frame_counts(hashed) == frame_counts(reference(folded, "--hash", "--minwidth", "0.5%"))


@needs_reference
def test_large_synthetic_profile(tmp_path: Path) -> None:
    counts = synthesize(20_000, seed=7)
    folded = tmp_path / "in.folded"
    folded.write_text("".join(f"{stack} {count}\n" for stack, count in sorted(counts.items())))
    ours = render_svg(FoldedProfile(dict(counts)), RenderOptions())
    theirs = reference(folded)
    assert frame_counts(ours) == frame_counts(theirs)
    assert len(ours) <= len(theirs)
