"""The long fuzz campaign behind `make fuzz`: every target under atheris (coverage-guided), one after
another, each for its share of the time; the figures add up across runs.

    python -m tests.fuzz.campaign --seconds 3600 [--targets fold_text,folded_text] [--work .fuzz]

Per target: seeds (real inputs from tests/golden and hypothesis-built ones) and the growing corpus
in WORK/corpus/TARGET; failures in WORK/findings/TARGET (one input per distinct failure, with its
traceback). WORK/summary.json keeps the totals of all runs: inputs tried, CPU seconds, failures.
A failure found here becomes a regression test by copying its input to tests/fuzz/corpus/TARGET/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
MAX_LEN = 16384
MAX_SEED = 12000


def seeds(name: str, count: int = 40) -> list[bytes]:
    """Real inputs (from the goldens) with zeroed option bytes, and hypothesis-built ones."""
    from hypothesis.errors import NonInteractiveExampleWarning

    from .strategies import INPUTS

    real: list[bytes] = []
    if name in ("fold_text", "fold_file"):
        real = [b"\0" * 4 + p.read_bytes()[:MAX_SEED] for p in sorted((GOLDEN / "fold").glob("*.perf.txt"))]
    elif name == "offcpu_text":
        real = [b"\0" * 12 + p.read_bytes()[:MAX_SEED] for p in sorted((GOLDEN / "offcpu").glob("*.perf.txt"))]
    elif name == "folded_text":
        real = [b"\0" * 5 + p.read_bytes()[:MAX_SEED] for p in sorted((GOLDEN / "render").glob("*.folded"))]
    elif name == "palette_file":
        real = [b"\0main->rgb(1,2,3)\nstd::f<int>_[k]->rgb(250,120,0)\n"]
    elif name == "highlight_spec":
        real = [b"\0\0dnnl=aqua:oneDNN\0MultiSGD=#ff00ff\0std::vector", b"\1\0(?:gemm|gemv):BLAS\0^jit_:JIT"]
    elif name == "window_spec":
        real = [b"1.5,2.5", b"10,", b",3"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        built = [INPUTS[name].example() for _ in range(count)]
    return real + built


def load_summary(path: Path) -> dict[str, dict[str, object]]:
    return json.loads(path.read_text()) if path.exists() else {}


def run_target(name: str, seconds: float, work: Path) -> dict[str, object]:
    """One atheris process for `seconds`; returns its runs, CPU seconds and failures."""
    corpus = work / "corpus" / name
    seed_dir = work / "seeds" / name
    findings = work / "findings" / name
    stats = work / "stats" / f"{name}.json"
    for directory in (corpus, seed_dir, stats.parent, findings):
        directory.mkdir(parents=True, exist_ok=True)
    for index, data in enumerate(seeds(name)):
        (seed_dir / f"seed-{index:03d}").write_bytes(data)
    argv = [
        sys.executable, "-m", "tests.fuzz.atheris_main", name, str(findings), str(stats),
        str(corpus), str(seed_dir), f"-max_total_time={int(seconds)}", f"-max_len={MAX_LEN}",
        "-timeout=60", "-rss_limit_mb=3072", "-print_final_stats=1",
        f"-artifact_prefix={findings}/",  # timeouts and out-of-memory inputs (libFuzzer stops at those)
    ]  # fmt: skip
    log = work / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    stats.unlink(missing_ok=True)
    with open(log, "w+b") as out:
        env = {**os.environ, "FUZZ_SCRATCH": str(work / "scratch" / name)}  # reused, not leaked per run
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        done = re.findall(rb"stat::number_of_executed_units: (\d+)", out.read())
    cpu = usage.ru_utime + usage.ru_stime
    result = json.loads(stats.read_text()) if stats.exists() else {"runs": 0, "failures": {}}
    return {
        "runs": int(done[-1]) if done else result["runs"],  # libFuzzer's own count; ours is written every 10 s
        "cpu_seconds": cpu,
        "wall_seconds": time.monotonic() - started,
        "failures": result["failures"],
        "exit": os.waitstatus_to_exitcode(status),
    }


def main(argv: list[str] | None = None) -> int:
    from ..helpers.shared import missing_reason, required
    from .targets import NEEDS_SHARED, TARGETS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600, help="total time, shared by the targets")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated target names")
    parser.add_argument("--work", type=Path, default=REPO / ".fuzz", help="corpus, findings and figures")
    args = parser.parse_args(argv)
    names = [n for n in args.targets.split(",") if n]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {', '.join(TARGETS)}")
    reason = missing_reason()
    if reason is not None and not required() and NEEDS_SHARED & set(names):
        print(f"skipping {', '.join(sorted(NEEDS_SHARED & set(names)))}: {reason}", flush=True)
        names = [n for n in names if n not in NEEDS_SHARED]
    args.work.mkdir(parents=True, exist_ok=True)
    summary_path = args.work / "summary.json"
    share = args.seconds / len(names)
    failed = 0
    for name in names:
        result = run_target(name, share, args.work)
        summary = load_summary(summary_path)  # re-read: another campaign may have added to it
        total = summary.setdefault(name, {"runs": 0, "cpu_seconds": 0.0, "failures": {}})
        total["runs"] = int(total["runs"]) + int(result["runs"])  # type: ignore[call-overload]
        total["cpu_seconds"] = float(total["cpu_seconds"]) + float(result["cpu_seconds"])  # type: ignore[arg-type]
        total["failures"] = {**total["failures"], **result["failures"]}  # type: ignore[dict-item]
        summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True))
        found = result["failures"]
        failed += len(found)  # type: ignore[arg-type]
        print(
            f"{name}: {result['runs']:,} inputs in {result['cpu_seconds']:.0f} CPU s, {len(found)} failures"  # type: ignore[arg-type]
            + "".join(f"\n    {key} -> {info['file']}" for key, info in found.items()),
            flush=True,
        )  # type: ignore[union-attr]
    summary = load_summary(summary_path)
    runs = sum(int(s["runs"]) for s in summary.values())  # type: ignore[call-overload]
    cpu = sum(float(s["cpu_seconds"]) for s in summary.values())  # type: ignore[arg-type]
    print(f"all campaigns so far: {runs:,} inputs, {cpu / 3600:.2f} CPU hours ({summary_path})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
