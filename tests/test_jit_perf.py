"""Named oneDNN JIT kernels and complete stacks through them, with real perf and a real MXNet MLP.

The workload is a small MLP (784-128-64-10, oneDNN) on synthetic data, so that no data set is needed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.mlp import mlp_script
from helpers.observers import observer_for

from flamegraph.analysis.report import attribute
from flamegraph.folding.perf import FoldOptions
from flamegraph.frameworks.jit.hook import HOOK, JIT_CALL_GRAPH, JitHook
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.model import FoldedProfile
from flamegraph.naming.grouping import namer_for_recording
from flamegraph.naming.observer import FrameObserver
from flamegraph.record import RecordOptions, RecordSpec, fold_recording, record
from flamegraph.window import Window

pytestmark = [pytest.mark.perf, pytest.mark.mxnet]

MLP = mlp_script(
    6400,
    """
    epochs, loop = int(sys.argv[1]), len(sys.argv) > 2
    print("TRAIN_START", time.clock_gettime(time.CLOCK_MONOTONIC), flush=True)
    epoch = 0
    while epoch < epochs or loop:
        train.reset()
        for batch in train:
            mod.forward_backward(batch); mod.update()
        mx.nd.waitall()
        mod.score(val, mx.metric.Accuracy())  # creates the inference kernels late, as validation does
        epoch += 1
        print("EPOCH", epoch, flush=True)
    print("TRAIN_END", time.clock_gettime(time.CLOCK_MONOTONIC), flush=True)
    """,
    imports="os, sys, time",
    validation=True,
)
# The GEMM kernel family, whatever the ISA and driver oneDNN picked for this CPU: xbyak_gemm on AVX and
# AVX-512 (jit_avx_gemm_f32_xbyak_gemm, jit_avx512_common_...), the gemm driver's kernels elsewhere
# (jit_sse41_kernel_sgemm_kern ...).
GEMM = re.compile(r"jit_\w*gemm\w*_\[j\]$")
ROOTS = ("_start", "start_thread", "clone", "clone3")


def jit_stacks(profile: FoldedProfile) -> dict[str, float]:
    return {stack: n for stack, n in profile.counts.items() if stack.endswith("_[j]")}


@pytest.mark.parallel  # naming and unwinding, no sample-count bound a neighbour moves: beside two busy loops
def test_launched_mlp_gets_named_kernels_and_complete_stacks(tmp_path: Path) -> None:
    script = tmp_path / "mlp.py"
    script.write_text(MLP)
    lines: list[str] = []
    hook = JitHook(tmp_path / "jit", note=lines.append)
    how = RecordOptions(freq=999, call_graph=JIT_CALL_GRAPH)
    spec = RecordSpec(command=(sys.executable, str(script), "3"), options=how, cwd=str(tmp_path))
    recording = record(spec, tmp_path / "perf.data", hooks=[hook], on_output=lines.append)
    assert recording.exit_status in (0, None), lines[-10:]
    assert not list(tmp_path.glob("dnnl_dump_*"))  # moved into the JIT directory at exit
    start, end = (float(line.split()[1]) for line in lines if line.startswith(("TRAIN_START", "TRAIN_END")))
    namer = namer_for_recording(str(recording.perf_data))  # as `record` and `make flamegraph` fold
    observer = FrameObserver(namer)
    profile = fold_recording(recording, FoldOptions.with_all(frame_hook=observer), Window(start, end), Diagnostics())
    jit = jit_stacks(profile)
    figures = attribute(profile, observer)
    assert sum(jit.values()) >= 20, lines[-20:]
    assert figures.jit_named == figures.jit  # every JIT sample named
    assert figures.share(figures.jit_reach_root, figures.jit) >= 95.0  # stacks complete through the kernels
    assert figures.share(figures.reach_root) >= 95.0
    gemm = {stack: n for stack, n in jit.items() if GEMM.search(stack)}
    assert gemm, sorted(jit)[:5]
    for stack in gemm:
        frames = stack.split(";")
        assert frames[1] in ROOTS
        assert "mxnet::MKLDNNStream::Submit" in frames
        assert any(f.startswith("mxnet::op::MKLDNNFC") for f in frames)
        assert "mxnet::engine::ThreadedEngine::ExecuteOprBlock" in frames
    # perf inject --jit kept the build-ids: libmxnet.so's stripped frames are grouped, checked.
    assert not any(path.endswith("libmxnet.so") for path in namer.refused), namer.refused
    assert any(f.startswith("libmxnet.so+0x") for stack in gemm for f in stack.split(";")), sorted(gemm)[:3]
    assert recording.metadata["JIT kernels"].endswith("with unwind info")
    kernels, with_cfi = (int(n.split()[0]) for n in recording.metadata["JIT kernels"].split(" named, "))
    # Which kernels refuse unwind info depends on the ISA (AVX's jit_pp_kernel_t jumps through a table):
    # every one refused is said, once per kind, with its reason.
    refused = [line for line in lines if "no unwind info for " in line]
    assert kernels >= 20 and with_cfi >= 20 and (with_cfi == kernels) == (not refused), lines
    assert len(refused) == len(set(refused))
    assert any("perf inject --jit done" in line for line in lines)
    work = recording.metadata["JIT work after the run"]  # e.g. "naming 14 ms in the process, unwind info 0.41 s, ..."
    assert work.startswith("naming ") and " ms in the process, unwind info " in work and "perf inject" in work


def start_workload(tmp_path: Path, through_hook: bool) -> tuple[subprocess.Popen[str], int]:
    script = tmp_path / "mlp.py"
    script.write_text(MLP)
    program = [str(script), "1", "loop"]
    command = [
        sys.executable,
        *([str(HOOK), "--jit-dir", str(tmp_path / "jit"), "--"] if through_hook else []),
        *program,
    ]
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env={**os.environ, "DNNL_JIT_DUMP": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    for line in proc.stdout:  # the first epoch and its validation: every kernel exists
        if line.startswith("EPOCH") or time.monotonic() > deadline:
            break
    return proc, proc.pid


@pytest.mark.parametrize("through_hook", [False, True], ids=["dnnl-jit-dump-only", "started-through-the-hook"])
def test_attached_mlp_gets_named_kernels(tmp_path: Path, through_hook: bool) -> None:
    """--pid: names from outside (root reads /proc/PID/mem); complete stacks too if the hook made a marker."""
    proc, pid = start_workload(tmp_path, through_hook)
    try:
        notes: list[str] = []
        hook = JitHook(tmp_path / "pid-jit", note=notes.append)
        spec = RecordSpec(pid=pid, options=RecordOptions(call_graph=JIT_CALL_GRAPH, duration=2.0))
        recording = record(spec, tmp_path / "perf.data", hooks=[hook])
        assert Path(f"/tmp/perf-{pid}.map").is_file(), notes
        observer = observer_for(group_unknown=True)
        profile = fold_recording(recording, FoldOptions.with_all(frame_hook=observer), None, Diagnostics())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
    figures = attribute(profile, observer)
    assert figures.jit > 10 and figures.jit_named == figures.jit, notes
    assert any(GEMM.search(stack) for stack in profile.counts)
    reach = figures.share(figures.jit_reach_root, figures.jit)
    if through_hook:
        assert any("perf inject --jit done" in note for note in notes), notes
        assert reach >= 95.0
    else:
        assert reach < 50.0  # named, but perf cannot unwind through a kernel without its CFI
