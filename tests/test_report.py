"""The attribution report on crafted `perf script` text whose answers are known by construction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.dsos import QUADMATH, full_parse, need_quadmath
from helpers.observers import observer_for

from flamegraph.analysis.report import (
    HowRecorded,
    attribute,
    build_report,
    report_lines,
    report_metadata,
    suggest,
)
from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.model import FoldedProfile
from flamegraph.naming.grouping import UNVERIFIED
from flamegraph.naming.observer import FrameObserver

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"



def record(tid: int, *frames: str) -> str:
    """One cpu-clock sample of thread `tid`, frames leaf first as perf prints them."""
    return f"python 100/{tid} 1.{tid:06d}: 1 cpu-clock:\n" + "".join(f"\t{f}\n" for f in frames) + "\n"


def crafted(lib: str) -> str:
    """20 samples: 10 main thread, 5 gemm, 2 unnamed JIT, 2 cut short, 1 kernel-on-JIT (answers below)."""
    main = record(
        100,
        "4011 compute (/usr/bin/python3)",
        "5022 _PyEval_EvalFrameDefault (/usr/bin/python3)",
        "6033 Py_RunMain (/usr/bin/python3)",
        f"27 __libc_start_main ({LIBC})",
        "7044 _start (/usr/bin/python3)",
    )
    gemm = record(
        101,
        "866f jit_avx512_common_gemm_f32_xbyak_gemm (/run/jit/jitted-100-21.so)",
        f"{QUADMATH_ADDR:x} [unknown] ({lib})",
        "169f699 mxnet::MKLDNNStream::Submit (/opt/mxnet/libmxnet.so)",
        f"891f4 start_thread ({LIBC})",
        f"1098eb clone3 ({LIBC})",
    )
    unnamed_jit = record(101, "7fec101b4bd8 [unknown] (/tmp/perf-100.map)")
    cut = record(102, "1234 copy_rows (/opt/libfoo.so)", "3d201cb93db4f99a [unknown] ([unknown])")
    kernel_on_jit = record(
        101,
        "ffffffff8103d0ca native_irq_return_iret ([kernel.kallsyms])",
        "7fec101b5000 jit_avx512_core_f32_copy_at_kern (/tmp/perf-100.map)",
        f"891f4 start_thread ({LIBC})",
        f"1098eb clone3 ({LIBC})",
    )
    return main * 10 + gemm * 5 + unnamed_jit * 2 + cut * 2 + kernel_on_jit


QUADMATH_ADDR = full_parse(QUADMATH)[20][0] + 1 if QUADMATH else 0


def fold(text: str, observer: FrameObserver | None, **options: object) -> FoldedProfile:
    collapser = PerfCollapser(FoldOptions(frame_hook=observer, **options), Diagnostics())  # type: ignore[arg-type]
    collapser.feed(text.encode().splitlines(keepends=True), "crafted")
    return collapser.profile()


def test_figures_of_the_crafted_recording() -> None:
    need_quadmath()
    observer = observer_for(group_unknown=True)
    profile = fold(crafted(str(QUADMATH)), observer)
    a = attribute(profile, observer)
    assert a.samples == 20
    assert a.share(a.reach_root) == 80.0  # 10 main + 5 gemm + 1 kernel-on-JIT
    assert a.share(a.any_unknown) == 45.0  # gemm's stripped frame 5, unnamed JIT 2, garbage 2
    assert a.share(a.unknown_left) == 20.0  # the gemm's [unknown] is grouped by function
    assert a.share(a.jit) == 40.0  # innermost user frame is JIT: 5 + 2 + 1 (under a kernel frame)
    assert a.share(a.jit_named, a.jit) == 75.0 and a.share(a.jit_reach_root, a.jit) == 75.0
    assert a.mean_depth == (10 * 5 + 5 * 5 + 2 * 1 + 2 * 2 + 1 * 4) / 20
    assert a.cut_ends == {"jit": 2, "v8": 0, "kernel": 0, "python": 0, "other": 2, "empty": 0}
    fixes = suggest(a, grouping=True, unreadable=observer.namer.unreadable if observer.namer else None)
    assert fixes == [
        "10.0 % of stacks stop at a JIT frame: record with --jit (unwind info for the kernels) and --call-graph "
        "dwarf,65528",
        "10.0 % of stacks are cut before a thread root (perf's copy of the stack ran out, or code without unwind "
        "information): record with --call-graph dwarf,65528",
        "10.0 % of samples are in unnamed JIT code: record with --jit (DNNL_JIT_DUMP=1 names oneDNN's kernels; "
        "--pid needs root)",
    ]


def test_a_stack_stopped_at_its_first_python_function_is_not_a_stack_copy_problem() -> None:
    """A Python process whose trampolines have no unwind info stops at its first Python function (one Python frame);
    a stack copy that ran out leaves several: only the first asks for no bigger copy."""
    from flamegraph.model import FoldedProfile

    counts = {
        "python;_start;main;<module> (prog.py);work (prog.py)": 6.0,  # rooted
        "python;child_work (mp.py);long_dealloc": 3.0,  # the trampoline stopped the unwinder
        "python;_find_and_load (<frozen importlib._bootstrap>)": 1.0,  # start-up before the hook's marker
        "python;[unknown];run (a.py);_PyEval_EvalFrameDefault;leaf (a.py)": 2.0,  # the copy ran out
    }
    a = attribute(FoldedProfile(counts=counts))
    assert a.cut_ends == {"jit": 0, "v8": 0, "kernel": 0, "python": 4, "other": 2, "empty": 0}
    fixes = suggest(a, call_graph="dwarf,16384")
    assert fixes[0].startswith("33.3 % of stacks stop at their first Python function: its trampoline had no unwind")
    assert "a larger stack copy does not help" in fixes[0]
    assert fixes[1].startswith("16.7 % of stacks are cut before a thread root") and fixes[1].endswith("dwarf,65528")


def test_without_grouping_the_fix_says_how_to_group() -> None:
    need_quadmath()
    observer = observer_for(group_unknown=False)
    figures, fixes = build_report(fold(crafted(str(QUADMATH)), observer), observer)
    assert figures.share(figures.unknown_left) == 45.0
    assert fixes[-1] == (
        "45.0 % of samples have [unknown] frames: fold the perf.data file (grouped by function where the "
        "build-ids match), or pass --group-unknown (unverified for text)"
    )


def test_dsos_missing_here_are_named_in_the_fix() -> None:
    observer = observer_for(group_unknown=True)
    figures, fixes = build_report(fold(crafted("/opt/elsewhere/libmissing.so"), observer), observer)
    assert figures.share(figures.unknown_left) == 45.0
    assert fixes[-1] == (
        "45.0 % of samples keep [unknown] frames; DSOs not found here (libmissing.so): "
        "fold on the machine that recorded"
    )
    # Recorded with the largest stack copy already: the cut stacks get another explanation.
    profile = fold(crafted("/opt/elsewhere/libmissing.so"), observer)
    assert "deeper than perf's largest stack copy" in build_report(profile, observer, HowRecorded("dwarf,65528"))[1][1]
    # Recorded with --jit but a 16 KB copy: the JIT-cut stacks need a larger copy, not --jit.
    assert build_report(profile, observer, HowRecorded("dwarf,16384", jit_unwound=True))[1][0] == (
        "10.0 % of stacks stop at a JIT frame although the kernels have unwind info: their frames (12-16 KB "
        "for gemm) outgrow the stack copy; record with --call-graph dwarf,65528"
    )


def test_frame_pointer_recordings_are_told_to_use_dwarf() -> None:
    text = record(5, "4011 compute (/usr/bin/python3)", "3d201cb93db4f99a [unknown] ([unknown])") * 3
    text += record(5, "4011 compute (/usr/bin/python3)")
    figures, fixes = build_report(fold(text, observer_for(True)), None)
    assert figures.reach_root == 0 and figures.mean_depth == 1.75
    assert fixes[0] == (
        "100.0 % of stacks end before a thread root (1.8 frames on average): frame pointers stop at every "
        "library built without them; record with --call-graph dwarf"
    )
    deep = fold(text.replace("\t4011 compute", "\t1 a (/x)\n\t2 b (/x)\n\t3 c (/x)\n\t4011 compute"), None)
    # Deep frame-pointer stacks: the recording says how they were made.
    assert "record with --call-graph dwarf" in build_report(deep, None, HowRecorded("fp"))[1][0]


def test_a_whole_truth_profile_needs_no_fix() -> None:
    text = record(7, "4011 compute (/usr/bin/python3)", "4011 main (/usr/bin/python3)", "7044 _start (/x)") * 4
    figures, fixes = build_report(fold(text, observer_for(True)), None)
    assert figures.share(figures.reach_root) == 100.0 and fixes == []
    assert report_metadata(figures, fixes) == {
        "stacks reaching a thread root": "100.0 %",
        "samples with [unknown] frames": "0.0 %",
        "JIT code": "0.0 % of samples",
    }


def test_annotated_profiles_are_read_without_an_observer() -> None:
    """A folded file made elsewhere with --all: _[j] and _[k] annotations say what the frames are."""
    profile = FoldedProfile(
        counts={
            "python;clone3;start_thread;mxnet::MKLDNNStream::Submit;jit_gemm_[j]": 3,
            "python;clone3;start_thread;jit_copy_[j];page_fault_[k]": 1,
            "python;[perf-100.map]": 1,
        }
    )
    a = attribute(profile)
    assert (a.samples, a.reach_root, a.jit, a.jit_named) == (5, 4, 5, 4)


def test_report_lines_and_metadata() -> None:
    need_quadmath()
    observer = observer_for(group_unknown=True)
    figures, fixes = build_report(fold(crafted(str(QUADMATH)), observer), observer)
    lines = report_lines(figures, fixes)
    assert lines[:4] == [
        "attribution (mean stack depth 4.2 frames):",
        "   80.0 %  reach a thread root (_start, start_thread, clone/clone3)",
        "   45.0 %  have an [unknown] frame; 20.0 % after grouping by function",
        "   40.0 %  in JIT code: 75.0 % of it named, 75.0 % reach a root",
    ]
    assert [line[:7] for line in lines[4:]] == ["  fix: "] * 3
    meta = report_metadata(figures, fixes)
    assert list(meta) == [
        "stacks reaching a thread root",
        "samples with [unknown] frames",
        "JIT code",
        "to see more",
    ]
    assert meta["JIT code"] == "40.0 % of samples, 75.0 % named, 75.0 % reach a root"
    assert meta["samples with [unknown] frames"] == "45.0 % (20.0 % after grouping by function)"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fold_report_prints_to_stderr(tmp_path: Path, jobs: str) -> None:
    need_quadmath()
    text = tmp_path / "perf.txt"
    text.write_text(crafted(str(QUADMATH)))

    def fold_cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "flamegraph", "fold", *args, str(text)]
        return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)

    grouped_name = f"{QUADMATH.name}+{full_parse(QUADMATH)[20][0]:#x}"
    proc = fold_cli("--report", "-j", jobs)
    assert proc.returncode == 0, proc.stderr
    assert "   80.0 %  reach a thread root" in proc.stderr
    assert "   40.0 %  in JIT code: 75.0 % of it named, 75.0 % reach a root" in proc.stderr
    # Text carries no build-ids: not grouped unless asked, and the fix says how.
    assert f"[{QUADMATH.name}]" in proc.stdout and grouped_name not in proc.stdout
    assert "pass --group-unknown (unverified for text)" in proc.stderr
    asked = fold_cli("--group-unknown", "-j", jobs)
    assert grouped_name in asked.stdout
    assert asked.stderr.splitlines() == [UNVERIFIED]
    plain = fold_cli("--no-group-unknown")
    assert f"[{QUADMATH.name}]" in plain.stdout and "attribution" not in plain.stderr
    assert plain.stderr == ""


def test_an_instrument_threads_label_is_not_taken_for_a_cut_stack() -> None:
    """--mxnet draws an instrument thread's stacks under its label, right below the thread name: the
    thread's own root follows it (a make flamegraph run counted ~5 % of its stacks as cut for this)."""
    from flamegraph.frameworks.mxnet.instruments import PROFILER, PROFILER_THREAD, TRACE_DRAIN, WATCH

    profile = FoldedProfile(
        counts={
            f"python;{PROFILER_THREAD};clone3;start_thread;mxnet::profiler::Profiler::DumpProfile": 5,
            f"python;{WATCH};_start;main;poll": 2,
            f"python;{TRACE_DRAIN};_start;splice": 1,
            f"python;clone3;start_thread;{PROFILER};mxnet::profiler::ProfileOperator::stop": 1,
            f"python;{PROFILER_THREAD};[unknown]": 3,  # really cut: its frames stop short of a root
        }
    )
    figures = attribute(profile)
    assert figures.reach_root == 9 and figures.samples == 12
    assert sum(figures.cut_ends.values()) == 3


def test_the_c_librarys_start_of_main_is_a_root() -> None:
    """newcomer10 a-F1, b-7: the frame that calls __libc_start_main is the entry point, named or not (a
    stripped program's `prog+0x10f0`, `[prog]` in text), and frame pointers end at __libc_start_call_main
    (glibc keeps none): neither stack is cut."""
    profile = FoldedProfile(
        counts={
            "prog;prog+0x10f0;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;prog+0x1070;prog+0x11d0": 4,
            "prog;[prog];__libc_start_main;__libc_start_call_main;[prog];[prog]": 2,
            "prog;__libc_start_call_main;main;leaf": 3,
            "prog;[unknown];leaf": 1,  # really cut
        }
    )
    figures = attribute(profile)
    assert (figures.reach_root, figures.samples) == (9, 10)
    assert figures.cut_ends["other"] == 1


def test_go_stacks_root_at_goexit_and_the_advice_names_frame_pointers() -> None:
    """newcomer10 a-F6, b-8: a goroutine's stack starts at runtime.goexit, an M's at runtime.mstart; Go has no
    .eh_frame, so the fix for its cut stacks is --call-graph fp, never DWARF (nor a larger stack copy)."""
    fp = FoldedProfile(
        counts={
            "gop;runtime.goexit.abi0;main.main.func3;main.sortWork;sort.Sort;sort.pdqsort;sort.partition": 6,
            "gop;runtime.mstart.abi0;runtime.mstart0;runtime.mstart1;runtime.sysmon;runtime.usleep.abi0": 1,
            "gop;[unknown];crypto/sha256.block.abi0": 2,  # assembly using BP: the chain ends
            # a new M: runtime.clone leaves garbage above runtime.mstart
            "gop;[unknown];[unknown];runtime.mstart.abi0;runtime.mstart0;runtime.mstart1;runtime.sysmon": 1,
        }
    )
    figures, fixes = build_report(fp, None, HowRecorded("fp"))
    assert figures.go and figures.share(figures.reach_root) == 80.0
    assert fixes[0] == (
        "20.0 % of stacks end before a goroutine or thread root (5.1 frames on average): Go assembly that uses "
        "the frame-pointer register (crypto's) or C code built without frame pointers (cgo) ends the chain; DWARF "
        "does no better for Go (no .eh_frame)"
    )
    assert report_lines(figures, fixes)[1] == (
        "   80.0 %  reach a goroutine or thread root (runtime.goexit, runtime.mstart, _start)"
    )
    # DWARF: the first frame only, and nothing in it says Go: the recording does (record.golang)
    dwarf = FoldedProfile(counts={"gop;main.work": 9, "gop;sort.partition": 1})
    for how in (HowRecorded("dwarf,65528", go=True), HowRecorded("dwarf,16384", go=True)):
        figures, fixes = build_report(dwarf, None, how)
        assert fixes == [
            "100.0 % of stacks end before a goroutine or thread root (1.0 frames on average): Go code has no "
            ".eh_frame, so perf's DWARF unwinder stops at its first frame; Go keeps frame pointers: record with "
            "--call-graph fp"
        ]
    assert "--call-graph dwarf" in build_report(dwarf, None, HowRecorded("dwarf,16384"))[1][0]  # not known as Go
    # a folded file of unknown making: Go's runtime frames say it is Go
    shallow = FoldedProfile(counts={"gop;main.work": 9, "gop;runtime.gogo.abi0": 1})
    assert build_report(shallow, None)[1][0].endswith("record with --call-graph fp")


def test_go_binaries_are_told_by_their_sections(tmp_path: Path) -> None:
    from flamegraph.record.golang import go_binary

    assert not go_binary(sys.executable) and not go_binary(str(tmp_path / "missing"))
    elf = Path(sys.executable).resolve().read_bytes()
    (tmp_path / "cut").write_bytes(elf[:100])  # a truncated header: not Go, no exception
    (tmp_path / "text").write_text("#!/bin/sh\n")
    assert not go_binary(str(tmp_path / "cut")) and not go_binary(str(tmp_path / "text"))


def test_jit_fixes_name_what_works_for_the_program() -> None:
    """newcomer10 a-F7: V8's JIT code keeps frame pointers (DWARF stops at it); --jit is advised only where it
    works (a Python command or --pid), another JIT gets frame pointers and a perf map."""
    v8 = "JS:*heavy /app/n.js:3:18_[j]"
    dwarf = FoldedProfile(counts={f"node;{v8}": 7, f"node;_start;__libc_start_main;node::Start;{v8}": 3})
    figures, fixes = build_report(dwarf, None, HowRecorded("dwarf,16384", jit_possible=False))
    assert figures.cut_ends["v8"] == 7 and fixes == [
        "70.0 % of stacks stop at a V8 JIT frame: V8 gives perf no unwind information for its code but keeps "
        "frame pointers: record with --call-graph fp"
    ]
    assert build_report(dwarf, None)[1] == fixes  # not known how it was recorded: V8's frames say DWARF's
    fp = FoldedProfile(counts={f"node;__libc_start_call_main;node::Start;{v8}": 19, "node;pthread_rwlock_unlock": 1})
    figures, fixes = build_report(fp, None, HowRecorded("fp", jit_possible=False))
    assert figures.share(figures.reach_root) == 95.0 and fixes == [
        "5.0 % of stacks end before a thread root (2.9 frames on average): frame pointers stop at code built "
        "without them, such as the C library; keep --call-graph fp: DWARF stops at every frame of V8's JIT code"
    ]
    assert build_report(fp, None)[1] == fixes  # V8's frames in the middle of the stacks: frame pointers'
    # a JIT that is not V8's, in a program --jit cannot run (a JVM): never --jit
    other = FoldedProfile(counts={"java;Lcom/x/Foo::run_[j]": 4, "java;[perf-100.map]": 1, "java;_start;main": 5})
    _, fixes = build_report(other, None, HowRecorded("dwarf,16384", jit_possible=False))
    assert not any("--jit" in fix for fix in fixes) and fixes[0].endswith(
        "record with --call-graph fp if the runtime keeps frame pointers in it (V8 does; Java with "
        "-XX:+PreserveFramePointer)"
    )
    assert fixes[1] == (
        "10.0 % of samples are in unnamed JIT code: have the runtime write a perf map (/tmp/perf-PID.map: "
        "node --perf-basic-prof, Java with perf-map-agent)"
    )
    assert all("--jit" in fix for fix in build_report(other, None, HowRecorded("dwarf,16384"))[1][:2])
