"""The MLP collector: its output protocol, the recipe helpers, and `make flamegraph` / `make diff` for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.mlp_log import TrainLog, format_epoch, format_marker, parse_log
from collectors.recipe import ROOT, MlpRun, PairedOverhead, choose_engine, overhead, shares
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.io.perf import find_perf
from flamegraph.model import FoldedProfile
from flamegraph.record.spec import perf_version

TRAINER_OUTPUT = """PID 20558
backend oneDNN (MKLDNN), mxnet 1.9.1
TRAIN_START 1100.090395
epoch 0 train-acc 0.9242 val-acc 0.9599 time 1.55s 38734 samples/s
EPOCH_END 1102.500000 cpu 3.100
[03:07:27] ../src/executor/graph_executor.cc:1991: Subgraph backend MKLDNN is activated.
epoch 1 train-acc 0.9669 val-acc 0.9653 time 1.56s 38447 samples/s
EPOCH_END 1108.300000
TRAIN_END 1108.310021
total 3.11s
"""
# The frames every training-window profile of the oneDNN MLP has (engine worker and optimizer).
MXNET_FRAMES = (
    "mxnet::engine::ThreadedEngine::ExecuteOprBlock",
    "mxnet::op::MKLDNNFCForward",
    "mxnet::op::MKLDNNFCBackward",
    "MultiSGDKernel",
    "start_thread",
)


def test_trainer_output_round_trips() -> None:
    log = parse_log(TRAINER_OUTPUT)
    assert log.pid == 20558 and log.window == (1100.090395, 1108.310021)
    assert [e.val_acc for e in log.epochs] == [0.9599, 0.9653] and log.val_acc == 0.9653
    assert log.mean_rate() == pytest.approx((38734 + 38447) / 2)
    assert log.mean_rate(skip_first=True) == 38447
    assert format_epoch(0, 0.9242, 0.9599, 1.55, 38734) == TRAINER_OUTPUT.splitlines()[3]
    assert format_marker("TRAIN_START", 1100.090395) == "TRAIN_START 1100.090395"


def test_epoch_windows_from_the_trainers_own_marks() -> None:
    """`make flamegraph` draws a graph per epoch from the trainer's EPOCH_END lines (perf's clock)."""
    log = parse_log(TRAINER_OUTPUT)
    assert log.epoch_windows() == [(1100.090395, 1102.5), (1102.5, 1108.3)]
    assert parse_log("EPOCH_END 3.0\n").epoch_windows() == []  # no TRAIN_START: no window
    assert parse_log("EPOCH_END 3.0 cpu 1.250\n").epoch_cpu == [1.25]  # the epoch's CPU seconds
    partial = parse_log("TRAIN_START 1.0\nEPOCH_END 2.0\n")  # interrupted in epoch 2: epoch 1 only
    assert partial.epoch_windows() == [(1.0, 2.0)]


def test_overhead_is_the_median_of_interleaved_pairs() -> None:
    def rate(value: float) -> TrainLog:
        log = TrainLog()
        log.feed(f"epoch 0 train-acc 0.9 val-acc 0.9 time 1.00s {value:.0f} samples/s")
        return log

    paired = PairedOverhead.of([(rate(100), rate(80)), (rate(100), rate(97)), (rate(200), rate(190))])
    assert paired is not None and paired.losses == pytest.approx((20.0, 3.0, 5.0))
    assert paired.median == pytest.approx(5.0)
    assert paired.line() == "+5.0 % (median of 3 interleaved pairs, spread +3.0 .. +20.0 %)"
    assert PairedOverhead.of([(TrainLog(), rate(1))]) is None
    cpu = PairedOverhead.of([(parse_log("EPOCH_END 1.0 cpu 2.0"), parse_log("EPOCH_END 1.0 cpu 2.2"))], cpu=True)
    assert cpu is not None and cpu.losses == pytest.approx((10.0,))


def test_partial_output_has_no_window() -> None:
    log = TrainLog()
    for line in TRAINER_OUTPUT.splitlines()[:5]:
        log.feed(line)
    assert log.window is None and log.start == 1100.090395 and len(log.epochs) == 1


def test_runs_merge_for_throughput() -> None:
    first, second = parse_log(TRAINER_OUTPUT), TrainLog()
    second.feed("epoch 0 train-acc 0.9 val-acc 0.9 time 1.00s 40000 samples/s")
    both = first.merged(second)
    assert both.window == first.window and len(both.epochs) == 3 and both.best_rate() == 40000


def test_interrupted_training_still_closes_the_window() -> None:
    log = parse_log("TRAIN_START 5.000000\nTRAIN_END 7.250000 (interrupted)\n")
    assert log.window == (5.0, 7.25)


def test_overhead_and_shares() -> None:
    fast, slow = parse_log(TRAINER_OUTPUT), TrainLog()
    slow.feed("epoch 0 train-acc 0.9 val-acc 0.9 time 1.00s 35000 samples/s")
    assert overhead(fast, slow) == pytest.approx(100 * (38590.5 - 35000) / 38590.5)
    assert overhead(fast, TrainLog()) is None
    profile = FoldedProfile({"python;a;MKLDNNRun;gemm": 3, "python;b": 1})
    assert shares(profile, ["MKLDNN", "b", "zzz"]) == {"MKLDNN": 75.0, "b": 25.0, "zzz": 0.0}


def test_mlp_command_runs_from_any_directory(tmp_path: Path) -> None:
    run = MlpRun(tmp_path, epochs=1, max_batches=5, env={"MXNET_MKLDNN_ENABLED": "0"})
    assert run.command()[1:] == ("-m", "collectors.train_mlp", "--data", str(tmp_path), "--epochs", "1",
                                 "--max-batches", "5")  # fmt: skip
    env = run.environment()
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT) and env["MXNET_MKLDNN_ENABLED"] == "0"


def test_the_engine_is_naive_only_where_python_frames_join_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make flamegraph: MXNet's NaiveEngine for a 3.12+ trainer recorded with Python frames (operators on the
    Python thread), MXNet's default otherwise; the user's MXNET_ENGINE_TYPE wins over either."""
    monkeypatch.delenv("MXNET_ENGINE_TYPE", raising=False)
    pythons = {}
    for release in ("3.12", "3.11"):
        pythons[release] = tmp_path / f"python{release}"  # the version is read from the name: never run
        pythons[release].write_text("#!/bin/sh\n")
        pythons[release].chmod(0o755)
    naive = choose_engine("auto", str(pythons["3.12"]), frames=True)
    assert naive.env == {"MXNET_ENGINE_TYPE": "NaiveEngine"} and "NaiveEngine (MXNET_ENGINE_TYPE)" in naive.header
    assert naive.line.startswith("MXNET_ENGINE_TYPE=NaiveEngine: operators run on the Python thread")
    for wanted, python, frames in (("auto", "3.11", True), ("auto", "3.12", False), ("threaded", "3.12", True)):
        assert choose_engine(wanted, str(pythons[python]), frames) == choose_engine("threaded", "", False)
    assert choose_engine("naive", str(pythons["3.11"]), frames=False).env == naive.env  # asked for: given
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "ThreadedEngine")
    yours = choose_engine("naive", str(pythons["3.12"]), frames=True)
    assert yours.env == {} and yours.header == "ThreadedEngine (your MXNET_ENGINE_TYPE)"


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics())


def driver(module: str, out: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", module, "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.perf
@pytest.mark.mxnet
@pytest.mark.slow
@pytest.mark.parallel  # no time, rate or share bounded (the overhead is only printed): beside two busy loops
@pytest.mark.usefixtures("mnist")
def test_make_flamegraph_end_to_end(tmp_path: Path) -> None:
    """One real epoch without and with perf (one pair: the median of pairs is test_overhead_is_the_median_of_...):
    frames, accuracy, the overhead line, outputs, the epoch's own graph and the trend page."""
    proc = driver("collectors.make_flamegraph", tmp_path, "--epochs", "1", "--pairs", "1", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    facts = json.loads((tmp_path / "mlp-oncpu.json").read_text())
    assert facts["val_acc"] >= 0.95  # real MNIST, converted right
    assert facts["samples_per_s_without_perf"] > 0 and isinstance(facts["overhead_percent"], float)
    profile = load(tmp_path / "mlp-oncpu.folded")
    assert profile.total == facts["samples"] > 200
    for frame in MXNET_FRAMES:
        assert any(frame in stack for stack in profile.counts), frame
    # the training window excludes start-up: no `import mxnet` (dlopen of libmxnet) in it
    assert not any("_dl_map_object" in stack for stack in profile.counts)
    assert "top 10 frames by self samples" in proc.stdout and "(median of 1 interleaved pair, spread" in proc.stdout
    assert len(facts["overhead_pairs_percent"]) == 1 and facts["epoch_graphs"] == 1
    assert len(facts["cpu_added_pairs_percent"]) == 1 and "CPU added: " in proc.stdout
    epoch = load(tmp_path / "mlp-oncpu-epoch-1.folded")  # the one epoch: the training window less TRAIN_END's tail
    assert 0.8 * profile.total <= epoch.total <= profile.total
    assert "epoch 1 of 1" in (tmp_path / "mlp-oncpu-epoch-1.svg").read_text()
    assert "share per epoch" in (tmp_path / "mlp-oncpu-trend.svg").read_text()
    if sys.version_info < (3, 12):  # the Makefile's 3.11: no Python frames, said once; MXNet's own engine
        assert (proc.stdout + proc.stderr).count(f"is Python 3.{sys.version_info[1]}: its Python functions") == 1
        assert facts["engine"] is None and "NaiveEngine" not in proc.stdout
    svg = (tmp_path / "mlp-oncpu.svg").read_text()
    assert "MultiSGDKernel" in svg  # the optimizer's frames
    version = perf_version(find_perf())
    assert version != "unknown" and f">perf: {version}<" in svg  # the capture metadata, as its own header line


@pytest.mark.perf
@pytest.mark.mxnet
@pytest.mark.slow
@pytest.mark.parallel  # no time, rate or share bounded (the overhead is only printed): beside two busy loops
@pytest.mark.usefixtures("mnist")
def test_make_diff_end_to_end(tmp_path: Path) -> None:
    proc = driver("collectors.make_diff", tmp_path, "--epochs", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    mkl, blas = load(tmp_path / "mlp-mkldnn.folded"), load(tmp_path / "mlp-openblas.folded")
    assert any("MKLDNNFCForward" in s for s in mkl.counts) and not any("MKLDNNFC" in s for s in blas.counts)
    assert any("sgemm_kernel_" in s for s in blas.counts)  # OpenBLAS's gemm, whatever core it picked
    assert "OpenBLAS (" in proc.stdout and "OPENBLAS_CORETYPE=" in proc.stdout
    svg = (tmp_path / "mlp-diff.svg").read_text()
    assert "sgemm_kernel_" in svg and "MKLDNNFCForward" in svg  # both sides drawn


def test_make_memory_records_what_a_user_would(tmp_path: Path) -> None:
    """`make memory` runs the CLI: --memory --mxnet, a sample every 512 KiB, record's stacks unless asked."""
    from collectors.make_memory import parser, record_command
    from collectors.recipe import MlpRun

    mlp = MlpRun(tmp_path / "mnist", epochs=1, max_batches=300)
    command, svg, folded = record_command(parser().parse_args(["--out", str(tmp_path)]), mlp)
    at = command.index("record")
    assert command[at:at + 6] == ["record", "--memory", "alloc", "--memory-sample", "512K", "--mxnet"]
    assert "--call-graph" not in command and command[command.index("--") + 1:] == list(mlp.command())
    assert (svg, folded) == (tmp_path / "mlp-memory.svg", tmp_path / "mlp-memory.folded")
    live, _, _ = record_command(parser().parse_args(["--out", str(tmp_path), "--live", "--call-graph", "fp"]), mlp)
    assert live[at:at + 5] == ["record", "--memory", "live", "--memory-sample", "512K"]
    assert live[live.index("--call-graph") + 1] == "fp"
