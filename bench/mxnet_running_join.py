"""`record --mxnet` streamed: the bytes the join's sample log holds, joined at the end only (as before
running.py) and joined as the run goes under a budget, on a recorded run replayed (tests/helpers/mxnet_replay.py:
the instruments' files read on as far as written at each moment, the sidecar's clocks every second). DIR is
what `flamegraph record --mxnet --max-spool 0 --perf-data DIR/perf.data` left (perf.data, perf.data.mxnet/).
Prints the samples and switches, what each way held at most, per hour of recording, and whether both gave the
same profile and tables.

    python bench/mxnet_running_join.py DIR [--budget 262144]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.mxnet_replay import prepare_sidecar, replay  # noqa: E402

from flamegraph.frameworks.mxnet.sample_log import SAMPLE_BYTES, SWITCH_BYTES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--budget", type=int, default=256 * 1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "mxnet"
        shutil.copytree(args.dir / "perf.data.mxnet", directory)
        prepare_sidecar(directory)
        facts = json.loads(next(directory.glob("mxnet-*.json")).read_text())
        seconds = float(facts["clock_end"][0]) - float(facts["clock_start"][0])
        said: list[str] = []
        started = time.perf_counter()
        whole, at_end = replay(directory, args.dir / "perf.data", None, said)
        whole_s = time.perf_counter() - started
        samples, switches = sum(whole.counts.values()), at_end.log.switch_count
        before = samples * SAMPLE_BYTES + switches * SWITCH_BYTES
        said_going: list[str] = []
        started = time.perf_counter()
        going, join = replay(directory, args.dir / "perf.data", -1, said_going, budget=args.budget)
        going_s = time.perf_counter() - started
        assert join.running is not None
        timing = ("mxnet: join while recording", "mxnet: join after the run")
        same = going.counts == whole.counts and [x for x in said if not x.startswith(timing)] == [
            x for x in said_going if not x.startswith(timing)
        ]
        hour = 3600 / seconds
        print(f"run {seconds:.1f} s (the process), {samples:,} samples, {switches:,} switches")
        print(f"joined at the end: {before / 1e6:.2f} MB held at the end, {before * hour / 1e6:.1f} MB per hour "
              f"({before / samples:.1f} B per sample); replay {whole_s:.1f} s")  # fmt: skip
        print(f"joined as it goes (budget {args.budget / 1e3:.0f} kB): {join.log.peak / 1e3:.1f} kB at most, "
              f"{join.running.joins} joins of {join.running.samples:,} samples, {len(join.running.found):,} "
              f"(thread, stack, found) counts, {join.log.switch_count:,} switches kept at the end; "
              f"replay {going_s:.1f} s")  # fmt: skip
        print(f"same profile and tables: {same}")


if __name__ == "__main__":
    main()
