"""`record --every`'s file names: none taken from stdout (`-o -`), and the trend page's `diff` command runs as
printed from where the user ran `record` (the paths as given, quoted for a shell). No perf needed."""

from __future__ import annotations

import shlex
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import EXIT_USAGE
from flamegraph.model import FoldedProfile
from flamegraph.pipeline.streamed import _write_trend
from flamegraph.record.stream import Interval

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]


@pytest.mark.parametrize(
    ("args", "option"), [(["-o", "-"], "-o"), (["--no-svg", "--folded", "-"], "--folded")], ids=["svg", "folded"]
)
def test_every_with_stdout_is_refused_before_recording(tmp_path: Path, args: list[str], option: str) -> None:
    done = subprocess.run([*FLAMEGRAPH, "record", "--every", "2", *args, "--", "true"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.strip() == (
        f"flamegraph: --every names its files after {option}'s (STEM-001.*, STEM-trend.svg): {option} - (stdout) "
        f"has no name to take; give {option} FILE"
    )
    assert not list(tmp_path.iterdir())  # no --001.svg, no --trend.svg


class _Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


def test_the_trend_pages_diff_command_runs_from_where_record_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "my runs"  # a blank: the command must quote it
    folder.mkdir()
    profiles = {1: FoldedProfile({"main;a": 8, "main;b": 2}), 3: FoldedProfile({"main;a": 3, "main;b": 7})}
    for number, profile in profiles.items():
        (folder / f"run-{number:03d}.folded").write_text("".join(f"{s} {n}\n" for s, n in profile.counts.items()))
    intervals = [Interval(n, p, 0, 1, p.total) for n, p in profiles.items()]
    monkeypatch.chdir(tmp_path)
    _write_trend(intervals, Path("my runs/run.svg"), "run", 1200, _Notes())  # type: ignore[arg-type]
    page = xml.dom.minidom.parse(str(folder / "run-trend.svg"))
    said = [node.data for node in _text_nodes(page) if "flamegraph diff" in node.data]
    assert len(said) == 1, said
    words = shlex.split(said[0][said[0].index("flamegraph diff") :])
    assert words[:4] == ["flamegraph", "diff", "my runs/run-001.folded", "my runs/run-003.folded"], said
    done = subprocess.run([*FLAMEGRAPH, *words[1:]], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (folder / "run-diff.svg").is_file()


def test_a_trend_of_one_interval_compares_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """newcomer10 b-18: a run shorter than --every has one interval; its trend page said to diff it with
    itself (`flamegraph diff c-001.folded c-001.folded`) and counted "(1 intervals)"."""
    profile = FoldedProfile({"main;a": 8, "main;b": 2})
    monkeypatch.chdir(tmp_path)
    _write_trend([Interval(1, profile, 0, 1, profile.total)], Path("c.svg"), "c", 1200, _Notes())  # type: ignore[arg-type]
    said = [node.data for node in _text_nodes(xml.dom.minidom.parse("c-trend.svg")) if node.data.strip()]
    assert "c: share per interval (1 interval)" in said
    assert "One interval: none to compare it with" in said
    assert not [text for text in said if "flamegraph diff" in text or "intervals)" in text], said


def _text_nodes(node: xml.dom.minidom.Node) -> list[xml.dom.minidom.Text]:
    found = [node] if isinstance(node, xml.dom.minidom.Text) else []
    for child in node.childNodes:
        found += _text_nodes(child)
    return found
