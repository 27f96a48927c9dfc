"""The fold's hooks: a sample hook sees every kept sample (header, frames leaf first), on both paths."""

from __future__ import annotations

from pathlib import Path

from conftest import GOLDEN
from helpers.fold_paths import fold_collapser

from flamegraph import Diagnostics, FoldOptions, PerfCollapser

SOURCE = GOLDEN / "fold" / "cxx-names.perf.txt"  # usual records: the fast path takes them


class TimeFrames:
    """Adds the sample's timestamp as a leaf frame, and counts the samples it saw."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, header: bytes, names: list[bytes]) -> list[bytes]:
        self.seen += 1
        stamp = header.split(b": ", 1)[0].rsplit(b" ", 1)[-1]
        return [b"t=" + stamp, *names]


def test_a_sample_hook_sees_each_kept_sample_the_same_on_both_paths(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(SOURCE.read_bytes() * 3)
    by_lines, by_blocks = TimeFrames(), TimeFrames()
    lines = PerfCollapser(FoldOptions(sample_hook=by_lines), Diagnostics(echo=False))
    with path.open("rb") as stream:
        lines.feed(stream, "in.txt")
    # Asked for 2 jobs, a fold with a sample hook runs in one process: the hook sees samples in order.
    blocks = fold_collapser(path, FoldOptions(sample_hook=by_blocks), jobs=2)
    assert blocks.by_event == lines.by_event
    assert by_blocks.seen == by_lines.seen >= 6
    assert all(b";t=" in stack for stack in lines.by_event[None])


def test_compat_ignores_the_sample_hook(tmp_path: Path) -> None:
    hook = TimeFrames()
    collapser = fold_collapser(SOURCE, FoldOptions(compat=True, sample_hook=hook), jobs=1)
    assert hook.seen == 0 and not any(b";t=" in stack for stack in collapser.by_event[None])
