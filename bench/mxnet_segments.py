"""`record --mxnet` streamed, the instruments' files in segments read as the run goes, against the whole
recording (`--max-spool 0`) and the one-file caps (FLAMEGRAPH_MXNET_SEGMENTS=0), on the MLP (synthetic
data, tests/helpers/mlp.py) for EPOCHS epochs of 12,800 rows: the --mxnet directory's peak bytes (polled
every 20 ms), our process's peak RSS and CPU (user+sys, the program's included: perf's children are ours),
the share of engine-thread samples under an [op] frame, the samples after a cap, and how much of the trace
was read while the program ran (segments are read lazily: only when the unread part nears its cap).
--held prints instead the bytes a span and a primitive execution take in the readers' memory (tracemalloc,
200,000 of each, as read and once sealed: segment_reader.SPAN_BYTES and EXECUTION_BYTES).

    python bench/mxnet_segments.py --epochs 20 --max-spool 32M [--rounds 2]
    python bench/mxnet_segments.py --held
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.mlp import THREE_EPOCHS  # noqa: E402

COVERAGE = re.compile(r"mxnet: ([0-9.]+) % of ([0-9,]+) engine-thread samples under an \[op\] frame")
AFTER = re.compile(r"mxnet: ([0-9,]+) of ([0-9,]+) samples came after")
DURING = re.compile(r"profiler trace [0-9.]+ MB \(in segments, ([0-9.]+) MB read while it ran\)")


def peak_dir(pattern: str, stop: threading.Event, peak: list[int], pid: list[int], rss: list[int]) -> None:
    while not stop.wait(0.02):
        try:  # our process's high-water mark (VmHWM), read while it lives
            with open(f"/proc/{pid[0]}/status") as f:
                rss[0] = max([rss[0], *(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))])
        except (OSError, IndexError, ValueError):
            pass
        total = 0
        for directory in glob.glob(pattern):
            for entry in os.scandir(directory) if os.path.isdir(directory) else []:
                try:
                    total += entry.stat().st_size
                except OSError:
                    continue
        peak[0] = max(peak[0], total)


def one(label: str, spool: str, env: dict[str, str], script: Path, tmp: Path) -> dict[str, str]:
    scratch = tmp / f"tmp-{label}"
    scratch.mkdir(exist_ok=True)
    outputs = ["--folded", str(tmp / f"{label}.folded"), "-o", str(tmp / f"{label}.svg")]
    argv = [sys.executable, "-m", "flamegraph", "record", "--mxnet", "--max-spool", spool, *outputs,
            "--", sys.executable, str(script)]  # fmt: skip
    if spool == "0":
        argv[argv.index("-o"):argv.index("-o")] = ["--perf-data", str(tmp / f"{label}.data")]
    pattern = str(scratch / "flamegraph-spool-*" / "mxnet") if spool != "0" else str(tmp / f"{label}.data.mxnet")
    stop, peak, pid, rss = threading.Event(), [0], [0], [0]
    watcher = threading.Thread(target=peak_dir, args=(pattern, stop, peak, pid, rss))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
                             env={**os.environ, **env, "TMPDIR": str(scratch)})  # fmt: skip
    pid[0] = child.pid
    watcher.start()
    out, err = child.communicate()
    proc = subprocess.CompletedProcess(argv, child.returncode, out, err)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stop.set()
    watcher.join()
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    coverage, cut = COVERAGE.search(proc.stderr), AFTER.search(proc.stderr)
    return {
        "run": label,
        "--mxnet dir peak": f"{peak[0] / 1e6:.1f} MB",
        "our RSS peak": f"{rss[0] / 1e3:.0f} MB",
        "CPU (all)": f"{after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime:.1f} s",
        "samples": m.group(1) if (m := re.search(r"recorded ([0-9,]+) samples", proc.stderr)) else "-",
        "dropped": m.group(1) if (m := re.search(r"keep up with perf: ([0-9,]+)", proc.stderr)) else "0",
        "wall": f"{wall:.1f} s",
        "named": f"{coverage.group(1)} % of {coverage.group(2)}" if coverage else "-",
        "after a cap": cut.group(1) if cut else "0",
        "trace read while it ran": f"{m.group(1)} MB" if (m := DURING.search(Path(outputs[-1]).read_text())) else "-",
    }


def held(count: int = 200_000) -> None:
    """Bytes per span and per execution in the readers' memory, as read and once sealed (tracemalloc)."""
    import random
    import tracemalloc

    from flamegraph.frameworks.mxnet.dnnl import VerboseLog, parse_line
    from flamegraph.frameworks.mxnet.profile import Pairing, ProfilerTrace

    rng = random.Random(1)
    events, ts = [], 1795356975007241
    for i in range(count):  # 40 operator names on 4 threads, as MXNet writes them (B, E)
        tid, name = 14697135246327494939 + i % 4, f"Op{i % 40}"
        events.append({"name": name, "cat": "operator", "ph": "B", "ts": ts, "tid": tid})
        events.append({"name": name, "cat": "operator", "ph": "E", "ts": ts + rng.randint(1, 300), "tid": tid})
        ts += 400
    prefix = "exec,cpu,inner_product,x64:gemm:jit,forward_training,src_f32::blocked:ab:f0,,"
    lines = [f"dnnl_verbose,{1795404596604.382 + i * 0.01:.6f},{prefix},mb64ic{784 + i % 8}oc128,{rng.random():.6f}"
             .encode() for i in range(count)]  # fmt: skip
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    pairing = Pairing()
    for event in events:
        pairing.add(event)
    read = tracemalloc.get_traced_memory()[0] - base
    trace = ProfilerTrace()
    pairing.finish(trace)
    sealed = tracemalloc.get_traced_memory()[0] - base
    base = tracemalloc.get_traced_memory()[0]
    log = VerboseLog()
    for line in lines:
        primitive = parse_line(line)
        assert not isinstance(primitive, str | None)
        log.add(primitive)
    log_read = tracemalloc.get_traced_memory()[0] - base
    log.index()
    log_sealed = tracemalloc.get_traced_memory()[0] - base
    assert trace.spans == count and len(log) == count
    print(f"bytes a span: {read / count:.0f} as read, {sealed / count:.0f} sealed; "
          f"an execution: {log_read / count:.0f} as read, {log_sealed / count:.0f} sealed")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--max-spool", default="32M")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--held", action="store_true", help="bytes a span and an execution take; no run")
    args = parser.parse_args()
    if args.held:
        held()
        return
    with tempfile.TemporaryDirectory(prefix="mxseg-") as name:
        tmp = Path(name)
        script = tmp / "mlp.py"
        script.write_text(THREE_EPOCHS.replace("range(3)", f"range({args.epochs})"))
        runs = [("segments", args.max_spool, {}), ("whole", "0", {}),
                ("one file", args.max_spool, {"FLAMEGRAPH_MXNET_SEGMENTS": "0"})]  # fmt: skip
        rows = [one(f"{label}-{r}", spool, env, script, tmp) for r in range(args.rounds) for label, spool, env in runs]
    print(f"load {os.getloadavg()[0]:.1f}; {args.epochs} epochs; --max-spool {args.max_spool}")
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(row[k] for k in keys))


if __name__ == "__main__":
    main()
