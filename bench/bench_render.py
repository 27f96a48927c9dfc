"""Render benchmark: `flamegraph render` against flamegraph.pl on one large folded profile, same run.

    python bench/bench_render.py [--stacks 81000] [--folded FILE] [--peer PATH/flamegraph.pl] [--runs 3]

Without --folded it synthesizes a deterministic profile shaped like a real one (a call tree with a
heavy-tailed split of samples, names from a fixed vocabulary of C++/Python-like functions). Both
tools get the same file, width (1200) and --minwidth (0.1 px). Each run is a fresh process, timed
wall-clock, with its peak RSS (getrusage of a small parent); the medians are reported with the SVG sizes, and the
frames both drew are compared by parsing their <title> texts (name, depth, count).
The reference is found via --peer, $FLAMEGRAPH_PL, or ../peer/flamegraph.pl; it is never committed.
"""

from __future__ import annotations

import argparse
import html
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = ("alloc", "parse", "compute", "forward", "backward", "gemm", "copy", "reorder", "launch", "exec", "run",
         "push", "wait", "lock", "read", "write", "update", "sgd", "dispatch", "invoke", "submit", "step")  # fmt: skip
SPACES = ("mxnet::op::", "mxnet::engine::", "dnnl::impl::cpu::", "std::", "", "", "_Py", "__", "numpy::")


def vocabulary(rng: random.Random, size: int) -> list[str]:
    names = set()
    while len(names) < size:
        words = "_".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        names.add(rng.choice(SPACES) + words + rng.choice(("", "", "<float>", "_[k]", str(rng.randint(0, 99)))))
    return sorted(names)


def synthesize(stacks: int, seed: int = 42) -> dict[str, int]:
    """`stacks` distinct stacks: a random call tree, leaves weighted by a heavy tail."""
    rng = random.Random(seed)
    names = vocabulary(rng, 6000)
    out: dict[str, int] = {}
    todo: list[tuple[str, int, int]] = [("python", 0, stacks)]  # (stack so far, depth, leaves wanted)
    while todo:
        prefix, depth, wanted = todo.pop()
        if wanted <= 1 or depth >= 48:
            out[prefix] = out.get(prefix, 0) + max(1, int(rng.paretovariate(1.1)))
            continue
        if rng.random() < 0.1:  # some self time on the way
            out[prefix] = out.get(prefix, 0) + rng.randint(1, 30)
        fanout = min(wanted, rng.choice((1, 1, 1, 2, 2, 3, 4, 6, 10)))
        shares = [rng.paretovariate(1.0) for _ in range(fanout)]
        total = sum(shares)
        children = rng.sample(names, fanout)
        for child, share in zip(children, shares, strict=True):
            todo.append((f"{prefix};{child}", depth + 1, max(1, round(wanted * share / total))))
    if len(out) > stacks:  # rounding grew the tree: keep a uniform sample of exactly `stacks`
        out = {key: out[key] for key in sorted(rng.sample(sorted(out), stacks))}
    return out


def write_folded(counts: dict[str, int], path: Path) -> None:
    path.write_text("".join(f"{stack} {count}\n" for stack, count in sorted(counts.items())))


def find_peer(option: str | None) -> Path | None:
    for candidate in (option, os.environ.get("FLAMEGRAPH_PL"), str(REPO.parent / "peer" / "flamegraph.pl")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


# Runs one command and reports its wall time and peak RSS. A small process of its own, so the
# child's peak is not the benchmark's (a forked child starts out with its parent's pages).
MEASURE = """
import os, resource, subprocess, sys, time
with open(sys.argv[1], "wb") as out:
    start = time.perf_counter()
    code = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
    elapsed = time.perf_counter() - start
print(code, elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def timed(argv: list[str], stdout: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process writing `stdout`."""
    result = subprocess.run([sys.executable, "-c", MEASURE, str(stdout), *argv], capture_output=True, text=True)
    code, elapsed, rss = result.stdout.split()
    if result.returncode != 0 or code != "0":
        raise SystemExit(f"failed ({code}): {' '.join(argv)}")
    return float(elapsed), int(rss)


TITLE = re.compile(rb'<title>(.*?) \(([\d,.]+) [^<]*</title>\s*<rect x="[^"]*" y="([\d.]+)"')


def titles(svg: bytes, bottom_up_from: float, step: float) -> Counter[tuple[str, int]]:
    """(name, depth) -> count from frame titles; depth from the rect's y (root row at `bottom_up_from`)."""
    found: Counter[tuple[str, int]] = Counter()
    for name, count, y in TITLE.findall(svg):
        depth = round((bottom_up_from - float(y)) / step)
        found[(html.unescape(name.decode("utf-8", "replace")), depth)] += round(float(count.replace(b",", b"")))
    return found


def frame_counts(svg: bytes) -> Counter[tuple[str, int]]:
    """(name, depth) -> count of an SVG of ours or of flamegraph.pl's (16 px rows, not inverted)."""
    root = re.search(rb'<title>all \([^<]*</title>\s*<rect x="[^"]*" y="([\d.]+)"', svg)
    assert root is not None, "no root frame"
    return titles(svg, float(root.group(1)), 16)


def compare(ours: bytes, theirs: bytes) -> str:
    a, b = frame_counts(ours), frame_counts(theirs)
    if a == b:
        return f"same {len(a):,} frames with the same counts"
    return f"DIFFERENT: {len(a - b)} of ours not in theirs, {len(b - a)} of theirs not in ours"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stacks", type=int, default=81_000, help="distinct stacks to synthesize")
    parser.add_argument("--folded", type=Path, help="use this folded file instead")
    parser.add_argument("--peer", help="path of flamegraph.pl")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-render-"))
    folded = args.folded
    if folded is None:
        folded = work / "synthetic.folded"
        write_folded(synthesize(args.stacks), folded)
    lines = sum(1 for _ in folded.open("rb"))
    print(f"input: {folded} ({lines:,} distinct stacks, {folded.stat().st_size / 1e6:.1f} MB)")
    tools = {"flamegraph render": [sys.executable, "-m", "flamegraph", "render", str(folded)]}
    peer = find_peer(args.peer)
    if peer is not None:
        tools["flamegraph.pl"] = ["perl", str(peer), str(folded)]
    else:
        print("flamegraph.pl not found (--peer, $FLAMEGRAPH_PL or ../peer/flamegraph.pl): timing ours only")
    results: dict[str, tuple[float, float, int]] = {}
    outputs: dict[str, bytes] = {}
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in tools}
    for _ in range(args.runs):  # interleaved, so both see the same machine load
        for name, argv in tools.items():
            out = work / (re.sub(r"\W+", "-", name) + ".svg")
            samples[name].append(timed(argv, out))
            outputs[name] = out.read_bytes()
    print(f"{'tool':<20} {'median s':>9} {'peak RSS MB':>12} {'SVG KB':>8}")
    for name, runs in samples.items():
        seconds = statistics.median(s for s, _ in runs)
        rss = max(r for _, r in runs) / 1024
        results[name] = (seconds, rss, len(outputs[name]))
        print(f"{name:<20} {seconds:>9.3f} {rss:>12.1f} {len(outputs[name]) / 1024:>8.0f}")
    if "flamegraph.pl" in results:
        ours, theirs = results["flamegraph render"], results["flamegraph.pl"]
        print(f"speed-up {theirs[0] / ours[0]:.2f}x, SVG size {ours[2] / theirs[2]:.2f}x of flamegraph.pl's")
        print("frames:", compare(outputs["flamegraph render"], outputs["flamegraph.pl"]))


if __name__ == "__main__":
    main()
