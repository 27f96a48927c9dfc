"""`flamegraph record --mxnet --jit` on a real MXNet MLP under real perf: operator and primitive frames
appear where they must, the tables and figures reach the terminal and the SVG header.

The workload trains the 784-128-64-10 MLP on synthetic data for a few seconds (no data set needed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers.mlp import THREE_EPOCHS as MLP

from flamegraph.frameworks.mxnet.profile import read_profile
from flamegraph.io.perf import script_command

pytestmark = [pytest.mark.perf, pytest.mark.mxnet]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("mxnet-record")
    # 8 epochs: the profiler's timer thread dumps once a second, and 3 epochs of a fast quiet machine (~1 s)
    # could end before it was ever sampled dumping (only the main thread's dump at exit was)
    (tmp / "mlp.py").write_text(MLP.replace("range(3)", "range(8)"))
    argv = [
        sys.executable, "-m", "flamegraph", "record", "--mxnet", "--jit", "--perf-data", str(tmp / "perf.data"),
        "--folded", str(tmp / "out.folded"), "-o", str(tmp / "out.svg"), "--", sys.executable, str(tmp / "mlp.py"),
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, tmp


def test_operator_and_primitive_frames_sit_where_they_must(
    recorded: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, tmp = recorded
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in (tmp / "out.folded").read_text().splitlines()]
    ops, primitives, jit_under_primitive = set(), set(), 0
    for frames in stacks:
        # The engine may run the next operator inside the completion callback of the one before it:
        # the innermost ExecuteOprBlock is the one whose operator the sample is in.
        executes = [i for i, frame in enumerate(frames) if frame == "mxnet::engine::ThreadedEngine::ExecuteOprBlock"]
        if executes and executes[-1] + 1 < len(frames):
            inner = frames[executes[-1] + 1]
            assert inner.startswith("[op] "), frames  # right above the engine's entry
            ops.add(inner)
        for i, frame in enumerate(frames):
            if frame == "mxnet::MKLDNNStream::Submit" and i + 1 < len(frames):
                assert frames[i + 1].startswith("[dnnl] "), frames
                primitives.add(frames[i + 1])
                jit_under_primitive += any(f.endswith("_[j]") for f in frames[i + 2 :])
    assert {"[op] FullyConnected", "[op] _backward_FullyConnected", "[op] multi_sgd_mom_update"} <= ops, ops
    # The implementation oneDNN picks depends on the CPU (x64:gemm:jit, brgemm:avx512_core ...): its family only.
    shape = r"inner_product (forward_training|backward_weights) mb64ic784oc128"
    layer = re.compile(rf"\[dnnl\] {shape} \([^()]*gemm[^()]*\)")
    assert any(layer.fullmatch(p) for p in primitives), primitives
    assert jit_under_primitive > 0  # the JIT gemm kernels sit under the layer shape that called them


def test_figures_and_tables_reach_the_terminal_and_the_svg(
    recorded: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, tmp = recorded
    coverage = re.search(r"mxnet: ([0-9.]+) % of ([0-9,]+) engine-thread samples under an \[op\] frame", proc.stderr)
    assert coverage is not None, proc.stderr[-3000:]
    assert float(coverage.group(1)) >= 90.0
    assert re.search(r"mxnet: threads: \d+ profiler threads mapped exactly \(recorded in the process\)", proc.stderr)
    assert re.search(r"residual error ≤ [0-9.]+ µs", proc.stderr)
    assert "MXNet operators (" in proc.stderr and "oneDNN primitives (" in proc.stderr
    svg = (tmp / "out.svg").read_text()
    assert "MXNet coverage: " in svg and "[op] FullyConnected: " in svg and "MXNet profiler: MXNet 1.9.1" in svg
    assert list((tmp / "perf.data.mxnet").glob("profile-*.json")) and list(
        (tmp / "perf.data.mxnet").glob("dnnl-verbose-*.log")
    )


def test_the_recorded_thread_map_is_the_engine_thread_perf_saw(
    recorded: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The profiler thread that ran the operators maps to the TID perf sampled in ExecuteOprBlock most,
    by the map the process recorded (no statistical guess), and every profiler thread is covered."""
    _, tmp = recorded
    (sidecar,) = (tmp / "perf.data.mxnet").glob("mxnet-*.json")
    facts = json.loads(sidecar.read_text())
    recorded_map = {int(p): tids for p, tids in facts["threads"]["map"].items()}
    trace = read_profile(facts["profile"])
    assert set(trace.threads) <= set(recorded_map)
    # MXNet's threads run on stacks glibc allocated: the watcher's probe found each, no memory was searched
    assert facts["threads"]["searches"] == 0 and facts["threads"]["scans"] >= 2, facts["threads"]
    busiest = max(trace.threads, key=lambda p: len(trace.threads[p]))
    script = subprocess.run(
        script_command(str(tmp / "perf.data"), extra=["-F", "tid,ip,sym"]),
        capture_output=True, text=True, errors="replace", timeout=300, check=True,
    )  # fmt: skip
    executing: Counter[int] = Counter()
    for record in script.stdout.split("\n\n"):
        head, _, stack = record.strip().partition("\n")
        if "ThreadedEngine::ExecuteOprBlock" in stack:
            executing[int(head.split()[0])] += 1
    assert recorded_map[busiest] == [executing.most_common(1)[0][0]], (recorded_map, executing)


def test_the_tools_own_instruments_are_marked_and_their_share_reported(
    recorded: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """Issue 19: the profiler's dump thread (the thread outside Python that perf saw in
    Profiler::DumpProfile) is drawn under `[instrumentation] MXNet profiler thread`, all of its samples
    and nothing else; the share is one line and a capture fact in the SVG."""
    proc, tmp = recorded
    (sidecar,) = (tmp / "perf.data.mxnet").glob("mxnet-*.json")
    facts = json.loads(sidecar.read_text())
    python = set(facts["threads"]["python"]) | {facts["pid"]}
    script = subprocess.run(
        script_command(str(tmp / "perf.data"), extra=["-F", "tid,ip,sym"]),
        capture_output=True, text=True, errors="replace", timeout=300, check=True,
    )  # fmt: skip
    per_tid: Counter[int] = Counter()
    dumpers: set[int] = set()
    for record in script.stdout.split("\n\n"):
        head, _, stack = record.strip().partition("\n")
        if not head.strip():
            continue
        tid = int(head.split()[0])
        per_tid[tid] += 1
        if "mxnet::profiler::Profiler::DumpProfile" in stack:
            dumpers.add(tid)
    assert len(dumpers - python) == 1, (dumpers, python)  # continuous_dump's timer thread, seen dumping
    marked: Counter[str] = Counter()
    for line in (tmp / "out.folded").read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if len(frames) > 1 and frames[1].startswith("[instrumentation] "):
            marked[frames[1]] += int(count)
    assert marked["[instrumentation] MXNet profiler thread"] == sum(per_tid[t] for t in dumpers - python)
    assert marked["[instrumentation] flamegraph thread map"] == per_tid[facts["threads"]["watch"]]
    line = re.search(r"mxnet: instrumentation: ([0-9.]+) % of samples \(.*MXNet profiler thread [0-9.]+ %", proc.stderr)
    assert line is not None, proc.stderr[-3000:]
    assert 0.0 < float(line.group(1)) < 20.0
    assert "instrumentation: " in (tmp / "out.svg").read_text()
