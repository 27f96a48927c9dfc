"""The attribution report: how much of a folded profile is whole-truth, and what to do about the rest.

Post-fold analysis, figures each weighted by samples: stacks that reach a thread root (`_start`, `start_thread`,
`clone`/`clone3`; `ret_from_fork` for kernel threads; the C library's start of main, or the unnamed entry point
that calls it; Go's `runtime.goexit`/`runtime.mstart`), samples with any `[unknown]` frame (before and
after grouping by function), samples in JIT code, how many of those are named and reach a root,
and, for every gap, the fix: one that works for the program recorded (Go and V8: frame pointers; --jit only
for a Python command or --pid). It is computed from the folded profile plus what the fold's frame hook
(flamegraph.naming.observer) saw (which frames came from JIT code, the kernel, or were grouped) and how the
profile was recorded (`HowRecorded`, when known); frames it reads:
    python;clone3;start_thread;...;mxnet::MKLDNNStream::Submit;libmxnet.so+0x758e820;jit_avx512_gemm_[j]
    python;_PyEval_EvalFrameDefault;[libpython3.11.so.1.0]          <- a stack cut short
    python;[unknown];[unknown]                                        <- frame-pointer garbage
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..color import strip_annotation
from ..model import INSTRUMENTATION, PYTHON_FUNCTION, FoldedProfile
from ..naming.observer import FrameObserver

# Go's: every goroutine's stack starts at runtime.goexit, an M's system stack at runtime.mstart, the first
# thread at runtime.rt0_go (assembler functions: `.abi0` as perf names them since Go 1.17)
GO_ROOTS = frozenset(f"runtime.{name}{abi}" for name in ("goexit", "mstart", "rt0_go") for abi in ("", ".abi0"))
ROOTS = frozenset({"_start", "start_thread", "clone", "clone3", "ret_from_fork", "ret_from_fork_asm", *GO_ROOTS})
GO_FRAME = re.compile(r"^runtime\.[\w.()*]+$|\.abi0$")  # Go runtime functions, Go's assembler (ABI0) ones
# The C library's start of the main thread: only the entry point (`_start`) calls it, so the frame above it is
# the entry point whatever its name (a stripped program's `prog+0x10f0`), and a stack that ends in it misses
# only the entry point (frame pointers end there: glibc keeps none)
LIBC_START = re.compile(r"^__libc_start_(main|call_main)")
UNNAMED_JIT = re.compile(r"^\[(unknown|anon.*|perf-\d+\.map|jitted-\d+-\d+\.so)( <[0-9a-f]+>)?\]$")
BRACKETED = re.compile(r"^\[.*\]$")
PYTHON = re.compile(PYTHON_FUNCTION)
# V8's names in its perf map (node --perf-basic-prof): `JS:*fib /app/n.js:1:13`, `Builtin:...`, `BytecodeHandler:...`
V8_KINDS = "JS|Builtin|BytecodeHandler|Eval|Script|Function|LazyCompile|InterpretedFunction|RegExp|Stub|Handler"
V8_NAME = re.compile(rf"^({V8_KINDS}):")
END_KINDS = ("jit", "v8", "kernel", "python", "other", "empty")
ROOT_TARGET = 99.0  # % of samples: below this the report says how to do better


@dataclass
class Attribution:
    samples: float = 0.0
    reach_root: float = 0.0
    any_unknown: float = 0.0  # before grouping
    unknown_left: float = 0.0  # after grouping
    jit: float = 0.0
    jit_named: float = 0.0
    jit_reach_root: float = 0.0
    depth_total: float = 0.0
    short: float = 0.0  # stacks of at most 2 frames
    go: bool = False  # a Go program: Go runtime frames seen, or the recording says so
    v8: bool = False  # V8's JIT code seen (named: node --perf-basic-prof)
    # Stacks without a root, by the kind of their outermost frame.
    cut_ends: dict[str, float] = field(default_factory=lambda: dict.fromkeys(END_KINDS, 0.0))

    def share(self, part: float, whole: float | None = None) -> float:
        whole = self.samples if whole is None else whole
        return 100.0 * part / whole if whole else 0.0

    @property
    def mean_depth(self) -> float:
        return self.depth_total / self.samples if self.samples else 0.0


ROOT, JIT, NAMED, UNKNOWN, GROUPED, KERNEL, START, GO, V8, GO_ROOT = 1, 2, 4, 8, 16, 32, 64, 128, 256, 512


def frame_flags(name: str, observer: FrameObserver | None) -> int:
    """What one folded frame is: a thread root, JIT code (named or not), unknown, kernel..."""
    base = strip_annotation(name)
    flags = ROOT if base in ROOTS else START if LIBC_START.match(base) else 0
    if base in GO_ROOTS or GO_FRAME.search(base):
        flags |= GO | (GO_ROOT if base in GO_ROOTS else 0)
    if name.endswith("_[k]") or base.startswith("[kernel") or (observer is not None and base in observer.kernel):
        flags |= KERNEL
    if UNNAMED_JIT.match(base):
        flags |= JIT | UNKNOWN
    elif name.endswith("_[j]") or (observer is not None and base in observer.jit):
        flags |= JIT | NAMED | (V8 if V8_NAME.match(base) else 0)
    elif observer is not None and base in observer.grouped:
        flags |= UNKNOWN | GROUPED
    elif BRACKETED.match(base):
        flags |= UNKNOWN
    return flags


def attribute(profile: FoldedProfile, observer: FrameObserver | None = None) -> Attribution:
    """The report's figures over every stack of `profile` (the first frame is the process/thread)."""
    result = Attribution()
    known: dict[str, int] = {}
    for text, weight in profile.counts.items():
        frames = text.split(";")[1:]
        flags = []
        every = 0  # the flags of any frame
        for frame in frames:
            value = known.get(frame)
            if value is None:
                value = known[frame] = frame_flags(frame, observer)
            flags.append(value)
            every |= value
        # an instrument thread's label sits where its root would be: the stack's own frames start after it
        outer = 1 if frames and frames[0].startswith(INSTRUMENTATION) else 0
        result.samples += weight
        result.depth_total += weight * (len(frames) - outer)
        result.short += weight if len(frames) - outer <= 2 else 0
        reached = len(flags) > outer and _rooted(flags, outer)
        result.reach_root += weight if reached else 0
        if not reached:
            result.cut_ends[_end_kind(flags[outer], frames[outer:]) if len(flags) > outer else "empty"] += weight
        result.go = result.go or bool(every & GO)
        result.v8 = result.v8 or bool(every & V8)
        if every & UNKNOWN:
            result.any_unknown += weight
            if any(f & UNKNOWN and not f & GROUPED for f in flags):
                result.unknown_left += weight
        user = [f for f in flags if not f & KERNEL]
        if user and user[-1] & JIT:
            result.jit += weight
            result.jit_named += weight if user[-1] & NAMED else 0
            result.jit_reach_root += weight if reached else 0
    return result


def _rooted(flags: list[int], outer: int) -> bool:
    """The outermost frame is a thread root, the C library's start of the main thread, or what calls that
    (the entry point, unnamed in a stripped program); or a Go root under nothing but [unknown] frames (a new
    M's frame pointers lead from runtime.mstart into the garbage runtime.clone left on its stack)."""
    if flags[outer] & (ROOT | START) or len(flags) > outer + 1 and flags[outer + 1] & START:
        return True
    at = outer
    while at < len(flags) and flags[at] & UNKNOWN and not flags[at] & GROUPED:
        at += 1
    return outer < at < len(flags) and bool(flags[at] & GO_ROOT)


def _end_kind(flags: int, frames: list[str]) -> str:
    """Why a stack without a root (`frames`, outermost first) stops: at V8's JIT code, at other JIT code, at its
    only Python function (a trampoline perf had no unwind info for: an interpreter before our hook ran, or one it
    did not reach; a stack copy that ran out leaves several), or somewhere else (a bare [unknown] at the end of a
    long stack is what an unwinder leaves when perf's copy of the stack ran out)."""
    frame = frames[0]
    if flags & V8:
        return "v8"
    if flags & JIT and not frame.startswith("[unknown]"):
        return "jit"
    if PYTHON.match(frame) and not any(PYTHON.match(f) for f in frames[1:]):
        return "python"
    return "kernel" if flags & KERNEL else "other"


MAX_DWARF = 65528
MISSING = "not found on this machine"  # FunctionNamer's reason for a DSO path that does not exist here


def suggest(
    a: Attribution,
    grouping: bool = True,
    unreadable: dict[str, str] | None = None,
    call_graph: str | None = None,
    jit_unwound: bool = False,
    refused: dict[str, str] | None = None,
    jit_possible: bool = True,
) -> list[str]:
    """One line per gap, each with its fix (`call_graph`: how it was recorded, if known;
    `jit_unwound`: the recording already had unwind info for its JIT kernels, i.e. --jit;
    `refused`: DSOs whose file here could not be proven to be the recorded one; `jit_possible`: False
    when --jit cannot work for the program recorded, which the fixes then never name)."""
    rooted = a.share(a.reach_root) >= ROOT_TARGET
    fixes = _cut_fixes(a, call_graph, jit_unwound, jit_possible) if a.samples and not rooted else []
    if a.jit > a.jit_named:
        fixes.append(
            f"{a.share(a.jit - a.jit_named):.1f} % of samples are in unnamed JIT code: "
            + (
                "record with --jit (DNNL_JIT_DUMP=1 names oneDNN's kernels; --pid needs root)"
                if jit_possible
                else "have the runtime write a perf map (/tmp/perf-PID.map: node --perf-basic-prof, Java with "
                "perf-map-agent)"
            )
        )
    missing = sorted(path.rsplit("/", 1)[-1] for path, why in (unreadable or {}).items() if why == MISSING)
    changed = sorted(path.rsplit("/", 1)[-1] for path in refused or {})
    if a.samples and a.share(a.unknown_left) >= 1.0:
        if not grouping:
            fixes.append(
                f"{a.share(a.unknown_left):.1f} % of samples have [unknown] frames: fold the perf.data file "
                "(grouped by function where the build-ids match), or pass --group-unknown (unverified for text)"
            )
        elif missing or changed:
            where = [f"DSOs not found here ({', '.join(missing[:4])})"] if missing else []
            where += [f"DSOs here not proven to be the recorded builds ({', '.join(changed[:4])})"] if changed else []
            fixes.append(
                f"{a.share(a.unknown_left):.1f} % of samples keep [unknown] frames; {'; '.join(where)}: "
                "fold on the machine that recorded"
            )
    return fixes


def _cut_fixes(a: Attribution, call_graph: str | None, jit_unwound: bool, jit_possible: bool) -> list[str]:
    """Why stacks miss their thread root, and what to record differently."""
    cut = a.samples - a.reach_root
    if a.go:
        return [_go_fix(a, cut, call_graph)]
    # (not known how it was recorded: DWARF stops at V8's frames, frame pointers go through them)
    guessed = a.cut_ends["v8"] < 0.5 * cut if a.v8 else a.mean_depth < 4 or a.share(a.reach_root) < 5.0
    frame_pointers = call_graph in ("fp", "lbr") or (call_graph is None and guessed)
    head = f"{a.share(cut):.1f} % of stacks end before a thread root ({a.mean_depth:.1f} frames on average): "
    if frame_pointers and a.v8:
        return [
            head + "frame pointers stop at code built without them, such as the C library; keep --call-graph fp: "
            "DWARF stops at every frame of V8's JIT code"
        ]
    if frame_pointers:
        return [head + "frame pointers stop at every library built without them; record with --call-graph dwarf"]
    fixes = []
    if a.cut_ends["v8"]:
        fixes.append(
            f"{a.share(a.cut_ends['v8']):.1f} % of stacks stop at a V8 JIT frame: V8 gives perf no unwind "
            "information for its code but keeps frame pointers: record with --call-graph fp"
        )
    if a.cut_ends["jit"] and jit_unwound:
        fixes.append(
            f"{a.share(a.cut_ends['jit']):.1f} % of stacks stop at a JIT frame although the kernels have unwind "
            "info: their frames (12-16 KB for gemm) outgrow the stack copy; record with --call-graph dwarf,65528"
        )
    elif a.cut_ends["jit"] and jit_possible:
        fixes.append(
            f"{a.share(a.cut_ends['jit']):.1f} % of stacks stop at a JIT frame: record with --jit "
            "(unwind info for the kernels) and --call-graph dwarf,65528"
        )
    elif a.cut_ends["jit"]:
        fixes.append(
            f"{a.share(a.cut_ends['jit']):.1f} % of stacks stop at a JIT frame: perf finds no unwind information "
            "for JIT code; record with --call-graph fp if the runtime keeps frame pointers in it (V8 does; Java "
            "with -XX:+PreserveFramePointer)"
        )
    if a.cut_ends["python"] > 0.1 * cut:
        fixes.append(
            f"{a.share(a.cut_ends['python']):.1f} % of stacks stop at their first Python function: its trampoline "
            "had no unwind info (an interpreter's start-up before our hook ran, or a Python process the hook did "
            "not reach: said above, or recorded without --python); a larger stack copy does not help"
        )
    other = cut - a.cut_ends["jit"] - a.cut_ends["v8"] - a.cut_ends["python"]
    if other > 0.1 * cut:
        size = call_graph.partition(",")[2] if call_graph and call_graph.startswith("dwarf") else ""
        if size and int(size) >= MAX_DWARF:
            fixes.append(
                f"{a.share(other):.1f} % of stacks are deeper than perf's largest stack copy (64 KB) or pass "
                "through code without unwind information: deep start-up stacks are typical, --window leaves "
                "them out"
            )
        else:
            fixes.append(
                f"{a.share(other):.1f} % of stacks are cut before a thread root (perf's copy of the stack "
                "ran out, or code without unwind information): record with --call-graph dwarf,65528"
            )
    return fixes


def _go_fix(a: Attribution, cut: float, call_graph: str | None) -> str:
    """Go has no .eh_frame: DWARF stacks stop at their first Go frame, frame-pointer ones are whole but where
    something broke the chain (deep stacks without a known mode are frame pointers')."""
    depth = f"{a.mean_depth:.1f} frames on average"
    head = f"{a.share(cut):.1f} % of stacks end before a goroutine or thread root ({depth}): "
    if call_graph == "fp" or (call_graph is None and a.mean_depth >= 4):
        return head + (
            "Go assembly that uses the frame-pointer register (crypto's) or C code built without frame pointers "
            "(cgo) ends the chain; DWARF does no better for Go (no .eh_frame)"
        )
    return head + (
        "Go code has no .eh_frame, so perf's DWARF unwinder stops at its first frame; Go keeps frame pointers: "
        "record with --call-graph fp"
    )


def report_lines(a: Attribution, fixes: list[str]) -> list[str]:
    """The report as printed by `fold --report` and `record`."""
    roots = "_start, start_thread, clone/clone3"
    root = "goroutine or thread root (runtime.goexit, runtime.mstart, _start)" if a.go else f"thread root ({roots})"
    lines = [
        f"attribution (mean stack depth {a.mean_depth:.1f} frames):",
        f"  {a.share(a.reach_root):5.1f} %  reach a {root}",
        f"  {a.share(a.any_unknown):5.1f} %  have an [unknown] frame"
        + (f"; {a.share(a.unknown_left):.1f} % after grouping by function" if a.unknown_left < a.any_unknown else ""),
        f"  {a.share(a.jit):5.1f} %  in JIT code"
        + (
            f": {a.share(a.jit_named, a.jit):.1f} % of it named, {a.share(a.jit_reach_root, a.jit):.1f} % reach a root"
            if a.jit
            else ""
        ),
    ]
    lines += [f"  fix: {fix}" for fix in fixes]
    return lines


def report_metadata(a: Attribution, fixes: list[str]) -> dict[str, str]:
    """The same figures for `profile.metadata` (the SVG header shows them in this order)."""
    meta = {
        "stacks reaching a thread root": f"{a.share(a.reach_root):.1f} %",
        "samples with [unknown] frames": f"{a.share(a.any_unknown):.1f} %"
        + (f" ({a.share(a.unknown_left):.1f} % after grouping by function)" if a.unknown_left < a.any_unknown else ""),
        "JIT code": f"{a.share(a.jit):.1f} % of samples"
        + (
            f", {a.share(a.jit_named, a.jit):.1f} % named, {a.share(a.jit_reach_root, a.jit):.1f} % reach a root"
            if a.jit
            else ""
        ),
    }
    if fixes:
        meta["to see more"] = "; ".join(fixes)
    return meta


@dataclass(frozen=True)
class HowRecorded:
    """What the fixes need to know of the recording, when the profile comes from one we made."""

    call_graph: str | None = None  # perf record's --call-graph (None: not known)
    jit_unwound: bool = False  # the JIT kernels were given unwind info (--jit)
    jit_possible: bool = True  # --jit can work for the program (a Python command, or --pid)
    go: bool = False  # the program recorded is a Go binary (flamegraph.record.golang)


def build_report(
    profile: FoldedProfile, observer: FrameObserver | None, recorded: HowRecorded = HowRecorded()
) -> tuple[Attribution, list[str]]:
    """Figures and fixes for a folded profile (observer: the hook the fold ran with, if any)."""
    figures = attribute(profile, observer)
    figures.go = figures.go or recorded.go
    namer = observer.namer if observer is not None else None
    unreadable = namer.unreadable if namer else None
    refused = namer.refused if namer else None
    fixes = suggest(
        figures, namer is not None, unreadable, recorded.call_graph, recorded.jit_unwound, refused,
        recorded.jit_possible,
    )  # fmt: skip
    return figures, fixes
