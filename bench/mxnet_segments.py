"""`record --mxnet` streamed, the instruments' files in segments read as the run goes, against the whole
recording (`--max-spool 0`) and the one-file caps (FLAMEGRAPH_MXNET_SEGMENTS=0), on the MLP (synthetic
data, tests/helpers/mlp.py) for EPOCHS epochs of 12,800 rows: the --mxnet directory's peak bytes (polled
every 20 ms), our process's peak RSS and CPU (user+sys, the program's included: perf's children are ours),
the share of engine-thread samples under an [op] frame, and the samples after a cap.

    python bench/mxnet_segments.py --epochs 20 --max-spool 32M [--rounds 2]
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
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--max-spool", default="32M")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
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
