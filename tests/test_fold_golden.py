"""Golden files for our own edge cases: tests/golden/fold/NAME.perf.txt -> NAME.OPTION.folded."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GOLDEN, check_golden

from flamegraph import Diagnostics, FoldOptions, PerfCollapser
from flamegraph.folded import iter_folded_lines

DIR = GOLDEN / "fold"
OPTIONS: dict[str, dict[str, object]] = {
    "default": {},
    "compat": {"compat": True},
    "pid": {"pid": True},
    "tid": {"tid": True},
    "all": {"kernel": True, "jit": True},
    "addrs": {"addrs": True},
}
INPUTS = sorted(DIR.glob("*.perf.txt"))


def _fold(path: Path, option: str) -> bytes:
    collapser = PerfCollapser(FoldOptions(**OPTIONS[option]), Diagnostics(echo=False))  # type: ignore[arg-type]
    with path.open("rb") as lines:
        collapser.feed(lines, path.name)
    return b"".join(iter_folded_lines(collapser.profile()))


def test_there_are_golden_inputs() -> None:
    assert len(INPUTS) >= 7


@pytest.mark.parametrize("source", INPUTS, ids=[p.name.split(".")[0] for p in INPUTS])
@pytest.mark.parametrize("option", list(OPTIONS))
def test_golden(source: Path, option: str) -> None:
    check_golden(_fold(source, option), DIR / f"{source.name.split('.')[0]}.{option}.folded")
