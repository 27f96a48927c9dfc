"""sample_data/: real recordings of the MLP that fold without perf or MXNet, each with how it was made."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from flamegraph.folding.perf import FoldOptions
from flamegraph.folding.stage import fold_perf

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
RECORDINGS = sorted(SAMPLE.glob("*.perf.txt.gz"))
MAX_BYTES = 3_000_000  # "a few MB at most", all together


def test_there_are_on_and_off_cpu_recordings() -> None:
    names = {path.name for path in RECORDINGS}
    assert {"mlp-oncpu.perf.txt.gz", "mlp-offcpu.perf.txt.gz"} <= names
    assert sum(path.stat().st_size for path in SAMPLE.iterdir()) < MAX_BYTES


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_each_recording_says_how_it_was_made(path: Path) -> None:
    facts = json.loads(path.with_name(path.name.replace(".perf.txt.gz", ".json")).read_text())
    assert facts["perf record"].startswith("perf record -N ") and " -k CLOCK_MONOTONIC -e " in facts["perf record"]
    assert facts["perf script"].startswith("perf script -i perf.data --no-inline ")
    assert facts["gzip bytes"] == path.stat().st_size
    assert facts["text bytes"] == len(gzip.decompress(path.read_bytes()))
    for key in ("command", "event", "call graph", "perf", "kernel", "date"):
        assert facts["capture"][key], key


def test_oncpu_sample_folds_to_the_training_window() -> None:
    path = SAMPLE / "mlp-oncpu.perf.txt.gz"
    facts = json.loads((SAMPLE / "mlp-oncpu.json").read_text())
    start, end = facts["window"]
    assert f"--time {start:.6f},{end:.6f}" in facts["perf script"]
    profile = fold_perf([str(path)], FoldOptions.with_all()).profile
    assert profile.event == "cpu-clock" and profile.total > 500
    for frame in ("ThreadedEngine::ExecuteOprBlock", "MKLDNNFCForward", "MKLDNNFCBackward", "MultiSGDKernel"):
        assert any(frame in stack for stack in profile.counts), frame


def test_oncpu_sample_shows_named_jit_kernels_as_record_jit_draws_them() -> None:
    """The graph a user without perf draws is what `record --jit` gives: oneDNN's kernels by name
    (the GEMM family, whatever ISA the recording machine had), none left as `[perf-PID.map]`."""
    facts = json.loads((SAMPLE / "mlp-oncpu.json").read_text())
    assert facts["capture"]["JIT kernels"].endswith("with unwind info")
    assert "--call-graph dwarf,65528" in facts["perf record"]
    profile = fold_perf([str(SAMPLE / "mlp-oncpu.perf.txt.gz")], FoldOptions.with_all()).profile
    frames = {frame for stack in profile.counts for frame in stack.split(";")}
    assert not {frame for frame in frames if re.fullmatch(r"\[perf-\d+\.map\](_\[j\])?", frame)}
    gemm = sum(n for stack, n in profile.counts.items() if re.search(r";jit_\w*gemm\w*_\[j\]$", stack))
    assert gemm / profile.total > 0.05  # the gemm kernels: ~18 % of the training window
    under_callers = [stack for stack in profile.counts if "_[j]" in stack and "MKLDNNStream::Submit" in stack]
    assert under_callers  # unwound through: the kernels sit under the layer that ran them


def test_offcpu_sample_has_the_waits_of_each_thread() -> None:
    from flamegraph.folding.offcpu import fold_offcpu

    profile = fold_offcpu([str(SAMPLE / "mlp-offcpu.perf.txt.gz")])
    assert profile.unit == "microseconds"
    stacks = list(profile.counts)
    assert any("WaitForVar" in s and s.endswith("[S]") for s in stacks)  # main thread waits for the engine
    assert any("ThreadedIter" in s for s in stacks)  # the data iterator's prefetch threads
    assert any("ExecuteOprBlock" in s and s.endswith("[R]") for s in stacks)  # engine worker preempted
