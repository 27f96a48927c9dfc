"""One real recording, printed with every `perf script` -F combination and --show-*-events switch
this perf has: each variant folds to the stacks and weights of plain `perf script`, or says in one
line (exit 3) which field it lacks. The same for a sched_switch recording through off-CPU's fold,
and for --inline.

A small C program (two threads, a forked child, an always-inlined function) is built and recorded
once per module: `perf record -e cpu-clock -g`, `perf record -e sched:sched_switch -g` and `perf record
-e cpu-clock --call-graph dwarf,8192` (source lines of inlined frames, user registers).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.programs import compile_c, need_perf

from flamegraph.export.sources import sniff
from flamegraph.folding.offcpu import fold_offcpu
from flamegraph.folding.perf import FoldOptions
from flamegraph.folding.stage import fold_perf
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.sniff import PERF_SCRIPT, kind_of_head, read_head

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops

PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <sys/wait.h>
static volatile double sink;
static inline __attribute__((always_inline)) double step(int i) {  /* a division: most of leaf's samples land here */
    double x = i * 0.5 + sink; return x * x + x / (1.0 + i);
}
__attribute__((noinline)) static double leaf(int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += step(i);
    return s;
}
__attribute__((noinline)) static double mid(int n) { return leaf(n) + leaf(n / 2); }
__attribute__((noinline)) static double top(int n) { return mid(n) + 1; }
__attribute__((noinline)) static void nap(int k) { usleep(200 + k % 3 * 100); }
static int sleepy, baton[2];
static void *worker(void *arg) {
    (void)arg;
    char c;
    for (int k = 0; k < (sleepy ? 150 : 250); k++) {
        if (sleepy) { if (read(baton[0], &c, 1) != 1) _exit(1); } else sink += top(150000 + k);
    }
    return 0;
}
int main(int argc, char **argv) {
    sleepy = argc > 1;
    if (sleepy) {  /* one CPU, and the worker woken before each nap: the nap switches to it directly */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0 || pipe(baton) != 0) return 1;
    }
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    for (int k = 0; k < (sleepy ? 150 : 250); k++) {
        if (sleepy) { if (write(baton[1], "x", 1) != 1) return 1; nap(k + 1); } else sink += mid(120000 + k);
    }
    pthread_join(t, 0);
    pid_t child = fork();
    if (child == 0) { for (int k = 0; k < 100; k++) sink += top(100000 + k); _exit(0); }
    waitpid(child, 0, 0);
    return 0;
}
"""

# Printed as plain `perf script` prints it: every field folds the same.
SAME = [
    [], ["--ns"], ["-F", "+symoff"], ["-F", "+dso"], ["-F", "+srcline"],
    ["-F", "+insn,+insnlen"], ["-F", "+misc"], ["-F", "+flags"], ["-F", "+callindent"], ["-F", "+ipc"],
    ["-F", "+srccode"], ["-F", "+brstack"], ["-F", "+brstacksym"], ["-F", "+synth"], ["-F", "+machine_pid"],
    ["-F", "+vcpu"], ["-F", "+pid"], ["-F", "+dso,+symoff,+srcline"],
    ["-F", "comm,pid,tid,time,period,event,ip,sym,dso"],
    ["-F", "comm,tid,time,period,event,ip,sym,dso,symoff,srcline"], ["--reltime"], ["--header"], ["--show-info"],
    ["--show-task-events"], ["--show-mmap-events"], ["--show-switch-events"], ["--show-round-events"],
    ["--show-lost-events"], ["--show-namespace-events"], ["--show-cgroup-events"], ["--show-bpf-events"],
    ["--show-text-poke-events"], ["--show-on-off-events"],
    ["--show-task-events", "--show-mmap-events", "--show-switch-events", "--show-round-events", "-F", "+srcline"],
]  # fmt: skip
# Fields left out that weigh or name nothing: the same stacks, weights in samples (no period) or
# [unknown] frames not named by their DSO (no dso).
NO_PERIOD = [["-F", "comm,tid,time,event,ip,sym,dso"], ["-F", "comm,pid,tid,ip,sym,dso,symoff"]]
NO_DSO = [["-F", "comm,tid,time,period,event,ip,sym"], ["-F", "comm,tid,period,ip,sym,symoff", "--show-task-events"]]
BOTH = [["-F", "comm,tid,ip,sym"]]
# Fields a fold cannot do without: one line naming them, exit 3.
LACKING = {
    "comm,tid,ip": "sym", "comm,tid,sym": "ip", "tid,time,ip,sym": "comm", "ip,sym": "comm, tid",
    "comm,time,ip,sym": "tid", "tid,ip,sym": "comm",  # ' 3544 ': perf's '%5d ', no frame however it looks
}  # fmt: skip
SCHED_FIELDS = "comm,tid,cpu,time,event,trace,ip,sym,dso"  # a tracepoint's: -F +srcline wants ip named
SCHED_SAME = [
    [], ["--show-mmap-events"], ["-F", f"{SCHED_FIELDS},symoff,srcline"], ["-F", f"{SCHED_FIELDS},insn"], ["--header"],
    ["--ns"],
    ["-F", "comm,pid,tid,cpu,time,event,trace,ip,sym,dso,symoff"], ["--show-switch-events", "--show-lost-events"],
]  # fmt: skip
# Task records tell off-CPU more (a new thread's first wait starts at its FORK): these compare with
# plain --show-task-events, and so does the layout `offcpu` asks perf for.
SCHED_TASKS = [
    ["--show-task-events", "--show-mmap-events"], ["--show-task-events", "-F", f"{SCHED_FIELDS},srcline"],
    ["-F", "comm,tid,time,event,trace,ip,sym,dso", "--show-switch-events", "--show-task-events", "--show-lost-events"],
]  # fmt: skip


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("matrix")
    compile_c(where, "prog", PROGRAM, "-fno-omit-frame-pointer", "-pthread")
    for name, event, graph, args in (
        ("cpu", "cpu-clock", "fp", []), ("sched", "sched:sched_switch", "fp", ["sleep"]),
        ("dwarf", "cpu-clock", "dwarf,8192", []),  # DWARF: perf finds the inlined step(), and has user registers
    ):  # fmt: skip
        done = subprocess.run(
            [need_perf(), "record", "-q", "-e", event, "--call-graph", graph, "-o", str(where / f"{name}.data"),
             str(where / "prog"), *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"perf record -e {event} failed here: {done.stderr.strip()[-200:]}")
    yield where


def script(recordings: Path, name: str, args: list[str]) -> Path:
    out = recordings / ("-".join([name, *args]).replace("/", "_").replace(",", "_")[:150] + ".txt")
    if not out.exists():
        with out.open("wb") as stream:
            subprocess.run([need_perf(), "script", "-i", str(recordings / f"{name}.data"), *args], stdout=stream,
                           stderr=subprocess.DEVNULL, check=True, timeout=120)  # fmt: skip
    return out


def fold(path: Path, **options: object) -> dict[str, int]:
    diagnostics = Diagnostics(echo=False)
    counts = fold_perf([str(path)], FoldOptions(**options), diagnostics, jobs=1).profile.counts  # type: ignore[arg-type]
    assert diagnostics.skipped_records == 0 and not diagnostics.counts, (path.name, diagnostics.summary())
    return counts


def without_dso(counts: dict[str, int]) -> dict[str, int]:
    """What a fold can name without the DSO: an [unknown] symbol is [unknown], not [libc.so.6]."""
    result: dict[str, int] = {}
    for stack, count in counts.items():
        key = re.sub(r"\[[^;\]]*\]", "[unknown]", stack)
        result[key] = result.get(key, 0) + count
    return result


def in_samples(counts: dict[str, int], period: int) -> dict[str, int]:
    return {stack: count // period for stack, count in counts.items()}


def assert_rounds_are_not_samples(text: Path, weight: int) -> None:
    """perf 6.1's `--show-round-events` text can differ from the plain one in more than its round lines:
    in some recordings (seen: one in two on a quiet machine) a thread's samples print as `:PID` with
    [unknown] frames, perf resolving them before their COMM/MMAP. The fold cannot name what perf did not:
    the round lines must fold to nothing (the text without them folds the same) and every sample be kept."""
    rounds = text.read_bytes()
    without = text.with_name(text.stem + "-no-rounds.txt")
    without.write_bytes(b"".join(line for line in rounds.splitlines(keepends=True)
                                 if not line.startswith(b"PERF_RECORD_FINISHED_ROUND")))  # fmt: skip
    assert b"PERF_RECORD_FINISHED_ROUND" in rounds
    folded = fold(text)
    assert folded == fold(without) and sum(folded.values()) == weight


def test_every_variant_folds_as_plain_perf_script(recordings: Path) -> None:
    plain = fold(script(recordings, "cpu", []))
    assert any("leaf" in stack for stack in plain) and len(plain) >= 3
    period = 250_000  # cpu-clock at perf record's default 4 kHz: every sample's period, in ns
    samples = in_samples(plain, period)
    assert sum(samples.values()) * period == sum(plain.values())  # so weights in samples compare exactly
    for args in SAME:
        if "--show-round-events" in args:  # perf 6.1 may resolve threads otherwise when it shows rounds
            assert_rounds_are_not_samples(script(recordings, "cpu", args), sum(plain.values()))
            continue
        assert fold(script(recordings, "cpu", args)) == plain, args
    for args in NO_PERIOD:
        assert fold(script(recordings, "cpu", args)) == samples, args
    for args in NO_DSO:
        assert without_dso(fold(script(recordings, "cpu", args))) == without_dso(plain), args
    for args in BOTH:
        assert without_dso(fold(script(recordings, "cpu", args))) == without_dso(samples), args


CPP_PROGRAM = r"""
#include <functional>
#include <vector>
namespace ns { template <typename T, int N> struct Box {
    T v[N];
    __attribute__((noinline)) T sum() const {
        T s{};
        for (int k = 0; k < 40; k++) for (int i = 0; i < N; i++) s += v[i] * k;
        return s;
    }
}; }
template <typename T> __attribute__((noinline)) T work(const std::vector<T>& v, std::function<T(T)> f) {
    T s{};
    for (auto x : v) s += f(x);
    return s;
}
int main() {
    std::vector<double> v(400000, 1.5);
    ns::Box<double, 1024> box{};
    double t = 0, scale = 1;
    std::function<double(double)> f = [&](double x) { return x * x * scale; };  // _Function_handler<double (double)
    for (int r = 0; r < 60; r++) { t += work<double>(v, f); t += box.sum(); }
    return t < 0;
}
"""


def test_cpp_names_with_parentheses_fold_whole_without_dso(tmp_path: Path) -> None:
    """-F ip,sym of a C++ program: `std::_Function_handler<double (double), main::{lambda(double)#1}>::_M_invoke`
    is named as perf report and plain perf script name it (a ' (' is no DSO when the line ends otherwise),
    through the fast path (headers with their event) and the line path (-F comm,tid,ip,sym)."""
    compile_c(tmp_path, "prog", CPP_PROGRAM, "-fno-omit-frame-pointer", language="c++")
    subprocess.run([need_perf(), "record", "-q", "-e", "cpu-clock", "-g", "-o", str(tmp_path / "cpp.data"),
                    str(tmp_path / "prog")], check=True, capture_output=True, timeout=120)  # fmt: skip
    plain = fold(script(tmp_path, "cpp", []))
    handler = "std::_Function_handler<double (double), main::{lambda(double)#1}>::_M_invoke"
    assert any(stack.endswith(f";{handler}") for stack in plain), sorted(plain)
    samples = in_samples(plain, 250_000)
    for args in NO_DSO:
        assert without_dso(fold(script(tmp_path, "cpp", args))) == without_dso(plain), args
    for args in [*BOTH, ["-F", "comm,tid,ip,sym,symoff"]]:
        assert without_dso(fold(script(tmp_path, "cpp", args))) == without_dso(samples), args


def test_convert_and_render_take_every_variant_for_perf_script(recordings: Path) -> None:
    """The layouts fold reads are perf script text to `convert` and `render` too (grammar.starts_sample):
    headers without time nor event (-F comm,tid,ip,sym) were folded stacks to convert, every line bad."""
    variants = [*SAME, *NO_PERIOD, *NO_DSO, *BOTH, ["-F", "comm,tid,period,ip,sym"], ["-F", "comm,tid,ip,sym,dso"]]
    for args in variants:
        path = script(recordings, "cpu", args)
        assert sniff(str(path)).kind == "perf", args
        assert kind_of_head(read_head(str(path))) == PERF_SCRIPT, args
    for args in [*BOTH, ["-F", "comm,tid,period,ip,sym"], ["-F", "comm,tid,ip,sym,dso"]]:
        path = script(recordings, "cpu", args)
        for source, stdin in ((str(path), None), ("-", path.read_bytes())):
            command = [sys.executable, "-m", "flamegraph", "convert", source, "-", "--to", "folded", "--no-threads"]
            done = subprocess.run(command, input=stdin, capture_output=True, timeout=120)
            assert done.returncode == 0 and done.stderr == b"", (args, done.stderr[-300:])
            folded = dict(line.rsplit(" ", 1) for line in done.stdout.decode().splitlines())
            assert {stack: int(n) for stack, n in folded.items()} == fold(path, annotate_kernel=True, annotate_jit=True)
        trace = subprocess.run([sys.executable, "-m", "flamegraph", "convert", str(path), str(path) + ".trace.json"],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        assert trace.returncode == 3 and len(trace.stderr.splitlines()) == 1, trace.stderr[-300:]
        assert "perf script printed no time nor event field" in trace.stderr


def test_text_weighed_by_period_says_its_unit(recordings: Path, tmp_path: Path) -> None:
    """a-F2: perf script text is weighed by perf's period (as stackcollapse-perf.pl weighs it): cpu-clock's
    are nanoseconds, and the profile says so (subtitle, top table, FILE.json, speedscope, pprof), where it
    said '521,500,000 samples' for 2,086; the same recording read from perf.data says samples, and diff
    will not compare the two."""
    from flamegraph.export.pprof_schema import message_classes

    text, data = script(recordings, "cpu", []), recordings / "cpu.data"
    from_text = fold_perf([str(text)], FoldOptions(), Diagnostics(echo=False), jobs=1).profile
    from_data = fold_perf([str(data)], FoldOptions(), Diagnostics(echo=False), jobs=1).profile
    assert (from_text.unit, from_data.unit) == ("nanoseconds", "samples")
    assert from_text.total == 250_000 * from_data.total  # perf record's default 4 kHz: 250,000 ns a sample
    for args in NO_PERIOD:
        folded = fold_perf([str(script(recordings, "cpu", args))], FoldOptions(), Diagnostics(echo=False))
        assert folded.profile.unit == "samples", args

    def flamegraph(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "flamegraph", *args], capture_output=True, timeout=120)

    out = tmp_path / "t.folded"
    assert flamegraph("fold", str(text), "-o", str(out)).returncode == 0
    assert json.loads((tmp_path / "t.folded.json").read_text())["unit"] == "nanoseconds"
    svg = tmp_path / "t.svg"
    assert flamegraph("convert", str(text), str(svg)).returncode == 0
    drawn = svg.read_text()
    seconds = f"{from_text.total / 1e9:,.3f} s"
    assert f"cpu-clock · {from_text.total:,} nanoseconds ({seconds} of samples&#39; periods)" in drawn
    assert re.search(r"Top \d+ functions by self nanoseconds", drawn) and f"{from_data.total:,} samples" not in drawn
    speedscope = tmp_path / "t.speedscope.json"
    assert flamegraph("convert", str(text), str(speedscope)).returncode == 0
    assert {p["unit"] for p in json.loads(speedscope.read_text())["profiles"]} == {"nanoseconds"}
    pprof = tmp_path / "t.pb.gz"
    assert flamegraph("convert", str(text), str(pprof)).returncode == 0
    message = message_classes()["Profile"]()
    message.ParseFromString(gzip.decompress(pprof.read_bytes()))
    strings = list(message.string_table)
    assert [(strings[t.type], strings[t.unit]) for t in message.sample_type] == [("cpu", "nanoseconds")]
    assert sum(sample.value[0] for sample in message.sample) == from_text.total
    samples = tmp_path / "d.folded"
    assert flamegraph("fold", str(data), "-o", str(samples)).returncode == 0
    refused = flamegraph("diff", str(samples), str(out), "-o", str(tmp_path / "d.svg"))
    assert refused.returncode == 2 and b"BEFORE counts samples and AFTER nanoseconds" in refused.stderr


@pytest.mark.parametrize("fields", sorted(LACKING))
def test_a_variant_without_a_needed_field_says_which(recordings: Path, fields: str) -> None:
    """A file, a gzip of it and stdin alike (b-6: a stream, read once, was never looked at again)."""
    path = script(recordings, "cpu", ["-F", fields])
    packed = path.with_name(path.name + ".gz")
    packed.write_bytes(gzip.compress(path.read_bytes()))
    for source, shown, stdin in ((path, path, None), (packed, packed, None), ("-", "<stdin>", path.read_bytes())):
        done = subprocess.run([sys.executable, "-m", "flamegraph", "fold", str(source)], input=stdin,
                              capture_output=True, timeout=120)  # fmt: skip
        last = done.stderr.decode().splitlines()[-1]
        assert done.returncode == 3 and done.stdout == b""
        assert last.startswith(f"flamegraph: {shown}: perf script printed no {LACKING[fields]} field"), last


def test_srcline_folds_as_the_reference_does(recordings: Path, shared: Path) -> None:
    """fold --srcline --compat is stackcollapse-perf.pl --srcline, byte for byte; without --compat
    the same stacks (the reference's `:file:line` on every frame perf could place), but for the records
    the reference joins into one (seen once in ~10 recordings: the process's first sample, a page fault in
    `_start`, joined to the next record; --compat joins them too), which ours keeps apart."""
    text = script(recordings, "cpu", ["-F", "+srcline", "--show-task-events"])
    reference = shared / "peer-tests" / "flamegraph-pl" / "bin" / "stackcollapse-perf.pl"
    expected = subprocess.run(["perl", str(reference), "--srcline", str(text)], capture_output=True, check=True)
    ours = subprocess.run(
        [sys.executable, "-m", "flamegraph", "fold", "--srcline", "--compat", str(text)], capture_output=True
    )
    assert ours.returncode == 0 and ours.stdout == expected.stdout
    assert b";leaf:" in expected.stdout and b"prog.c:" in expected.stdout
    folded = fold(text, srcline=True)
    mine = {f"{stack} {count}\n".encode() for stack, count in folded.items()}
    theirs = set(expected.stdout.splitlines(keepends=True))
    joined = sum(folded.values()) - sum(int(line.rsplit(b" ", 1)[1]) for line in theirs)  # the periods it lost
    period = min(folded.values())
    assert joined >= 0 and joined % period == 0, (joined, period)
    # each record it joins to the next: two stacks of ours become one of its (the second one's count)
    assert len(mine ^ theirs) <= 4 * (joined // period), sorted(mine ^ theirs)


def test_inline_variants_fold_as_plain_inline(recordings: Path) -> None:
    """--inline adds the inlined functions perf finds (dso 'inlined', folded with _[i]); apart from
    those every --inline variant folds as plain --inline, and plain --inline as plain perf script.
    (perf 6.1 on Debian 12 finds none in this program: its inline unwinding needs libbfd.)"""
    inline = fold(script(recordings, "cpu", ["--inline"]))
    plain = fold(script(recordings, "cpu", []))
    dropped: dict[str, int] = {}
    for stack, count in inline.items():
        key = ";".join(frame for frame in stack.split(";") if not frame.endswith("_[i]"))
        dropped[key] = dropped.get(key, 0) + count
    assert dropped == plain
    for args in (["--inline", "-F", "+srcline"], ["--inline", "--show-task-events", "--show-mmap-events"]):
        assert fold(script(recordings, "cpu", args)) == inline, args


# An inlined frame's source line says `(inlined)` and its frame loses the DSO; full paths; registers
# after the frames, with no blank line before the next record.
DWARF_SAME = [
    ["-F", "+srcline"], ["-F", "+srcline", "--full-source-path"], ["-F", "+uregs"],
    ["-F", "+srcline,+uregs", "--full-source-path", "--show-task-events"],
]  # fmt: skip


def test_source_and_register_lines_of_a_dwarf_recording_fold_as_plain(recordings: Path) -> None:
    """`  prog.c:8 (inlined)` was folded as a frame `.c:8_[i]`; --full-source-path's paths and +uregs'
    ` ABI:2 AX:0x...` lines made every record a bad one (skipped, exit 3)."""
    plain = fold(script(recordings, "dwarf", []))
    assert any(stack.endswith(";leaf;step_[i]") for stack in plain), plain
    for args in DWARF_SAME:
        text = script(recordings, "dwarf", args)
        assert b" (inlined)\n" in text.read_bytes() or "+uregs" in args
        assert fold(text) == plain, args


def test_srcline_of_inlined_frames_folds_as_the_reference_under_compat(recordings: Path, shared: Path) -> None:
    """--compat stays stackcollapse-perf.pl --srcline byte for byte on a text with `(inlined)` source lines."""
    text = script(recordings, "dwarf", ["-F", "+srcline"])
    reference = shared / "peer-tests" / "flamegraph-pl" / "bin" / "stackcollapse-perf.pl"
    expected = subprocess.run(["perl", str(reference), "--srcline", str(text)], capture_output=True, check=True)
    ours = subprocess.run(
        [sys.executable, "-m", "flamegraph", "fold", "--srcline", "--compat", str(text)], capture_output=True
    )
    assert ours.returncode == 0 and ours.stdout == expected.stdout and expected.stdout


def offcpu(path: Path) -> tuple[dict[str, int], object]:
    diagnostics = Diagnostics(echo=False)
    profile = fold_offcpu([str(path)], diagnostics=diagnostics)
    # Unpaired switch-outs and exited tasks (`:-1 -1`) are the recording's: the same in every variant.
    # Nothing else may be reported.
    assert set(diagnostics.counts) <= {"unpaired-switch-out", "exited-task"}, (path.name, diagnostics.summary())
    return profile.counts, diagnostics.counts


def same_waits(variant: tuple[dict[str, int], object], plain: tuple[dict[str, int], object], slack_us: int) -> bool:
    """The same waits: stacks, weights (µs) and reports. Records printed before the first switch
    (--show-mmap-events: the exec's MMAP) open the window earlier: a wait open since the recording
    started is then longer, or shows only then: it is left out. With --ns every wait is timed to the ns,
    not the µs: less than a µs per wait apart, `slack_us` (the number of switch records) in all."""
    (counts, reports), (expected, expected_reports) = variant, plain
    since = "[off-CPU since recording start]"
    if {s for s in counts if since not in s} != {s for s in expected if since not in s}:
        return False
    if not slack_us and reports != expected_reports:
        return False
    apart = sum(abs(weight - expected[stack]) for stack, weight in counts.items() if since not in stack)
    return apart <= slack_us


def test_sched_switch_variants_fold_as_plain_through_offcpu(recordings: Path) -> None:
    plain = offcpu(script(recordings, "sched", []))
    # The worker's waits for the baton (read: libc's leaf hides worker's frame) end in the main thread's
    # records: paired in every recording.
    assert any("start_thread;read;" in stack and stack.endswith(";[S]") for stack in plain[0]), plain
    switches = script(recordings, "sched", []).read_bytes().count(b" sched:sched_switch:")
    for args in SCHED_SAME:
        assert same_waits(offcpu(script(recordings, "sched", args)), plain, switches if "--ns" in args else 0), args
    tasks = offcpu(script(recordings, "sched", ["--show-task-events"]))
    assert any("start_thread;read;" in stack for stack in tasks[0]), tasks
    for args in SCHED_TASKS:
        assert same_waits(offcpu(script(recordings, "sched", args)), tasks, 0), args
