"""Where `flamegraph convert FILE x.svg` spends its time, stage by stage (issue 20's text -> SVG rows).

    python bench/convert_stages.py [--repeat 5] [--tree DIR] FILE...

Each round runs the command in a fresh interpreter (the checkout DIR first on its path, default this
one) with timers around the stages, and prints medians over the rounds: CPU ms of this process for each
stage, the wall ms of the fold (this process and its worker together) and of the whole run, and the CPU
of the fold's worker. Stages: start-up (the interpreter and `site`, before our first import), imports
before folding, sniffing the input, the fold (split into this process's pieces, the wait for the worker,
the merge, the profile made of the stacks), what the renderer needs imported (`prepare_writer`, done
while the worker folds; or after the fold), the drawing (layout, frames, the stacks of the views, the document) and the
write. Run it on any checkout (`--tree`): a stage the checkout does not have shows `-`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Runs inside the measured interpreter: argv = [FILE, OUT]; prints one JSON object of stage -> ms.
PROBE = r"""
import time
start_cpu = time.process_time()  # the interpreter's start and site, before any of our imports
start = time.perf_counter()
import json, resource, sys
cpu, ms = {}, {}

def timed(module, name, key, wall=False):
    func = getattr(module, name, None)
    if func is None:
        return
    def run(*args, **kwargs):
        begin, begin_wall = time.process_time(), time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            cpu[key] = cpu.get(key, 0.0) + 1000 * (time.process_time() - begin)
            if wall:
                ms[key] = ms.get(key, 0.0) + 1000 * (time.perf_counter() - begin_wall)
    setattr(module, name, run)

import flamegraph.cli.convert_run as convert_run
import flamegraph.export.sources as sources
import flamegraph.folding.stage as stage
import flamegraph.folding.parallel as parallel
import flamegraph.folding.perf as perf
import flamegraph.folding.perf_blocks as perf_blocks
cpu["imports before folding"] = 1000 * (time.process_time() - start_cpu)
timed(convert_run, "sniff", "sniff") if hasattr(convert_run, "sniff") else timed(sources, "sniff", "sniff")
timed(stage, "fold_perf", "fold (all)", wall=True)
timed(parallel, "fold_blocks", "fold: this process's part")
timed(parallel, "_collect", "fold: wait for the worker, unpickle", wall=True)
timed(parallel, "_merge", "fold: merge")
timed(perf.PerfCollapser, "profile", "fold: the profile of the stacks")
timed(convert_run, "prepare_writer", "renderer imported (during the fold)", wall=True)
read_source = convert_run.read_source

def read_then_wrap(*args, **kwargs):
    # after the fold: the renderer (imported now unless it was during the fold), its stages timed
    got = read_source(*args, **kwargs)
    begin = time.process_time()
    import flamegraph.render as render
    import flamegraph.render.svg as svg
    cpu["renderer imported (after the fold)"] = 1000 * (time.process_time() - begin)
    timed(svg, "layout_stacks", "draw: layout")
    for frames, document in (("_draw", "_document"), ("draw", "render_document")):  # before, after the split
        timed(svg, frames, "draw: frames")
        timed(svg, document, "draw: document")
    timed(svg, "encode", "draw: stacks of the views")
    timed(render, "render_svg", "draw (all)")
    timed(convert_run, "write_bytes", "write")
    return got

convert_run.read_source = read_then_wrap
convert_run.run_convert(source=sys.argv[1], output=sys.argv[2])
cpu["this process (all)"] = 1000 * time.process_time()
cpu["start-up"] = 1000 * start_cpu
worker = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu["the fold's worker"] = 1000 * (worker.ru_utime + worker.ru_stime)
ms["run (from our first import)"] = 1000 * (time.perf_counter() - start)
print(json.dumps({"cpu": cpu, "wall": ms}))
"""
ORDER = [
    "start-up",
    "imports before folding",
    "sniff",
    "fold (all)",
    "fold: this process's part",
    "renderer imported (during the fold)",
    "fold: wait for the worker, unpickle",
    "fold: merge",
    "fold: the profile of the stacks",
    "renderer imported (after the fold)",
    "draw (all)",
    "draw: layout",
    "draw: frames",
    "draw: stacks of the views",
    "draw: document",
    "write",
    "this process (all)",
    "the fold's worker",
    "run (from our first import)",
]


def run_once(tree: Path, path: Path, out: Path) -> dict[str, dict[str, float]]:
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}  # byte-compiled modules are used, as make bench does
    command = [sys.executable, "-c", PROBE, str(path), str(out)]
    # cwd: not a checkout (`-c` puts the current directory first on the path, before PYTHONPATH)
    done = subprocess.run(command, env=env, cwd=out.parent, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.tree / "flamegraph")], check=True)
    files = [path.resolve() for path in args.files]
    with tempfile.TemporaryDirectory() as tmp:
        columns = []
        for path in files:
            runs = [run_once(args.tree.resolve(), path, Path(tmp) / "x.svg") for _ in range(args.repeat)]
            columns.append(runs)
    print("| stage | " + " | ".join(f"{p.name} CPU ms | wall ms" for p in args.files) + " |")
    print("|---|" + "---|---|" * len(args.files))
    for stage in ORDER:
        cells = []
        for runs in columns:
            for kind in ("cpu", "wall"):
                values = [run[kind][stage] for run in runs if stage in run[kind]]
                cells.append(f"{statistics.median(values):.1f}" if values else "-")
        print(f"| {stage} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
