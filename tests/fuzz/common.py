"""What the fuzz targets share: scratch files, line splitting, and the checks of folded text and SVG."""

from __future__ import annotations

import atexit
import io
import math
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flamegraph.folding import parallel
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import iter_folded_lines, read_folded
from flamegraph.model import FoldedProfile

SVG = "{http://www.w3.org/2000/svg}"
EVENTS = (None, "cpu-clock", "cycles", "sched:sched_switch", "page-faults")

_scratch: str | None = None


def scratch() -> Path:
    """One directory per process for inputs that must be files: $FUZZ_SCRATCH (the campaign's: libFuzzer
    ends a process without Python's exit handlers), else a temporary one removed at exit."""
    global _scratch
    if _scratch is None:
        given = os.environ.get("FUZZ_SCRATCH")
        if given:
            os.makedirs(given, exist_ok=True)
            _scratch = given
        else:
            _scratch = tempfile.mkdtemp(prefix="flamegraph-fuzz-")
            atexit.register(shutil.rmtree, _scratch, True)
    return Path(_scratch)


def scratch_file(name: str, data: bytes) -> Path:
    path = scratch() / name
    path.write_bytes(data)
    return path


@contextmanager
def small_chunks() -> Iterator[None]:
    """--jobs splits only files over 4 MB; let it split our small inputs for real."""
    old = parallel.MIN_CHUNK
    parallel.MIN_CHUNK = 1
    try:
        yield
    finally:
        parallel.MIN_CHUNK = old


def lines_of(data: bytes) -> list[bytes]:
    """Lines as reading a file gives them: split after each b'\n' only (bytes.splitlines splits at '\r')."""
    return io.BytesIO(data).readlines()


def folded_bytes(profile: FoldedProfile) -> bytes:
    return b"".join(iter_folded_lines(profile))


def check_folded_round_trip(profile: FoldedProfile) -> None:
    """What we write as folded text reads back as the same profile, without a complaint."""
    text = folded_bytes(profile)
    diagnostics = Diagnostics(echo=False)
    again = read_folded(lines_of(text), "written", diagnostics)
    assert diagnostics.skipped == 0, (diagnostics.problems, text[:400])
    assert again.counts == profile.counts, text[:400]


def check_svg(svg: bytes, total: float) -> None:
    """Well-formed XML whose root frame spans the whole view (the profile's total)."""
    root = ET.fromstring(svg)
    group = root.find(f".//{SVG}g[@id='frames']")
    assert group is not None
    rects = group.findall(f"{SVG}g/{SVG}rect")
    assert rects, "no frame drawn"
    view = root.find(f".//{SVG}svg[@id='view']")
    assert view is not None
    assert rects[0].get("x") == "0" and rects[0].get("width") == view.get("viewBox", "").split()[2]
    assert math.isfinite(total) and total > 0


def run_cli(args: list[str]) -> tuple[int, bytes, str]:
    """`flamegraph ARGS` in this process, stdout and stderr captured as bytes; a traceback propagates.

    stderr is set up as Python sets it up for a terminal (it escapes what it cannot encode)."""
    from unittest import mock

    from flamegraph.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    streams = {
        "stdout": io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        "stderr": io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True),
        "argv": ["flamegraph", *args],
    }
    with mock.patch.multiple(sys, **streams):
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
    return code, out.getvalue(), err.getvalue().decode()
