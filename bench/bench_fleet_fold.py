"""`fold --scheduler local:N` against a local one-process fold: the speed-up at N workers.

    .venv/bin/python bench/bench_fleet_fold.py --workers 1 2 4 FILE...

For each N: start a LocalCluster of N one-thread workers (timed apart: a real cluster is already
running), then time `fold_on_cluster` (best of --repeat) and check its output equals the local fold's.
"""

from __future__ import annotations

import argparse
import io
import os
import time

from flamegraph.fleet.cluster import Scheduler, connect
from flamegraph.fleet.fold import fold_on_cluster
from flamegraph.folding.perf import FoldOptions
from flamegraph.folding.stage import fold_perf
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import write_folded


def folded_bytes(profile: object) -> bytes:
    out = io.BytesIO()
    write_folded(profile, out)  # type: ignore[arg-type]
    return out.getvalue()


def best(run: object, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    size = sum(os.path.getsize(f) for f in args.files) / 1e6
    print(f"{size:.0f} MB in {len(args.files)} file(s); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    local_s, local = best(lambda: fold_perf(args.files, FoldOptions(), Diagnostics(echo=False), jobs=1), args.repeat)
    expected = folded_bytes(local.profile)  # type: ignore[attr-defined]
    print(f"local fold, 1 process: {local_s:.2f} s ({size / local_s:.0f} MB/s)")
    for n in args.workers:
        started = time.perf_counter()
        with connect(Scheduler(None, n)) as client:  # the LocalCluster `--scheduler local:N` starts
            start_s = time.perf_counter() - started
            seconds, result = best(
                lambda c=client: fold_on_cluster(c, args.files, FoldOptions(), Diagnostics(echo=False)), args.repeat
            )
            same = folded_bytes(result.profile) == expected  # type: ignore[attr-defined]
        print(
            f"--scheduler local:{n}: {seconds:.2f} s ({size / seconds:.0f} MB/s, x{local_s / seconds:.2f});"
            f" cluster start {start_s:.1f} s; output identical: {same}"
        )


if __name__ == "__main__":
    main()
