"""Record the golden fixture of the MXNet join: a slice of a real `--jit --mxnet` recording of the MLP.

    python -m collectors.make_mxnet_fixture [--out tests/golden/mxnet] [--slice-ms 60]

Trains the MLP for one short epoch under `perf record -F 1999` with JIT naming and MXNet's profiler, then
keeps a SLICE-ms window from the middle of training, cut consistently from every stream:
  script.txt          `perf script --no-inline -F comm,pid,tid,time,event,ip,sym,dso --time W` (the fold's)
  evidence.txt        `perf script --no-inline -F tid,time,ip,sym --show-switch-events --time W` (the first pass)
  profile-<pid>.json  the profiler's spans that overlap the window (+/- 2 ms), as B/E events, one a line
  dnnl-verbose-<pid>.log  the verbose lines that start in that range (and the info lines)
  mxnet-<pid>.json    the sidecar (clock readings; file names relative to it; perf_freq added)
tests/test_mxnet_golden.py joins them and compares with the golden output beside them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from flamegraph.folding.grammar import THREAD_TIME
from flamegraph.frameworks.jit.hook import JIT_CALL_GRAPH, JitHook
from flamegraph.frameworks.mxnet.clock import Alignment, ClockReading
from flamegraph.frameworks.mxnet.hook import evidence_command, read_sidecars
from flamegraph.frameworks.mxnet.profile import read_profile
from flamegraph.io.perf import script_command
from flamegraph.record import ONCPU_FIELDS, RecordOptions
from flamegraph.window import Window

from .mnist import prepare_mnist
from .recipe import MlpRun, mxnet_hook, record_mlp

MARGIN_US = 2_000.0


def write_trace(source: str, target: Path, lo: float, hi: float) -> None:
    """The spans overlapping [lo, hi] as MXNet's B/E event pairs (same layout, fewer events)."""
    trace = read_profile(source)
    events = []
    for tid, index in trace.threads.items():
        for span in index.spans:
            if span.end >= lo and span.start <= hi:
                for phase, ts in (("B", span.start), ("E", span.end)):
                    events.append(
                        {"name": span.name, "cat": "operator", "ph": phase, "ts": int(ts), "pid": 0, "tid": tid}
                    )
    events.sort(key=lambda e: (e["ts"], e["ph"] == "B"))
    body = ",\n".join(json.dumps(e) for e in events)
    target.write_text('{\n    "traceEvents": [\n' + body + '\n    ],\n    "displayTimeUnit": "ms"\n}\n')


def write_verbose(source: str, target: Path, lo: float, hi: float) -> None:
    with open(source, "rb") as src, open(target, "wb") as out:
        for line in src:
            parts = line.split(b",", 2)
            if len(parts) > 1 and parts[1] == b"info":
                out.write(line)
                continue
            try:
                start = float(parts[1]) * 1000.0
            except (IndexError, ValueError):
                continue
            if lo <= start <= hi:
                out.write(line)


def in_window(text: bytes, window: tuple[float, float]) -> bytes:
    """perf script applies --time to samples, not to switch records: drop those outside too."""
    kept = []
    for record in text.split(b"\n"):
        match = THREAD_TIME.search(record) if record[:1] != b"\t" else None
        if (
            match is not None
            and b"PERF_RECORD_SWITCH" in record
            and not window[0] <= float(match.group(3)) <= window[1]
        ):
            continue
        kept.append(record)
    return b"\n".join(kept)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m collectors.make_mxnet_fixture", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("tests/golden/mxnet"))
    p.add_argument("--slice-ms", type=float, default=60.0)
    p.add_argument("--freq", type=int, default=1999, help="sampling frequency (more samples in a short slice)")
    p.add_argument("--max-batches", type=int, default=300)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flamegraph-fixture-") as tmp:
        scratch = Path(tmp)
        mx = mxnet_hook(scratch / "perf.data.mxnet")
        jit = JitHook(scratch / "perf.data.jit", note=print)
        how = RecordOptions(call_graph=JIT_CALL_GRAPH, freq=args.freq)
        mlp = MlpRun(prepare_mnist(), epochs=1, max_batches=args.max_batches)
        run = record_mlp(mlp, scratch / "perf.data", how, [jit, mx])
        assert run.log.window is not None
        middle = sum(run.log.window) / 2
        window = Window(middle, middle + args.slice_ms / 1000)
        (facts,) = read_sidecars(mx.directory)
        align = Alignment(ClockReading.from_list(facts["clock_start"]), ClockReading.from_list(facts["clock_end"]))
        lo, hi = align.realtime_us(window[0]) - MARGIN_US, align.realtime_us(window[1]) + MARGIN_US
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.iterdir():
            if old.is_file() and not old.name.startswith("expected"):
                old.unlink()
        pid = facts["pid"]
        fold = script_command(str(run.recording.perf_data), extra=["-F", ONCPU_FIELDS, "--time", window.perf_time()])
        (args.out / "script.txt").write_bytes(subprocess.run(fold, capture_output=True, check=True).stdout)
        first = evidence_command(run.recording, window)
        evidence = subprocess.run(first, capture_output=True, check=True).stdout
        (args.out / "evidence.txt").write_bytes(in_window(evidence, window))
        write_trace(facts["profile"], args.out / f"profile-{pid}.json", lo, hi)
        write_verbose(facts["verbose"], args.out / f"dnnl-verbose-{pid}.log", lo, hi)
        facts.update(profile=f"profile-{pid}.json", verbose=f"dnnl-verbose-{pid}.log", perf_freq=args.freq)
        (args.out / f"mxnet-{pid}.json").write_text(json.dumps(facts, indent=1) + "\n")
        shutil.rmtree(scratch / "perf.data.jit", ignore_errors=True)
    for path in sorted(args.out.iterdir()):
        print(f"{path} {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
