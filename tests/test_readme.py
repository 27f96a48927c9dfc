"""The README and docs/ say what works: their commands run as written, their links lead somewhere,
every `make` target they name exists, and no internal language or path outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MAKE_TARGETS = set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), re.M))


def code_lines(text: str) -> list[str]:
    blocks = re.findall(r"```(?:bash)?\n(.*?)```", text, re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_the_front_page_is_short_and_says_how_to_start() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 120
    for needed in ("make flamegraph", "open `out/mlp-oncpu.svg` in a browser", "## Reading the graph",
                   "## The commands", "docs/screenshots/after-oncpu-hover.png",
                   "flamegraph convert perf.data out.svg"):  # fmt: skip
        assert needed in text, needed
    for command in ("record", "offcpu", "convert", "fold", "render", "diff"):
        assert re.search(rf"^\| `{command}` \|.*\| `flamegraph {command} ", text, re.M), command
    assert (REPO / "docs" / "screenshots" / "after-oncpu-hover.png").exists()


def test_no_internal_language_and_no_path_outside_the_repository() -> None:
    for page in PAGES:
        text = page.read_text()
        for phrase in ("the reference", "issue's", "issue 1", "the notes'", "../shared", "/work/"):
            assert phrase not in text, (page.name, phrase)


def test_links_lead_somewhere() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if target.startswith("http"):
                continue
            assert (page.parent / target).exists(), (page.name, target)


def test_make_commands_are_targets_without_options() -> None:
    for page in PAGES:
        for line in code_lines(page.read_text()):
            if line.startswith("make "):
                words = line.split("#")[0].split()
                assert words[1] in MAKE_TARGETS, (page.name, line)
                assert not any(w.startswith("-") for w in words[2:]), (page.name, line)  # make rejects them


def test_the_sample_data_commands_work_as_written(tmp_path: Path) -> None:
    """The README's tour without perf, run as the user runs it (from the repository, outputs here)."""
    text = (REPO / "README.md").read_text()
    tour = [line for line in code_lines(text.split("Without perf", 1)[1]) if line.startswith(".venv/bin/flamegraph")]
    assert len(tour) == 4
    for line in tour:
        args = line.split()[1:]
        args = [str(tmp_path / a) if a.endswith((".folded", ".svg")) else str(REPO / a) if "/" in a else a
                for a in args]  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "flamegraph", *args], cwd=tmp_path, capture_output=True)
        assert done.returncode == 0, (line, done.stderr)
    waits = (tmp_path / "waits.svg").read_text()
    assert "Off-CPU Time Flame Graph" in waits  # its unit came with the folded file, no --unit needed
