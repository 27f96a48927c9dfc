"""An input that never ends a line (/dev/zero, a pipe of it, a gzip stream that inflates to one endless line)
is refused with one line and exit 4, in bounded memory: `render /dev/zero` used to take all the machine's
memory (23 GB, the OOM killer) and `fold /dev/zero` ran forever (newcomer10 b-19)."""

from __future__ import annotations

import gzip
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import EXIT_NO_INPUT
from flamegraph.io.folded import MAX_LINE

pytestmark = pytest.mark.parallel

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
MEMORY = 1 << 31  # 2 GiB of address space: enough for us and a 64 MiB line, far from "all of it"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(*args: str, stdin: object = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=120, preexec_fn=_limited,
                          stdin=stdin)  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [["render", "/dev/zero", "-o", "{out}.svg"], ["fold", "/dev/zero", "-o", "{out}.folded"],
     ["fold", "--offcpu", "/dev/zero", "-o", "{out}.folded"], ["convert", "/dev/zero", "{out}.svg"],
     ["diff", "/dev/zero", "/dev/zero", "-o", "{out}.svg"]],
    ids=["render", "fold", "fold-offcpu", "convert", "diff"],
)  # fmt: skip
def test_dev_zero_is_refused_in_bounded_memory(tmp_path: Path, args: list[str]) -> None:
    done = run(*(arg.format(out=tmp_path / "out") for arg in args))
    assert done.returncode == EXIT_NO_INPUT, done.stderr
    assert done.stderr.strip() == (
        f"flamegraph: /dev/zero: line 1 is longer than {MAX_LINE >> 20} MiB: not perf script text or folded stacks"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["render", "fold"])
def test_a_gzip_stream_inflating_to_one_endless_line_is_refused(tmp_path: Path, command: str) -> None:
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:  # ~70 KB on disk, 80 MiB of 'a' without a line end
        for _ in range(80):
            out.write(b"a" * (1 << 20))
    done = run(command, str(bomb), "-o", str(tmp_path / "out"))
    assert done.returncode == EXIT_NO_INPUT, done.stderr
    assert "is longer than 64 MiB: not perf script text or folded stacks" in done.stderr
    assert "Traceback" not in done.stderr
