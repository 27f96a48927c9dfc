"""Golden files for our own edge cases: tests/golden/fold/NAME.perf.txt -> NAME.OPTION.folded.

Each is folded three ways that must agree byte for byte: the line-by-line state machine alone,
and the production path (opener, block fast path) with one process and with two."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GOLDEN, check_golden
from helpers.fold_paths import fold_file, splits_in_two

from flamegraph import Diagnostics, FoldOptions, PerfCollapser
from flamegraph.io.folded import iter_folded_lines

DIR = GOLDEN / "fold"
OPTIONS: dict[str, dict[str, object]] = {
    "default": {},
    "compat": {"compat": True},
    "pid": {"pid": True},
    "tid": {"tid": True},
    "all": {"annotate_kernel": True, "annotate_jit": True},
    "addrs": {"addrs": True},
}
INPUTS = sorted(DIR.glob("*.perf.txt"))


def _fold_lines(path: Path, options: FoldOptions) -> bytes:
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    with path.open("rb") as lines:
        collapser.feed(lines, path.name)
    return b"".join(iter_folded_lines(collapser.profile()))


def test_there_are_golden_inputs() -> None:
    assert len(INPUTS) >= 7


def test_two_jobs_really_split_the_golden_inputs() -> None:
    """Every input with a blank line before its end (a record boundary to split at) is split."""
    splittable = [path for path in INPUTS if b"\n\n" in path.read_bytes().rstrip(b"\n")]
    assert len(splittable) >= 6 and all(splits_in_two(path) for path in splittable)


@pytest.mark.parametrize("how", ["lines", "jobs1", "jobs2"])
@pytest.mark.parametrize("source", INPUTS, ids=[p.name.split(".")[0] for p in INPUTS])
@pytest.mark.parametrize("option", list(OPTIONS))
def test_golden(source: Path, option: str, how: str) -> None:
    options = FoldOptions(**OPTIONS[option])  # type: ignore[arg-type]
    actual = _fold_lines(source, options) if how == "lines" else fold_file(source, options, int(how[-1]))
    check_golden(actual, DIR / f"{source.name.split('.')[0]}.{option}.folded")
