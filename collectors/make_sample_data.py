"""`make sample-data`: small real recordings of the MLP, as gzip'd `perf script` text plus how each was made.

    python -m collectors.make_sample_data [--out sample_data] [--epochs 2] [--offcpu-seconds 1]

Writes, for users and tests that have neither perf nor MXNet:
  mlp-oncpu.perf.txt.gz   on-CPU as `flamegraph record --jit` records it (`cpu-clock`, call graph
                          dwarf,65528; oneDNN's JIT kernels named and unwound by `perf inject --jit`),
                          the training window only
  mlp-offcpu.perf.txt.gz  off-CPU (`sched:sched_switch --switch-events --call-graph dwarf,8192 -p PID`),
                          attached for a short span in the middle of training
and next to each a JSON file with the exact perf record / perf script command lines, the window,
the capture metadata and the trainer's output. The gzip streams carry no timestamp.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flamegraph.folding.offcpu import SCRIPT_OPTIONS
from flamegraph.frameworks.jit.hook import JIT_CALL_GRAPH, JitHook
from flamegraph.io.diagnostics import PerfFailed
from flamegraph.io.perf import find_perf
from flamegraph.record import Recording, RecordOptions, Status, record, record_command, script_args
from flamegraph.record.offcpu import offcpu_spec

from .driver import driver_parser, run_driver, write_facts
from .mlp_log import TrainLog
from .mnist import prepare_mnist
from .recipe import MlpRun, TrainingFailed, record_mlp

GZIP_LEVEL = 9


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = driver_parser("collectors.make_sample_data", __doc__, epochs=2, out="sample_data")
    p.add_argument("--offcpu-seconds", type=float, default=1.0, help="length of the off-CPU attach")
    return p.parse_args(argv)


def write_script_text(recording: Recording, extra: list[str], target: Path) -> tuple[list[str], tuple[int, int]]:
    """`perf script --no-inline EXTRA` of the recording, gzip'd into target; (argv, text bytes, gz bytes)."""
    argv = [find_perf(), "script", "-i", str(recording.perf_data), "--no-inline", *extra]
    proc = subprocess.run(argv, capture_output=True)
    if proc.returncode != 0:
        tail = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise PerfFailed(f"perf script failed (exit {proc.returncode}): {tail}")
    text = proc.stdout
    with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as gz:
        gz.write(text)
    shown = ["perf", "script", "-i", "perf.data", "--no-inline", *extra]
    return shown, (len(text), target.stat().st_size)


def describe(
    recording: Recording, script: list[str], sizes: tuple[int, int], scratch: Path, **facts: object
) -> dict[str, object]:
    perf_record = shlex.join(record_command(recording.spec, "perf", Path("perf.data")))
    return {
        **facts,
        "perf record": perf_record.replace(f"{scratch}/", ""),  # the temporary directory is nobody's business
        "perf script": shlex.join(script),
        "text bytes": sizes[0],
        "gzip bytes": sizes[1],
        "capture": recording.metadata,
    }


def oncpu(mlp: MlpRun, out: Path, scratch: Path) -> dict[str, object]:
    print(f"== on-CPU: {mlp.epochs} epoch(s) under perf record, JIT kernels named (record --jit)", flush=True)
    jit = JitHook(scratch / "perf.data.jit", note=print)  # perf script reads the jitted-*.so files in here
    how = RecordOptions(call_graph=JIT_CALL_GRAPH)
    run = record_mlp(mlp, scratch / "perf.data", how, [jit])
    if not jit.unwound:
        raise PerfFailed("the JIT kernels were not named and unwound: the sample would show anonymous JIT code")
    extra = script_args(run.recording, run.log.window)
    script, sizes = write_script_text(run.recording, extra, out / "mlp-oncpu.perf.txt.gz")
    return describe(
        run.recording, script, sizes, scratch,
        what="on-CPU samples of the MXNet MLP (oneDNN) training on MNIST, training window only, "
        "recorded as `flamegraph record --jit` does (oneDNN's JIT kernels named and unwound)",
        window=list(run.log.window or ()),
        trainer=[line for line in run.lines if line.startswith(("epoch", "TRAIN_", "backend"))],
        fold="flamegraph fold --annotate sample_data/mlp-oncpu.perf.txt.gz",
    )  # fmt: skip


def offcpu(mlp: MlpRun, seconds: float, out: Path, scratch: Path) -> dict[str, object]:
    print(f"== off-CPU: attaching for {seconds} s to the MLP in training", flush=True)
    env = {**os.environ, **mlp.environment()}
    trainer = subprocess.Popen(mlp.command(), stdout=subprocess.PIPE, text=True, env=env)
    assert trainer.stdout is not None
    log = TrainLog()
    try:
        for line in trainer.stdout:
            log.feed(line)
            if log.start is not None:
                break
        if log.pid is None or log.start is None:
            raise TrainingFailed("the trainer ended before TRAIN_START")
        time.sleep(0.5)  # into the first epoch: the engine, prefetch and main threads are all busy
        recording = record(offcpu_spec(pid=log.pid, duration=seconds), scratch / "offcpu.data", status=Status())
    finally:
        trainer.terminate()
        trainer.communicate()
    script, sizes = write_script_text(recording, list(SCRIPT_OPTIONS), out / "mlp-offcpu.perf.txt.gz")
    return describe(
        recording, script, sizes, scratch,
        what=f"off-CPU (sched_switch) of every thread of the MXNet MLP, {seconds} s attached during epoch 0",
        attached=f"{0.5} s after TRAIN_START",
        fold="flamegraph fold --offcpu sample_data/mlp-offcpu.perf.txt.gz",
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_driver("make sample-data", lambda: make(args))


def make(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    data = prepare_mnist(args.cache)
    with tempfile.TemporaryDirectory(prefix="flamegraph-sample-") as tmp:
        facts = {
            "mlp-oncpu": oncpu(MlpRun(data, args.epochs), args.out, Path(tmp)),
            "mlp-offcpu": offcpu(MlpRun(data, epochs=3), args.offcpu_seconds, args.out, Path(tmp)),
        }
    for name, fact in facts.items():
        write_facts(args.out / f"{name}.json", fact)
        print(f"wrote {args.out / name}.perf.txt.gz ({fact['gzip bytes']:,} bytes) and {name}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
