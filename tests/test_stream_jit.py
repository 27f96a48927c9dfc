"""Streamed `record --jit` and Python frames (issue 24): each chunk gets its JIT names and unwind info
before it is folded, and the shares match a whole recording of the same program; a kernel or a Python
function created in one chunk is still named and unwound in the later ones (`--every 1`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.extras import need_installed
from helpers.mlp import mlp_script
from helpers.python_tree import CHAINS, TREE
from helpers.pythons import find_python, skip_or_fail

from flamegraph.frameworks.jit import session
from flamegraph.frameworks.jit.chunks import marker_pids
from flamegraph.frameworks.jit.jitmap import Kernel
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
ROOTS = ("_start", "start_thread", "clone", "clone3")
# The whole recording's share and the streamed one's may differ by this much (points): sampling noise
# of a few thousand samples, and the chunks a loaded machine makes the folder drop (said and counted).
POINTS = 2.0


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics())


def facts(folded: Path) -> dict[str, str]:
    return json.loads(folded.with_name(folded.name + ".json").read_text())["metadata"]


def record(args: list[str], command: list[str], out: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(out)}  # the spool's scratch directory: nothing may be left there
    proc = subprocess.run(
        [*FLAMEGRAPH, "record", *args, "-o", str(out / "run.svg"), "--folded", str(out / "run.folded"), "--",
         *command],
        capture_output=True, text=True, timeout=240, cwd=cwd, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not list(out.glob("flamegraph-*")), list(out.iterdir())  # the spool and its JIT directory removed
    return proc


def intervals(out: Path) -> list[Path]:
    return sorted(out.glob("run-[0-9][0-9][0-9].folded"))


# -- without perf --------------------------------------------------------------------------------


def test_live_kernels_are_completed_from_what_was_located(tmp_path: Path) -> None:
    """A running process has no kernels file yet: `complete` writes the records of the kernels given."""
    from flamegraph.frameworks.jit import jitdump

    directory = str(tmp_path)
    jitdump.create_marker(directory, 4242)
    code = bytes.fromhex("554889e55dc3")  # push rbp; mov rbp, rsp; pop rbp; ret
    kernel = Kernel(0x7F0000001000, len(code), "jit_uni_kernel", 3, "", 12345)
    located = {4242: session.Located(((kernel, code),), "1 JIT kernels located while it ran")}
    assert marker_pids(directory) == [4242]
    [done] = session.complete(directory, None, located)
    assert (done.pid, done.kernels, done.located) == (4242, 1, "1 JIT kernels located while it ran")
    loads = [body for kind, _, body in jitdump.iter_records(jitdump.dump_path(directory, 4242)) if kind == 0]
    assert len(loads) == 1 and b"jit_uni_kernel\x00" in loads[0]
    assert session.complete(directory, None, {}) == []  # nothing located, no kernels file: nothing written


# -- Python frames (a Python 3.12 program) ---------------------------------------------------------

TREE_FRAME = re.compile(r"^(?P<function>\S+) \(tree\.py\)$")


def complete_share(profile: FoldedProfile) -> tuple[float, int]:
    """Of the samples in spin, the share (%) rooted at _start with one of CHAINS; and how many."""
    total = complete = 0
    for stack, weight in profile.counts.items():
        frames = stack.split(";")
        functions = tuple(m.group("function") for f in frames if (m := TREE_FRAME.match(f)))
        if "spin" not in functions:
            continue
        total += int(weight)
        if len(frames) > 1 and frames[1] == "_start" and functions in CHAINS:
            complete += int(weight)
    return (100.0 * complete / total if total else 0.0), total


@pytest.mark.perf
def test_streamed_python_frames_match_a_whole_recording(tmp_path: Path) -> None:
    python = find_python("3.12")
    if python is None:
        skip_or_fail("needs a Python 3.12 interpreter (pyenv or python3.12 on PATH)")
    assert python is not None
    (tmp_path / "tree.py").write_text(TREE)
    command = [python, "tree.py", "4"]
    streamed_out, whole_out = tmp_path / "streamed", tmp_path / "whole"
    streamed_out.mkdir()
    whole_out.mkdir()
    streamed = record(["--every", "1", "-F", "999"], command, streamed_out, tmp_path)
    record(["--max-spool", "0", "-F", "999"], command, whole_out, tmp_path)
    assert "folded as recorded" in streamed.stderr and "recorded whole" not in streamed.stderr
    assert "Python functions with unwind info" in streamed.stderr and "perf inject --jit done" in streamed.stderr
    streamed_share, streamed_n = complete_share(load(streamed_out / "run.folded"))
    whole_share, whole_n = complete_share(load(whole_out / "run.folded"))
    assert streamed_n > 150 and whole_n > 150, (streamed_n, whole_n)
    assert whole_share >= 95.0 and abs(streamed_share - whole_share) <= POINTS, (streamed_share, whole_share)
    # main, middle, leaf and other were made in the first chunk: every later interval still unwinds them.
    later = [p for p in intervals(streamed_out)[1:] if complete_share(load(p))[1] >= 30]
    assert len(later) >= 2, streamed.stderr[-2000:]
    for path in later:
        assert complete_share(load(path))[0] >= 95.0, path.name
    fact = facts(streamed_out / "run.folded")
    assert "Python functions" in fact and "over " in fact["JIT work as recorded"]


# -- oneDNN's JIT kernels (the MXNet MLP the JIT tests train) --------------------------------------

MLP = mlp_script(
    6400,
    """
    for epoch in range(int(sys.argv[1])):
        train.reset()
        for batch in train:
            mod.forward_backward(batch); mod.update()
        mx.nd.waitall()
    """,
    imports="sys",
)


def jit_figures(profiles: list[FoldedProfile]) -> tuple[float, float, int]:
    """(named %, rooted %, JIT samples) over `profiles`: the samples in a named JIT kernel (`_[j]`) among
    those and the ones whose leaf is left [unknown]; the samples reaching a thread root among all."""
    named = unknown = rooted = total = 0
    for profile in profiles:
        for stack, weight in profile.counts.items():
            frames, n = stack.split(";"), int(weight)
            total += n
            named += n if any(f.endswith("_[j]") for f in frames) else 0
            unknown += n if frames[-1] == "[unknown]" else 0
            rooted += n if len(frames) > 1 and frames[1] in ROOTS else 0
    jit = named + unknown
    return 100.0 * named / max(jit, 1), 100.0 * rooted / max(total, 1), named


@pytest.mark.perf
@pytest.mark.mxnet
@pytest.mark.slow  # two MXNet runs: ~70 s at load 8
def test_streamed_jit_matches_a_whole_recording(tmp_path: Path) -> None:
    need_installed("mxnet")
    (tmp_path / "mlp.py").write_text(MLP)
    # ~0.3 s an epoch when quiet (8 epochs on a fast quiet machine: two intervals, 24 JIT samples outside the last):
    # training spans several 1 s intervals
    command = [sys.executable, "mlp.py", "20"]
    streamed_out, whole_out = tmp_path / "streamed", tmp_path / "whole"
    streamed_out.mkdir()
    whole_out.mkdir()
    # make flamegraph's pair: --mxnet's operators joined at the end, on chunks the JIT step injected first
    streamed = record(["--jit", "--mxnet", "--every", "1"], command, streamed_out, tmp_path)
    record(["--jit", "--max-spool", "0"], command, whole_out, tmp_path)
    assert "folded as recorded" in streamed.stderr and "perf inject --jit done" in streamed.stderr
    assert "recorded whole" not in streamed.stderr
    operated = sum(int(w) for stack, w in load(streamed_out / "run.folded").counts.items()
                   if "[op] FullyConnected" in stack and stack.endswith("_[j]"))  # fmt: skip
    assert operated >= 20, streamed.stderr[-2000:]  # JIT kernels under their operator in the whole-run graph
    assert not list(tmp_path.glob("dnnl_dump_*"))  # moved into the JIT directory at exit, removed with it
    # Every interval but the last: perf synthesises the last chunk's mappings as the process tears down,
    # and some of its stacks lose their libc frames, JIT or not (said in docs/record.md).
    parts = [load(p) for p in intervals(streamed_out)]
    named, rooted, jit = jit_figures(parts[:-1])
    whole_named, whole_rooted, whole_jit = jit_figures([load(whole_out / "run.folded")])
    assert jit >= 30 and whole_jit >= 30, (jit, whole_jit)
    assert abs(named - whole_named) <= POINTS and whole_named >= 99.0, (named, whole_named)
    assert abs(rooted - whole_rooted) <= POINTS, (rooted, whole_rooted)
    # The kernels are made as training starts: every interval after it samples them, named, none [unknown].
    training = [(i, jit_figures([part])) for i, part in enumerate(parts[:-1]) if jit_figures([part])[2] >= 5]
    assert len(training) >= 2, training
    assert all(figures[0] >= 95.0 for _, figures in training), training
    fact = facts(streamed_out / "run.folded")
    assert fact["JIT kernels"].endswith("with unwind info") and "over " in fact["JIT work as recorded"]
    maps = re.findall(r"-> (/tmp/perf-\d+\.map)$", streamed.stderr, re.MULTILINE)  # the hook's, written at exit
    assert maps and not any(os.path.exists(path) for path in maps)  # removed once the last chunk was folded
