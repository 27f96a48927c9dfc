"""The one input opener: every command that reads a .gz says what is wrong with it in one line."""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GOLDEN, REPO

from flamegraph.io.diagnostics import EXIT_NO_INPUT

FOLDED = b"python;main;work 3\npython;main;idle 1\n"
PERF_TEXT = (GOLDEN / "fold" / "cxx-names.perf.txt").read_bytes()

CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: gzip.compress(data)[:-30],
    "header-then-garbage": lambda data: gzip.compress(data)[:10] + b"garbage" * 50,  # zlib.error
    "bad-header": lambda data: b"\x1f\x8bxx",
}
COMMANDS: dict[str, tuple[list[str], bytes]] = {
    "fold": (["fold", "--no-group-unknown"], PERF_TEXT),
    "fold-offcpu": (["fold", "--offcpu"], PERF_TEXT),
    "render": (["render"], FOLDED),
    "diff": (["diff", "{good}"], FOLDED),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_corrupt_gzip_is_one_line_and_exit_4(tmp_path: Path, command: str, corruption: str) -> None:
    args, content = COMMANDS[command]
    good = tmp_path / "good.folded"
    good.write_bytes(FOLDED)
    bad = tmp_path / "bad.gz"
    bad.write_bytes(CORRUPTIONS[corruption](content))
    argv = [a.format(good=good) for a in args] + [str(bad), "-o", str(tmp_path / "out")]
    result = subprocess.run(
        [sys.executable, "-m", "flamegraph", *argv], capture_output=True, cwd=REPO, timeout=120
    )
    err = result.stderr.decode()
    assert result.returncode == EXIT_NO_INPUT, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{bad}: truncated or corrupt gzip data" in err
    assert not (tmp_path / "out").exists()


def test_perf_data_fields_named_by_the_caller_are_not_doubled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`record --threads` names perf script's fields itself: no second `-F +pid` for its tid roots."""
    import flamegraph.io.perf as perf
    from flamegraph import Diagnostics, FoldOptions, PerfCollapser
    from flamegraph.folding.stage import fold_input

    data = tmp_path / "perf.data"
    data.write_bytes(b"PERFILE2" + b"\0" * 64)
    asked: list[tuple[bool, tuple[str, ...]]] = []

    def command(path: str, with_pid: bool = False, extra: tuple[str, ...] = ()) -> list[str]:
        asked.append((with_pid, tuple(extra)))
        raise perf.PerfMissing("stop here")

    monkeypatch.setattr(perf, "script_command", command)
    collapser = PerfCollapser(FoldOptions(tid=True), Diagnostics(echo=False))
    with pytest.raises(perf.PerfMissing):
        fold_input(collapser, str(data), script_args=["-F", "comm,pid,tid,time,event,ip,sym,dso"])
    with pytest.raises(perf.PerfMissing):
        fold_input(collapser, str(data))  # `fold --tid perf.data`: perf must print the pid
    assert asked == [(False, ("-F", "comm,pid,tid,time,event,ip,sym,dso")), (True, ())]
