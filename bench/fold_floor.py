"""How fast can a pure-Python fold be? The floor beside inferno's collapser and ours, same input, same run.

    python bench/fold_floor.py [--repeat 7] [--inferno PATH] FILE...

For each `perf script` text FILE, interleaved rounds (bare, floor, ours -j1, ours, inferno, bare, ...) of:
  bare      `python -c pass`: the interpreter's start
  floor     the least a correct fold of ordinary records does, in the same interpreter: read the file,
            split it into records and lines, one dict look-up per frame line (a line seen before is not
            parsed again; a new one is cut to its symbol without the offset), the period read from the
            header, one join and one dict update per record, the folded text sorted and written. No
            event filter, no checks, no diagnostics, no naming rules: what is left is the interpreter's
            cost per line and per record.
  ours      `flamegraph fold FILE` with -j1 and with its default (-j2 on large files)
  inferno   cargo-flamegraph's collapser through the perf shim, as bench/bench_fold.py runs it
CPU time (user + system of the command and what it waited for) and wall, medians; then inferno ÷ each.
It answers whether "≤ 1.5× inferno's time" (issue 20) is reachable by a pure-Python fold at all: if the
floor itself is slower than that, no change to our fold reaches it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OURS = Path(sys.executable).with_name("flamegraph")
NAMES = ("bare", "floor", "ours -j1", "ours", "inferno")
PERF_SHIM = '#!/bin/sh\nexec cat "$BENCH_PERF_TEXT"\n'
FLOOR = r"""
import sys
data = open(sys.argv[1], "rb").read()
names = {}
counts = {}
for record in data.split(b"\n\n"):
    lines = record.split(b"\n")
    header = lines[0]
    if not header or header[0] == 35:  # "#": perf's --header block
        continue
    stack = [header[: header.find(b" ")]]
    fields = header.rsplit(None, 2)
    period = int(fields[-2]) if fields[-2].isdigit() else 1
    for line in reversed(lines[1:]):
        name = names.get(line)
        if name is None:
            symbol = line.strip().split(b" ", 1)[-1].rpartition(b" (")[0]
            name = names[line] = symbol.rpartition(b"+0x")[0] or symbol
        stack.append(name)
    key = b";".join(stack)
    counts[key] = counts.get(key, 0) + period
sys.stdout.buffer.write(b"".join(b"%s %d\n" % item for item in sorted(counts.items())))
"""


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run, output discarded; CPU counts every child it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    default_inferno = os.environ.get("INFERNO_FLAMEGRAPH", str(REPO / ".venv-bench/bin/flamegraph"))
    parser.add_argument("--inferno", default=default_inferno)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fold-floor-") as tmp:
        shim = Path(tmp) / "perf"
        shim.write_text(PERF_SHIM)
        shim.chmod(0o755)
        dummy = Path(tmp) / "dummy.data"
        dummy.write_bytes(b"")
        print(f"load {os.getloadavg()[0]:.2f} at the start, {args.repeat} rounds; CPU and wall medians")
        print(f"| input | size | {' | '.join(NAMES)} | {' | '.join(f'inferno ÷ {name}' for name in NAMES[1:4])} |")
        print("|---" * (2 + len(NAMES) + 3) + "|")
        for path in args.files:
            env = dict(os.environ, PATH=f"{tmp}{os.pathsep}{os.environ.get('PATH', '')}", BENCH_PERF_TEXT=str(path))
            inferno = [args.inferno, "--perfdata", str(dummy), "--no-inline", "-o", f"{tmp}/x.svg",
                       "--post-process", "sh -c 'cat > /dev/null; echo folded 1'"]  # fmt: skip
            commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
                "bare": ([sys.executable, "-c", "pass"], None),
                "floor": ([sys.executable, "-c", FLOOR, str(path)], None),
                "ours -j1": ([str(OURS), "fold", "-j1", str(path)], None),
                "ours": ([str(OURS), "fold", str(path)], None),
            }
            if Path(args.inferno).exists():
                commands["inferno"] = (inferno, env)
            for command, command_env in commands.values():  # warm the page cache, check it runs
                timed(command, command_env)
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
            for _ in range(args.repeat):
                for name, (command, command_env) in commands.items():
                    runs[name].append(timed(command, command_env))
            cpu = {name: statistics.median(c for _, c in values) for name, values in runs.items()}
            wall = {name: statistics.median(w for w, _ in values) for name, values in runs.items()}
            print(row(path, cpu, wall))
        print(f"load {os.getloadavg()[0]:.2f} at the end")


def row(path: Path, cpu: dict[str, float], wall: dict[str, float]) -> str:
    """One markdown row: CPU (wall) per command, then inferno's CPU ÷ the floor's and ours."""
    cells = [f"{cpu[name] * 1000:.0f} ms ({wall[name] * 1000:.0f} wall)" if name in cpu else "–" for name in NAMES]
    ratios = [f"{cpu['inferno'] / cpu[name]:.2f}×" if "inferno" in cpu else "–" for name in NAMES[1:4]]
    return f"| {path.name} | {path.stat().st_size / 1e6:.1f} MB | {' | '.join(cells)} | {' | '.join(ratios)} |"


if __name__ == "__main__":
    main()
