"""The grammar of `perf script` text (flamegraph/folding/grammar.py) and the readers that use it.

The texts below are cut from `perf script` of a real recording (perf 6.1, `perf record -e cpu-clock
-g` of a small C program): the layouts users paste, each read the way the plain layout is.
tests/test_perf_script_matrix.py prints one recording with every -F combination and --show-*-events
switch this perf has and checks the same with the real tool.
"""
# ruff: noqa: W291, E501  (the texts are as perf prints them: a blank after the event, long record lines)

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
from helpers.shared import shared_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flamegraph.export.timeline import read_timeline
from flamegraph.folding import grammar as script
from flamegraph.folding.frames import name_frame
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.perf_blocks import fold_blocks
from flamegraph.folding.perf_sched import OffCpuOptions, SchedCollapser
from flamegraph.folding.stage import fold_perf
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.sniff import PERF_SCRIPT, kind_of_head
from flamegraph.window import Window, WindowFilter

PLAIN = b"""prog 12440 10638.687781:     250000 cpu-clock: 
\t           162bd init_cpu_features.constprop.0+0xc2d (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
\t               0 [unknown] ([unknown])

prog 12442 10638.688677:     250000 cpu-clock: 
\t            11aa leaf+0x31 (/tmp/g20/prog)
\t            11f4 top+0x9 (/tmp/g20/prog)
\t            1213 worker+0x15 (/tmp/g20/prog)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

"""
PLAIN_FOLDED = {
    "prog;[unknown];init_cpu_features.constprop.0": 250000,
    "prog;start_thread;worker;top;leaf": 250000,
}

TASK_EVENTS = b"""perf-exec     0     0.000000: PERF_RECORD_COMM: perf-exec:12440/12440
prog 12440 10638.687535: PERF_RECORD_COMM exec: prog:12440/12440
prog 12440 10638.687781:     250000 cpu-clock: 
\t           162bd init_cpu_features.constprop.0+0xc2d (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
\t               0 [unknown] ([unknown])

prog 12440 10638.688361: PERF_RECORD_FORK(12440:12442):(12440:12440)
prog 12442 10638.688677:     250000 cpu-clock: 
\t            11aa leaf+0x31 (/tmp/g20/prog)
\t            11f4 top+0x9 (/tmp/g20/prog)
\t            1213 worker+0x15 (/tmp/g20/prog)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

prog 12442 10639.698519: PERF_RECORD_EXIT(12440:12442):(12438:12438)
"""

MMAP_EVENTS = b"""swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1276f48) @ 0xffffffff81000000]: x [kernel.kallsyms]_text
prog 12440 10638.687641: PERF_RECORD_MMAP2 12440/12440: [0x7f44c2764000(0x2000) @ 0 00:00 0 0]: r-xp [vdso]
prog 12440 10638.687781:     250000 cpu-clock: 
\t           162bd init_cpu_features.constprop.0+0xc2d (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
\t               0 [unknown] ([unknown])

prog 12440 10638.687913: PERF_RECORD_MMAP2 12440/12440: [0x7f44c2596000(0x156000) @ 0x26000 fe:00 339380 0]: r-xp /usr/lib/x86_64-linux-gnu/libc.so.6
PERF_RECORD_FINISHED_ROUND
prog 12442 10638.688677:     250000 cpu-clock: 
\t            11aa leaf+0x31 (/tmp/g20/prog)
\t            11f4 top+0x9 (/tmp/g20/prog)
\t            1213 worker+0x15 (/tmp/g20/prog)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

"""

SRCLINE = b"""prog 12440 10638.687781:     250000 cpu-clock: 
\t           162bd init_cpu_features.constprop.0+0xc2d (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
  dl-cacheinfo.h:831
\t               0 [unknown] ([unknown])

prog 12442 10638.688677:     250000 cpu-clock: 
\t            11aa leaf+0x31 (/tmp/g20/prog)
  prog.c:6
\t            11f4 top+0x9 (/tmp/g20/prog)
  prog.c:8
\t            1213 worker+0x15 (/tmp/g20/prog)
  prog.c:9
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)
  libc.so.6[891f5]

"""

KERNEL_SRCLINE = b"""prog 12440 10638.688361:     250000 cpu-clock: 
\tffffffff8135e61a copy_process+0x99b ([kernel.kallsyms])
  [kernel.kallsyms][ffffffff8135e61a]
\t          1098d9 clone3+0x19 (/usr/lib/x86_64-linux-gnu/libc.so.6)
  :0

"""

NO_DSO = b"""prog 12440 
\t           162bd init_cpu_features.constprop.0
\t               0 [unknown]

prog 12442 
\t            11aa leaf
\t            11f4 top
\t            1213 worker
\t           891f5 start_thread

"""

INSN = b"""prog 12440 10638.687781:     250000 cpu-clock: 
\t           162bd init_cpu_features.constprop.0+0xc2d (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
\t               0 [unknown] ([unknown])
 ilen: 3 insn: c1 e8 0e
prog 12442 10638.688677:     250000 cpu-clock: 
\t            11aa leaf+0x31 (/tmp/g20/prog)
\t            11f4 top+0x9 (/tmp/g20/prog)
\t            1213 worker+0x15 (/tmp/g20/prog)
\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)
 ilen: 0

"""

EXITED = PLAIN + b""":-1    -1 [001] 10639.000001:     250000 cpu-clock: 
\tffffffff8103d0ca native_write_msr ([kernel.kallsyms])

"""


def fold_text(text: bytes, block: int = 1 << 18, **options: object) -> tuple[dict[str, int], Diagnostics]:
    """Fold through the fast path, in blocks of `block` bytes; also through the line path: the same."""
    folded = []
    for fast in (True, False):
        diagnostics = Diagnostics(echo=False)
        collapser = PerfCollapser(FoldOptions(**options), diagnostics)  # type: ignore[arg-type]
        if fast:
            fold_blocks(collapser, [text[i : i + block] for i in range(0, len(text), block)], "in")
        else:
            collapser.feed(text.splitlines(keepends=True), "in")
        folded.append((collapser.profile().counts, diagnostics.records, diagnostics.skipped_records, diagnostics.counts))
    assert folded[0] == folded[1]
    return folded[0][0], diagnostics


@pytest.mark.parametrize("block", [7, 64, 1 << 18])
@pytest.mark.parametrize("text", [TASK_EVENTS, MMAP_EVENTS], ids=["task-events", "mmap-events"])
def test_records_that_are_not_samples_are_never_folded(text: bytes, block: int) -> None:
    """--show-task-events folded 9 invented stacks of PERF_RECORD_COMM and skipped every sample;
    --show-mmap-events made each PERF_RECORD_MMAP* line a stack of weight 1."""
    counts, diagnostics = fold_text(text, block)
    assert counts == PLAIN_FOLDED
    assert diagnostics.records == 2 and diagnostics.skipped_records == 0


def test_source_lines_keep_their_record() -> None:
    """-F +srcline: the indented source line after each frame dropped the whole record, exit 0."""
    for text in (SRCLINE, KERNEL_SRCLINE, INSN):
        counts, diagnostics = fold_text(text)
        assert diagnostics.skipped_records == 0 and not diagnostics.counts, text
    assert fold_text(SRCLINE)[0] == PLAIN_FOLDED
    assert fold_text(INSN)[0] == PLAIN_FOLDED


def test_frames_without_a_dso_fold() -> None:
    """-F comm,tid,ip,sym: every frame line was a bad-frame-line; nothing folded, exit 3."""
    counts, diagnostics = fold_text(NO_DSO)
    assert counts == {name: 1 for name in PLAIN_FOLDED}  # no period printed: a sample weighs 1
    assert diagnostics.skipped_records == 0


@pytest.mark.parametrize("tid", [b"3544 ", b" 3544 ", b"  354 ", b"1234567 "])
def test_a_thread_id_alone_is_a_header_without_comm(tid: bytes) -> None:
    """-F tid,ip,sym: perf prints the tid as '%5d ', so a short one is indented like a frame; it is the
    header that lacks comm, not a bare address (which made the message 'no comm, tid fields')."""
    text = tid + b"\n\t            11aa leaf\n\t            11f4 top\n\n" + tid + b"\n\t            11aa leaf\n"
    assert script.missing_fields(text.splitlines()) == ["comm"]


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        (PLAIN, "nanoseconds"),  # cpu-clock's period: ns
        (PLAIN.replace(b"cpu-clock", b"cpu-clock:u"), "nanoseconds"),
        (PLAIN.replace(b"cpu-clock", b"page-faults"), "events"),  # -c N of any other event: its events
        (PLAIN.replace(b"250000 cpu-clock", b"1 sched:sched_switch"), "samples"),  # a period of 1 weighs a sample
        (NO_DSO, "samples"),  # no period printed
        (NO_DSO.replace(b"prog 12440 ", b"prog 12440     250000 "), "events"),  # a period, no event to say whose
    ],
)  # fmt: skip
def test_a_fold_of_text_says_what_its_weights_count(tmp_path: Path, text: bytes, unit: str) -> None:
    """a-F2: weights that are perf's periods are no samples."""
    path = tmp_path / "in.txt"
    path.write_bytes(text)
    assert fold_perf([str(path)], FoldOptions(), Diagnostics(echo=False)).profile.unit == unit


def test_an_exited_task_is_counted_in_the_skip_summary() -> None:
    counts, diagnostics = fold_text(EXITED)
    assert counts == PLAIN_FOLDED
    assert diagnostics.counts == Counter({"exited-task": 1})
    assert diagnostics.summary() == "skipped 1 of 3 records: 1 exited-task"


def fold_srcline(tmp_path: Path, text: bytes, compat: bool) -> bytes:
    path = tmp_path / "src.txt"
    path.write_bytes(text)
    result = fold_perf([str(path)], FoldOptions(srcline=True, compat=compat), Diagnostics(echo=False))
    return b"".join(f"{stack} {count}\n".encode() for stack, count in sorted(result.profile.counts.items()))


def test_fold_srcline_appends_file_and_line(tmp_path: Path) -> None:
    assert fold_srcline(tmp_path, SRCLINE + KERNEL_SRCLINE, compat=False) == (
        b"prog;[unknown];init_cpu_features.constprop.0:dl-cacheinfo.h:831 250000\n"
        b"prog;clone3::0;copy_process 250000\n"
        b"prog;start_thread:libc.so.6;worker:prog.c:9;top:prog.c:8;leaf:prog.c:6 250000\n"
    )


@pytest.mark.shared
def test_fold_srcline_compat_is_byte_exact_with_the_reference(tmp_path: Path) -> None:
    reference = shared_dir() / "peer-tests" / "flamegraph-pl" / "bin" / "stackcollapse-perf.pl"
    text = SRCLINE + KERNEL_SRCLINE + b"prog 12442 10639.698519: PERF_RECORD_EXIT(12440:12442):(12438:12438)\n"
    (tmp_path / "in.txt").write_bytes(text)
    expected = subprocess.run(
        ["perl", str(reference), "--srcline", str(tmp_path / "in.txt")], capture_output=True, check=True
    ).stdout
    assert b":prog.c:6" in expected
    assert fold_srcline(tmp_path, text, compat=True) == expected


def test_join_srclines_keeps_every_line() -> None:
    lines = (SRCLINE + NO_DSO + INSN).split(b"\n")
    for compat in (False, True):
        joined = list(script.join_srclines(lines, compat))
        assert b"\n".join(joined).split(b"\n") == lines
        assert b"\t            11aa leaf+0x31 (/tmp/g20/prog)\n  prog.c:6" in joined


# -- the grammar's facts -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "facts"),
    [
        (b"java 24636/25607 [000] 4794564.109216:     250000 cpu-clock:",
         (b"java", b"24636", b"25607", b"4794564", b"109216", b"250000", b"cpu-clock", b"")),
        (b"V8 WorkerThread 25607 4794564.109216123: 1 cycles:u: ",
         (b"V8 WorkerThread", None, b"25607", b"4794564", b"109216123", b"1", b"cycles:u", b"")),
        (b"            prog 12440 10638.687781: cpu-clock:  7f12 f+0x3 (/x)",
         (b"prog", None, b"12440", b"10638", b"687781", None, b"cpu-clock", b"7f12 f+0x3 (/x)")),
        (b"prog 12440 ", (b"prog", None, b"12440", None, None, None, None, b"")),
        (b"python3  8869   680.060804: sched:sched_switch: prev_comm=python3 prev_pid=8869",
         (b"python3", None, b"8869", b"680", b"060804", None, b"sched:sched_switch", b"prev_comm=python3 prev_pid=8869")),
    ],
)  # fmt: skip
def test_sample_headers_give_their_facts(line: bytes, facts: tuple[object, ...]) -> None:
    assert tuple(script.read_header(line) or ()) == facts


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b"perf-exec     0     0.000000: PERF_RECORD_COMM: perf-exec:12440/12440", b"COMM"),
        (b"prog 12440 10638.687582: PERF_RECORD_MMAP2 12440/12440: [0x55(0x1000) @ 0x1000]: r-xp /p", b"MMAP2"),
        (b"prog 12440 PERF_RECORD_FORK(12440:12442):(12440:12440)", b"FORK"),
        (b"12440 PERF_RECORD_COMM exec: prog:12440/12440", b"COMM"),
        (b"perl  9223 [000]   692.028515: PERF_RECORD_SWITCH_CPU_WIDE IN  prev pid/tid:  9179/9179", b"SWITCH_CPU_WIDE"),
        (b"PERF_RECORD_FINISHED_ROUND", b"FINISHED_ROUND"),
        (b"prog 1 1.0: 1 cpu-clock:  7f12 PERF_RECORD_x (/x)", None),
        (b"prog 1 1.0: 1 cpu-clock:", None),
    ],
)  # fmt: skip
def test_non_sample_records_are_told_from_samples(line: bytes, kind: bytes | None) -> None:
    assert script.non_sample_kind(line) == kind
    assert (script.read_header(line) is None) == (kind is not None) or kind is None


def test_every_reader_reads_the_layouts_alike(tmp_path: Path) -> None:
    """Timeline, window, sniff and convert's sniffing take the same records as fold."""
    for text in (TASK_EVENTS, MMAP_EVENTS, SRCLINE, INSN):
        diagnostics = Diagnostics(echo=False)
        timeline = read_timeline(text.splitlines(), "in", diagnostics=diagnostics)
        assert len(timeline.spans) == 2 and diagnostics.skipped_records == 0, text
        assert {span.stack[1:] for span in timeline.spans} == {tuple(s.split(";")[1:]) for s in PLAIN_FOLDED}
        assert kind_of_head(text) == PERF_SCRIPT
        path = tmp_path / "in.txt"
        path.write_bytes(text)
        with path.open("rb") as stream:
            windowed = WindowFilter(stream, Window(10638.6880, None)).read()
        assert b"leaf+0x31" in windowed and b"init_cpu_features" not in windowed
    from flamegraph.export.sources import sniff

    # -F comm,tid,ip,sym and -F comm,tid,period,ip,sym: headers with no time nor event (a-F4: folded to convert)
    with_period = NO_DSO.replace(b"prog 12440 ", b"prog 12440     250000 ").replace(b"12442 ", b"12442     250000 ")
    for text in (TASK_EVENTS, MMAP_EVENTS, NO_DSO, with_period):
        (tmp_path / "in.txt").write_bytes(text)
        assert sniff(str(tmp_path / "in.txt")).kind == "perf"
        assert kind_of_head(text) == PERF_SCRIPT
    # ... and folded stacks are still folded stacks, a differential's two counts and all
    for text in (b"prog;main;leaf 250000\nprog;main 3\n", b"prog 12440\nprog;a 1 2\n", b"prog 12440 250000\n"):
        (tmp_path / "in.txt").write_bytes(text)
        assert sniff(str(tmp_path / "in.txt")).kind == "folded", text
        assert kind_of_head(text) != PERF_SCRIPT


def test_offcpu_skips_source_lines() -> None:
    text = b"""prog  8869 [000]   680.060804: sched:sched_switch: prev_comm=prog prev_pid=8869 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff8143f236 __schedule+0x2f6 ([kernel.kallsyms])
  [kernel.kallsyms][ffffffff8143f236]
\t            11aa leaf+0x31 (/tmp/g20/prog)
  prog.c:6
prog  8869 [000]   680.070804: PERF_RECORD_SWITCH IN
"""
    diagnostics = Diagnostics(echo=False)
    waits = list(SchedCollapser(OffCpuOptions(), diagnostics).iter_waits(text.splitlines(), "in"))
    assert [(w.stack, w.ns) for w in waits] == [(b"prog-8869;leaf;__schedule;[S]", 10_000_000)]
    assert not diagnostics.counts


# -- the fast path against the grammar --------------------------------------------------------------
LAYOUTS = {  # how perf prints a header for a set of -F fields: comm, ids, time, period, event
    "default": b"%(comm)s %(tid)s %(time)s: %(period)s %(event)s: ",
    "pid/tid+cpu": b"%(comm)s %(pid)s/%(tid)s [001] %(time)s: %(period)s %(event)s:",
    "no period": b"%(comm)s %(tid)s %(time)s: %(event)s: ",
    "right-aligned": b"%(pad)s%(comm)s %(tid)s %(time)s: %(period)s %(event)s: ",
    "comm,tid": b"%(comm)s %(tid)s ",
}
COMMS = st.sampled_from([b"prog", b"V8 WorkerThread", b"a", b"java", b"kworker/0:1"])
SYMBOLS = st.sampled_from([b"main", b"leaf+0x31", b"[unknown]", b"std::vector<int>::at", b"x->y", b"start_thread"])
DSOS = st.sampled_from([b" (/tmp/prog)", b" ([kernel.kallsyms])", b" ([unknown])", b" (/lib/libc.so.6)"])
SRCLINES = st.sampled_from([
    b"  prog.c:6", b"  [kernel.kallsyms][ffffffff8135e61a]", b"  libc.so.6[891f5]", b"  :0", b"  ??:0",
    b"  /usr/src/prog.c:12", b"  ./csu/../sysdeps/x86/libc-start.c:58",  # --full-source-path
])  # fmt: skip
# An inlined frame with -F +srcline: printed without its DSO, its source line ends with (inlined).
INLINED_SRCLINES = st.sampled_from([b"  prog.c:8 (inlined)", b"  /usr/include/c++/12/bits/invoke.h:61 (inlined)"])
REGISTERS = st.sampled_from([  # -F +uregs / +iregs: after the frames, and perf prints no blank line after it
    b" ABI:2    AX:0x25bc5    BX:0x7ffcc4af1668    IP:0x55e31025a565 FLAGS:0x206   R15:0x55e31025a510 ",
    b" ABI:1    AX:0x0 ",
])  # fmt: skip
NON_SAMPLES = st.sampled_from([
    b"prog 12440 10638.687535: PERF_RECORD_COMM exec: prog:12440/12440",
    b"prog 12440 10638.687582: PERF_RECORD_MMAP2 12440/12440: [0x5573804a8000(0x1000) @ 0x1000]: r-xp /tmp/prog",
    b"prog 12440 10638.688361: PERF_RECORD_FORK(12440:12442):(12440:12440)",
    b"PERF_RECORD_FINISHED_ROUND",
    b"prog 12440 10638.688361: PERF_RECORD_LOST lost 12",
])  # fmt: skip


@st.composite
def perf_text(draw: st.DrawFn) -> bytes:
    """Records of one -F layout (the same for the whole text, as perf prints it), with source lines,
    instruction lines, non-sample records and --header comments between them."""
    layout = LAYOUTS[draw(st.sampled_from(sorted(LAYOUTS)))]
    dso = draw(st.booleans())  # -F without dso: '<addr> <symbol>'
    srclines = dso and draw(st.booleans())
    out = [b"# ========", b"# captured on    : now", b"# ========", b"#"] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 8))):
        for _ in range(draw(st.integers(0, 2))):
            out.append(draw(NON_SAMPLES))
        fields = {
            "comm": draw(COMMS), "tid": str(draw(st.integers(1, 99999))).encode(), "pid": b"12440",
            "time": b"10638.%06d" % draw(st.integers(0, 999999)), "period": b"%10d" % draw(st.integers(0, 10**6)),
            "event": draw(st.sampled_from([b"cpu-clock", b"cycles:u"])), "pad": b" " * draw(st.integers(1, 12)),
        }  # fmt: skip
        exited = draw(st.integers(0, 9)) == 0 and b"%(time)s" in layout
        header = layout % {k.encode(): v for k, v in fields.items()}
        out.append(b":-1    -1 [001] " + fields["time"] + b": 1 cpu-clock:" if exited else header)
        for _ in range(draw(st.integers(0, 5))):
            symbol = draw(SYMBOLS)
            out.append(b"\t    %x " % draw(st.integers(0, 2**48)) + symbol + (draw(DSOS) if dso else b""))
            if srclines and not out[-1].endswith(b"[unknown] ([unknown])"):
                if symbol != b"[unknown]" and draw(st.integers(0, 3)) == 0:
                    out[-1] = out[-1][: out[-1].rindex(b" (")]  # inlined: no DSO
                    out.append(draw(INLINED_SRCLINES))
                else:
                    out.append(draw(SRCLINES))
        if draw(st.integers(0, 4)) == 0:
            out.append(draw(REGISTERS))
            if draw(st.booleans()):
                continue  # perf 6.1 prints the next header right after the registers
        if draw(st.integers(0, 3)) == 0:
            out.append(b" ilen: 3 insn: c1 e8 0e")
            if draw(st.booleans()):
                continue  # perf prints the next header right after the instruction
        out.append(b"")
    return b"\n".join(out) + b"\n"


def grammar_fold(text: bytes) -> dict[str, int]:
    """What the grammar says the text holds, folded the simplest way: one record per sample header,
    its frame lines named, every other line (detail, non-sample, comment, blank) skipped."""
    options = FoldOptions()
    counts: Counter[str] = Counter()
    event: bytes | None = None
    record: tuple[str, int] | None = None
    frames: list[str] = []

    def close() -> None:
        if record is not None:
            stack = ";".join([record[0], *reversed(frames)])
            counts[stack] += record[1]

    above = b""
    for line in text.split(b"\n"):
        if line.startswith((b"\t", b"  ")) and not script.is_detail(line) and not script.is_header(line.strip()):
            name = name_frame(line, options)
            assert name is not None, line
            if name:
                frames.append(name.decode("utf-8", "surrogateescape"))
                above = line
            continue
        if script.is_inlined_srcline(line) and frames:  # the frame above: as plain perf script prints it
            frames[-1] = (name_frame(above + b" (inlined)", options) or b"").decode("utf-8", "surrogateescape")
            continue
        if line.startswith(b" ") and script.is_detail(line) or line.startswith(b"#"):
            continue
        close()
        record, frames = None, []
        header = script.read_header(line)
        if header is None or header.comm.startswith(script.EXITED_COMM):
            continue
        event = event or header.event
        if header.event != event:
            continue
        weight = int(header.period) if header.period and int(header.period) else 1
        record = (header.comm.replace(b" ", b"_").decode(), weight)
    close()
    return dict(counts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(perf_text(), st.integers(1, 400))
def test_the_fast_path_and_the_grammar_read_the_same_records(text: bytes, block: int) -> None:
    counts, _ = fold_text(text, block)  # fast path == line path, asserted inside
    assert counts == grammar_fold(text)


# -- -F +srcline with inlined frames, --full-source-path, -F +uregs (perf 6.1, a C++ DWARF recording) -----
INLINE_PLAIN = b"""cppprog  8552 83075.714905:    2004008 cpu-clock: 
\t            1565 apply<main::{lambda(long)#1}>+0x25 (/tmp/n9/cppprog)
\t            1565 apply<main()::<lambda(long int)> >+0x25 (inlined)
\t            1279 main+0xc9 (/tmp/n9/cppprog)
\t           27304 __libc_start_main_impl+0x84 (inlined)
\t            1440 _start+0x20 (/tmp/n9/cppprog)

cppprog  8552 83075.717989:    2004008 cpu-clock: 
\t            152f std::_Function_handler<double (int), main::{lambda(int)#2}>::_M_invoke+0x1f (/tmp/n9/cppprog)
\t            152f __invoke_impl<double, main()::<lambda(int)>&, int>+0x1f (inlined)
\t            138a std::function<double (int)>::operator()+0x1da (inlined)
\t            138a main+0x1da (/tmp/n9/cppprog)

"""  # noqa: W291 (perf prints a blank after the event)
INLINE_SRCLINE = b"""cppprog  8552 83075.714905:    2004008 cpu-clock: 
\t            1565 apply<main::{lambda(long)#1}>+0x25 (/tmp/n9/cppprog)
  cpp.cpp:14
\t            1565 apply<main()::<lambda(long int)> >+0x25
  cpp.cpp:8 (inlined)
\t            1279 main+0xc9 (/tmp/n9/cppprog)
  cpp.cpp:14
\t           27304 __libc_start_main_impl+0x84
  libc-start.c:360 (inlined)
\t            1440 _start+0x20 (/tmp/n9/cppprog)
  ??:0

cppprog  8552 83075.717989:    2004008 cpu-clock: 
\t            152f std::_Function_handler<double (int), main::{lambda(int)#2}>::_M_invoke+0x1f (/tmp/n9/cppprog)
  cpp.cpp:15
\t            152f __invoke_impl<double, main()::<lambda(int)>&, int>+0x1f
  invoke.h:61 (inlined)
\t            138a std::function<double (int)>::operator()+0x1da
  std_function.h:591 (inlined)
\t            138a main+0x1da (/tmp/n9/cppprog)
  cpp.cpp:15

"""  # noqa: W291
FULL_SOURCE_PATH = (
    INLINE_SRCLINE.replace(b"  cpp.cpp:", b"  /tmp/n9/cpp.cpp:")
    .replace(b"  libc-start.c:", b"  ./csu/../csu/libc-start.c:")
    .replace(b"  invoke.h:", b"  /usr/include/c++/12/bits/invoke.h:")
    .replace(b"  std_function.h:", b"  /usr/include/c++/12/bits/std_function.h:")
)
# -F +uregs: the registers after the frames, and no blank line before the next record.
UREGS = INLINE_PLAIN.replace(
    b"\n\ncppprog", b"\n ABI:2    AX:0x25bc5    BX:0x7ffcc4af1668    IP:0x55e31025a565 FLAGS:0x206  R15:0x0 \ncppprog"
).replace(b"(/tmp/n9/cppprog)\n\n", b"(/tmp/n9/cppprog)\n ABI:2    AX:0xb315    R8:0x7ffcc4af1668 \n\n")


@pytest.mark.parametrize("block", [7, 64, 1 << 18])
@pytest.mark.parametrize(
    "text", [INLINE_SRCLINE, FULL_SOURCE_PATH, UREGS], ids=["srcline-inlined", "full-source-path", "uregs"]
)
def test_source_and_register_lines_fold_as_plain_perf_script(text: bytes, block: int) -> None:
    """`  file.c:8 (inlined)` made up a frame (`.c:8_[i]`); with --full-source-path every record was
    skipped (a bad frame line); so was every record with -F +uregs' ` ABI:2 AX:...` line."""
    plain, _ = fold_text(INLINE_PLAIN, block)
    assert any("apply<main()::<lambda(long int)> >_[i]" in stack for stack in plain)
    counts, diagnostics = fold_text(text, block)
    assert counts == plain and not diagnostics.counts and diagnostics.skipped_records == 0


def test_fold_srcline_names_an_inlined_frame_with_its_source_line(tmp_path: Path) -> None:
    folded = fold_srcline(tmp_path, INLINE_SRCLINE, compat=False)
    assert b";main:cpp.cpp:14;apply<main()::<lambda(long int)> >_[i]:cpp.cpp:8;apply<" in folded, folded
    assert b"_start:??:0;__libc_start_main_impl_[i]:libc-start.c:360;main:cpp.cpp:14;" in folded, folded
    assert b"std::function<double (int)>::operator()_[i]:std_function.h:591;" in folded, folded
