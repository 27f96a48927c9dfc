"""Folding a file the way the commands do: the input opener, the block fast path, and `--jobs`.

With jobs > 1 the chunks are made small enough that even a golden file of a few records is
really split between processes (inferno runs every collapse golden with one thread and with two).
"""

from __future__ import annotations

from pathlib import Path

import flamegraph.folding.parallel as parallel
from flamegraph import Diagnostics, FoldOptions, PerfCollapser
from flamegraph.folding.stage import fold_input
from flamegraph.io.folded import iter_folded_lines
from tests.fuzz.common import small_chunks  # one definition: the fuzz targets split files the same way


def fold_collapser(path: Path, options: FoldOptions, jobs: int, strict: bool = False) -> PerfCollapser:
    collapser = PerfCollapser(options, Diagnostics(strict=strict, echo=False))
    with small_chunks():
        fold_input(collapser, str(path), jobs)
    return collapser


def fold_file(path: Path, options: FoldOptions, jobs: int) -> bytes:
    """The folded text of `path` through the production path with `jobs` processes."""
    return b"".join(iter_folded_lines(fold_collapser(path, options, jobs).profile()))


def splits_in_two(path: Path) -> bool:
    with small_chunks():
        return len(parallel.split_points(str(path), 2)) == 3
