r"""Pair each thread's switch-out with its next switch-in: off-CPU time per stack, in microseconds.

Input it handles (`perf script -F comm,tid,time,event,trace,ip,sym,dso --show-switch-events
--show-task-events --show-lost-events` of `perf record -e sched:sched_switch --switch-events -g`):
    python3  8869   680.060804: sched:sched_switch: prev_comm=python3 prev_pid=8869 prev_prio=120 \
        prev_state=S ==> next_comm=python3 next_pid=8915 next_prio=120     <- one line in the input
    \tffffffff8143f236 futex_do_wait ([kernel.kallsyms])
    python3  8915   680.060856: PERF_RECORD_SWITCH IN
    perl  9223 [000]   692.028515: PERF_RECORD_SWITCH_CPU_WIDE IN           prev pid/tid:  9179/9179
    python3  8869   680.060759: PERF_RECORD_FORK(8869:8915):(8869:8869)

A switch-out is a `sched_switch` record: its stack and `prev_state` belong to `prev_pid`. A switch-in
is the thread's next PERF_RECORD_SWITCH[_CPU_WIDE] IN record or the next `sched_switch` naming it as
`next_pid` (system-wide recordings), whichever comes first; the other one then finds nothing to pair.
The recording window runs from the first to the last timestamped record. A thread whose first record
is a switch-in was off-CPU when the window opened: that wait is clipped to the window start, under a
`[off-CPU since recording start]` frame (a new thread's first wait starts at its FORK, under
`[new thread]`). A wait still open at the end is clipped to the window end under its real stack; the
window ends at the last record, or later when the caller knows when perf stopped (`recording_end`:
`offcpu --duration`, Ctrl-C: the text ends at the last event, not when the recording did).
A switch-out seen only as a PERF_RECORD_SWITCH OUT (the tracepoint starts at exec, or its sample was
lost) still counts, under `[no sched_switch record]`. Threads perf found at attach (time-0 COMM
records) with no record in the window are listed in `silent`: the text cannot tell blocked from busy.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from ..io.diagnostics import Diagnostics
from ..io.folded import decode
from ..window import Window
from .frames import FrameNames
from .grammar import (
    COMM_RECORD,
    EXITED_COMM,
    EXITED_SCHED_HEADER,
    LOST_RECORD,
    SCHED_HEADER,
    SWITCH_FIELDS,
    SWITCH_RECORD,
    TASK_RECORD,
    is_detail,
)
from .grammar import time_ns as parse_time_ns
from .options import FoldOptions, FrameHook, SampleHook
from .process_tree import ProcessTree
from .wakers import NOT_RECORDED, SEPARATOR, is_waker_record, wakee_of, waker_frames

# The header and record patterns are the grammar's (script.py).

SCHED_SWITCH = b"sched:sched_switch:"
# A sample of another event, after the time: "[period] cpu-clock: ..." (not perf's own PERF_RECORD_* records)
OTHER_EVENT = re.compile(rb"(?!PERF_RECORD_)(?:\d+\s+)?(\S+?):(?=\s|$)")

SINCE_START = b"[off-CPU since recording start]"
NEW_THREAD = b"[new thread]"
NO_STACK = b"[no sched_switch record]"  # a PERF_RECORD_SWITCH OUT alone: tracepoint not yet enabled, or lost
UNKNOWN_STATE = b"?"
EXIT_STATES = frozenset({b"X", b"Z"})  # the thread is dead: its last switch-out is not a wait

# How a wait was closed: a real switch-in, or clipped to one end of the window; or seen without its stack.
PAIRED, OPEN_AT_START, NEW, OPEN_AT_END = "paired", "open at start", "new thread", "open at end"
WITHOUT_STACK = "without sched_switch"
THROUGHOUT = "off-CPU throughout"  # no record at all, and the kernel says it never ran (offcpu --pid)
WHOLE_RECORDING = b"[off-CPU for the whole recording]"


class Wait(NamedTuple):
    """One off-CPU interval of one thread, ready to fold."""

    stack: bytes  # root first: comm-tid;frames...;[state]
    thread: bytes  # comm-tid
    state: bytes  # S, D, R, ... or ? when unknown
    ns: int  # blocked time in nanoseconds
    kind: str  # PAIRED, OPEN_AT_START, NEW, OPEN_AT_END, WITHOUT_STACK or THROUGHOUT
    end: int = 0  # when it ended (perf's clock, ns); 0: unknown, it spans the whole recording
    waker: bytes = b""  # with wakers: what ended it ([timer], [irq], [signal], a comm-tid...), b'' if none


@dataclass(frozen=True)
class OffCpuOptions:
    """What to keep of the waits; the folding of frames follows `flamegraph fold`'s rules."""

    keep_kernel: bool = True  # keep kernel frames (the part of the stack that says why the thread waits)
    annotate_kernel: bool = False  # suffix kernel frames with _[k]
    states: frozenset[str] | None = None  # keep only these states (S, D, R, ...); None keeps all
    min_us: float = 0.0  # drop waits shorter than this (they are counted, never silently)
    window: Window | None = None  # keep only what falls in it (perf's clock; cut to it, not dropped)
    sample_hook: SampleHook | None = None  # as in fold: (switch-out header, frames leaf first) -> frames
    frame_hook: FrameHook | None = None  # as in fold: names [unknown] frames by function (--group-unknown)
    # Fold who woke each wait above it (`--` then the waker), from sched_waking/sched_wakeup records.
    wakers: bool = False
    # A system-wide recording (offcpu --wakers): keep only the threads of this process tree,
    # (root pid, include the root): (pid, True) for --pid, (perf's pid, False) for its workload.
    target: tuple[int, bool] | None = None


class _OpenWait(NamedTuple):
    """A thread's wait opened by its switch-out, until its switch-in closes it."""

    ns: int
    stack: bytes
    thread: bytes
    state: bytes
    kind: str = PAIRED


def thread_label(comm: bytes, tid: int) -> bytes:
    return comm.strip().replace(b" ", b"_").replace(b";", b":") + b"-" + str(tid).encode()


def state_frame(state: bytes) -> bytes:
    """'R+' (preempted) -> '[R]', 'S' -> '[S]', '' -> '[?]'."""
    state = state.rstrip(b"+").replace(b";", b":") or UNKNOWN_STATE
    return b"[" + state + b"]"


class _Pairing:
    """Per-recording pairing state: O(threads), independent of the recording's length."""

    def __init__(self, diagnostics: Diagnostics, path: str) -> None:
        self.diagnostics = diagnostics
        self.path = path
        self.start: int | None = None  # first timestamp of the window
        self.end: int | None = None  # last timestamp seen
        self.out: dict[int, _OpenWait] = {}  # tid -> its pending switch-out
        self.known: set[int] = set()  # tids whose state at the window start is settled
        self.first_in: dict[int, tuple[int, bytes]] = {}  # tid -> (time, label) of a next_pid switch-in
        self.forked: dict[int, int] = {}  # tid -> FORK time, until its first switch-in
        self.exited: set[int] = set()  # tids after their EXIT: system-wide records still show them
        self.alive: dict[int, bytes] = {}  # tid -> label of the threads perf found when it attached
        self.seen: set[int] = set()  # tids with at least one record in the window
        self.lost = 0
        self.unpaired = 0  # switch-outs with no switch-in before the thread's next one
        self.switch_records = False  # any PERF_RECORD_SWITCH record: perf script printed them
        self.wakers = False  # join each wait to the wakeup that ended it
        self.woken: dict[int, tuple[int, bytes, bytes]] = {}  # tid -> (time, waker frames, its first frame)
        self.tree: ProcessTree | None = None  # a system-wide recording: the target's threads

    def wants(self, tid: int) -> bool:
        return self.tree is None or self.tree.wants(tid)

    def woke(self, tid: int, ns: int, frames: bytes, waker: bytes) -> None:
        if self.wants(tid):
            self.woken[tid] = (ns, frames, waker)

    def ended(self, tid: int, wait: Wait) -> Wait:
        """A wait a switch-in ended, with the wakeup that ended it: the thread's last one in the wait."""
        woken = self.woken.pop(tid, None)
        if not self.wakers or wait.state == b"R":  # preempted: runnable all along, nobody woke it
            return wait
        if woken is None or woken[0] < wait.end - wait.ns:
            frames, waker = NOT_RECORDED, NOT_RECORDED
        else:
            frames, waker = woken[1], woken[2]
        return wait._replace(stack=wait.stack + b";" + SEPARATOR + b";" + frames, waker=waker)

    def tick(self, ns: int) -> None:
        if ns:  # synthesized records (COMM, MMAP of threads alive at attach) carry time 0
            if self.start is None:
                self.start = ns
            self.end = ns

    def settle(self, tid: int) -> Wait | None:
        """The tid showed up as a traced thread: a pending next_pid switch-in opens its first wait."""
        if tid in self.known:
            return None
        self.known.add(tid)
        first = self.first_in.pop(tid, None)
        if first is None:
            return None
        return self.opening_wait(tid, first[0], first[1])

    def opening_wait(self, tid: int, ns: int, thread: bytes) -> Wait | None:
        forked = self.forked.pop(tid, None)
        if forked is not None:
            return Wait(thread + b";" + NEW_THREAD + b";[R]", thread, b"R", max(0, ns - forked), NEW, ns)
        start = self.start if self.start is not None else ns
        stack = thread + b";" + SINCE_START + b";" + state_frame(UNKNOWN_STATE)
        return self.ended(tid, Wait(stack, thread, UNKNOWN_STATE, max(0, ns - start), OPEN_AT_START, ns))

    def switch_in(self, tid: int, ns: int, thread: bytes, traced: bool) -> Wait | None:
        """`traced`: the record belongs to the thread itself (a SWITCH IN), not to a next_pid field."""
        pending = self.out.pop(tid, None)
        if pending is not None:
            wait = Wait(pending.stack, pending.thread, pending.state, max(0, ns - pending.ns), pending.kind, ns)
            return self.ended(tid, wait)
        if tid in self.known or not self.wants(tid):
            return None  # already paired through the other source of switch-ins
        if traced:
            first = self.first_in.pop(tid, None)
            self.known.add(tid)
            return self.opening_wait(tid, first[0] if first else ns, thread)
        self.first_in.setdefault(tid, (ns, thread))
        return None

    def switch_out(self, tid: int, out: _OpenWait, line: int, text: bytes) -> Wait | None:
        opening = self.settle(tid)
        if tid in self.out:
            self.unpaired += 1
            self.diagnostics.report(self.path, line, "unpaired-switch-out", decode(text))
        self.forked.pop(tid, None)
        if out.state in EXIT_STATES:
            self.out.pop(tid, None)
        else:
            self.out[tid] = out
        return opening

    def switch_out_record(self, tid: int, ns: int, thread: bytes, preempted: bool) -> Wait | None:
        """A PERF_RECORD_SWITCH OUT: the wait starts here if no sched_switch record started it."""
        opening = self.settle(tid)
        if tid not in self.out and tid not in self.exited and self.wants(tid):
            state = b"R" if preempted else UNKNOWN_STATE
            stack = thread + b";" + NO_STACK + b";" + state_frame(state)
            self.out[tid] = _OpenWait(ns, stack, thread, state, WITHOUT_STACK)
        return opening

    def exit(self, tid: int) -> None:
        self.exited.add(tid)
        self.out.pop(tid, None)
        self.forked.pop(tid, None)
        self.first_in.pop(tid, None)
        self.known.add(tid)

    def extend_to(self, ns: int) -> None:
        """The recording went on until `ns` after its last record (perf's clock): the window ends there."""
        if self.end is not None and ns > self.end:
            self.end = ns

    def drop_open(self) -> tuple[int, int]:
        """Forget the waits still open (how many, and their ns to the last timestamp)."""
        end = self.end or 0
        dropped = (len(self.out), sum(max(0, end - pending.ns) for pending in self.out.values()))
        self.out.clear()
        return dropped

    def close(self) -> Iterator[Wait]:
        """Clip the waits still open when the recording ended to its last timestamp."""
        end = self.end or 0
        for pending in self.out.values():
            kind = OPEN_AT_END if pending.kind == PAIRED else pending.kind
            yield Wait(pending.stack, pending.thread, pending.state, max(0, end - pending.ns), kind, end)
        self.out.clear()


# A sched_switch record is the thread's that switches out; the thread switched in is named by its
# next_pid only, and a recording of some tasks (not -a) has that record only when the switching-out
# task is traced too: most switch-ins are in PERF_RECORD_SWITCH records, which perf script hides.
NO_SWITCH_RECORDS = (
    "{path}: {count:,} switch-outs had no switch-in{left}: the text has no PERF_RECORD_SWITCH records, so most "
    "off-CPU time is missing: print it with `perf script --show-switch-events` (of a recording made with "
    "`perf record --switch-events`, as `flamegraph offcpu` makes them)"
)


class _SwitchRecord(NamedTuple):
    """A sched_switch record whose frames are still being read."""

    tid: int
    ns: int
    thread: bytes
    state: bytes
    line: int
    text: bytes


class _WakeRecord(NamedTuple):
    """A sched_waking/sched_wakeup record whose frames are still being read."""

    wakee: int
    ns: int
    thread: bytes  # comm-tid of the task running when it happened
    tid: int
    text: bytes
    lines: list[bytes]


class SchedCollapser:
    """Turns `perf script` text of sched_switch recordings into waits; frames named as `fold` names them."""

    def __init__(self, options: OffCpuOptions, diagnostics: Diagnostics) -> None:
        self.options = options
        self.diagnostics = diagnostics
        # Frames are named as `fold` names them ([unknown] ones grouped by `frame_hook`, as in fold);
        # kernel frames dropped unless `kernel`.
        names = FoldOptions(annotate_kernel=options.annotate_kernel, frame_hook=options.frame_hook)
        self.frames = FrameNames(names, drop_kernel=not options.keep_kernel)
        # A waker's kernel frames say whether a task, a timer or an interrupt woke: named even when dropped.
        self.waker_names = FrameNames(names) if not options.keep_kernel else self.frames
        self.wakeups = 0  # wakeup records read
        self.waking_seen = False  # sched_waking records present: sched_wakeup ones are then ignored
        self.switches = 0  # sched_switch records read
        self.hidden_switch_ins = False  # text without PERF_RECORD_SWITCH records lost switch-ins: NO_SWITCH_RECORDS
        self.skipped_by_event: Counter[str] = Counter()  # samples of other events (cpu-clock beside it): not folded
        self.lost = 0  # events perf reported lost
        self.window_ns = 0  # the recordings' lengths, first to last timestamp
        # Of the last recording read: its length, and the threads alive at its start that no record
        # shows (blocked, or running without a switch, for the whole window: the text cannot tell).
        self.last_window_ns = 0
        self.silent: list[tuple[int, bytes]] = []

    def clipped_window(self, start: int, end: int) -> int:
        """How much of a recording spanning [start, end] the `window` option keeps."""
        if self.options.window is None:
            return end - start
        first, last = self.options.window.ns()
        return max(0, min(end, last) - max(start, first))

    def frame(self, line: bytes) -> bytes | None:
        """Folded name of a frame line (cached), b'' for frames we drop, None if malformed."""
        name = self.frames.plain.get(line)
        return name if name is not None else self.frames.name(line)

    def iter_waits(
        self, lines: Iterable[bytes], path: str, recording_end: int | Callable[[], int | None] | None = None
    ) -> Iterator[Wait]:
        """Every wait of one recording, in the order the waits end; open ones last, clipped to the
        last record or to `recording_end` (ns, perf's clock) when that is later (a callable: asked once
        the lines end, for lines read while perf still records them).

        Lines come without their line end (as `str.split` cuts a block), or with it (as a file
        iterates); both fold the same."""
        pairing = _Pairing(self.diagnostics, path)
        pairing.wakers = self.options.wakers
        if self.options.target is not None:
            pairing.tree = ProcessTree(*self.options.target)
        diagnostics = self.diagnostics
        named = self.frames.plain.get
        ready: list[Wait] = []
        frames: list[bytes] = []
        out: _SwitchRecord | None = None  # the sched_switch whose frames we are reading
        wake: _WakeRecord | None = None  # or the wakeup record
        skipping = False  # inside a record we do not fold (another event, a bad header)
        for number, line in enumerate(lines, 1):
            first = line[:1]
            if first == b"\t" or (first == b" " and SCHED_HEADER.match(line) is None):
                if is_detail(line):
                    continue  # a source line or the instruction (-F +srcline, +insn): not a frame
                if out is not None:
                    name = named(line)
                    if name is None:
                        name = self.frames.name(line)
                    if name is None:
                        diagnostics.report(path, number, "bad-frame-line", decode(line))
                    elif name:
                        frames.append(name)
                elif wake is not None:
                    wake.lines.append(line)
                elif not skipping and line.strip():
                    diagnostics.report(path, number, "orphan-frame", decode(line))
                continue
            if first == b"|" and is_detail(line):
                continue  # the source code of the sample (-F +srccode), after its record
            if out is not None:
                self._switch_out(pairing, out, frames, ready)
                out = None
            if wake is not None:
                self._wakeup(pairing, wake)
                wake = None
            skipping = False
            frames.clear()
            if line.strip() and first != b"#":
                record = self._record(pairing, line, number, ready, frames)
                out = record if isinstance(record, _SwitchRecord) else None
                wake = record if isinstance(record, _WakeRecord) else None
                skipping = record is None
            if ready:
                yield from ready
                ready.clear()
        if out is not None:
            self._switch_out(pairing, out, frames, ready)
            yield from ready
        self.lost += pairing.lost
        missing_ins = pairing.unpaired and not pairing.switch_records  # most switch-ins are not in the text
        if callable(recording_end):
            recording_end = recording_end()
        if recording_end is not None:
            pairing.extend_to(recording_end)
        self.last_window_ns = 0
        if pairing.start is not None and pairing.end is not None:
            self.last_window_ns = pairing.end - pairing.start
            self.window_ns += self.clipped_window(pairing.start, pairing.end)
        self.silent = [
            (tid, name) for tid, name in pairing.alive.items() if tid not in pairing.seen and pairing.wants(tid)
        ]
        if missing_ins:
            # A thread's last switch-out is no wait open to the end when its switch-ins are not in the text:
            # a thread preempted once, then run to its end, was drawn preempted until the recording stopped.
            count, ns = pairing.drop_open()
            waits = f"{count:,} wait{'s' if count != 1 else ''}"
            left = f" (and {waits} open at the end, {ns / 1e6:,.1f} ms, left out: as unknown)" if count else ""
            diagnostics.note(NO_SWITCH_RECORDS.format(path=path, count=pairing.unpaired, left=left))
            self.hidden_switch_ins = True
        yield from pairing.close()

    def _switch_out(self, pairing: _Pairing, out: _SwitchRecord, frames: list[bytes], ready: list[Wait]) -> None:
        if self.options.sample_hook is not None:
            frames = self.options.sample_hook(out.text, frames)
        stack = b";".join([out.thread, *frames[::-1], state_frame(out.state)])
        opening = pairing.switch_out(out.tid, _OpenWait(out.ns, stack, out.thread, out.state), out.line, out.text)
        if opening is not None:
            ready.append(opening)

    def _wakeup(self, pairing: _Pairing, wake: _WakeRecord) -> None:
        """Remember what woke the wakee: the frames that go above its wait's `--`."""
        named: list[bytes] = []
        kept: list[bytes] = []
        for line in wake.lines:
            line = line.rstrip(b"\r\n")
            full = self.waker_names.plain.get(line) or self.waker_names.name(line)
            if full:  # malformed lines are reported once, by the switch records' reader
                named.append(full)
                kept.append(self.frame(line) or b"" if self.waker_names is not self.frames else full)
        frames, task = waker_frames(wake.thread, wake.tid, named, kept)
        if task and self.options.sample_hook is not None:  # e.g. the [op] the waker was running
            hooked = self.options.sample_hook(wake.text, kept)
            frames, task = waker_frames(wake.thread, wake.tid, named, hooked)
        pairing.woke(wake.wakee, wake.ns, frames, frames.partition(b";")[0])

    def _record(
        self, pairing: _Pairing, line: bytes, number: int, ready: list[Wait], frames: list[bytes]
    ) -> _SwitchRecord | _WakeRecord | None:
        """Handle one record header; a sched_switch returns its switch-out, to be completed by frames."""
        self.diagnostics.records += 1
        header = SCHED_HEADER.match(line)
        if header is not None:
            comm, pid, tid_text, seconds, fraction, rest = header.groups()
            tid = int(tid_text or pid)
        elif (exited := EXITED_SCHED_HEADER.match(line)) is not None:
            # `:-1 -1`: a record of a task perf script could no longer name, the kernel having released its
            # pid as it exited; only an all-CPU recording (--wakers) sees them, every exiting task of the
            # machine's. Its last switch-out is no wait (prev_state X), but what its records say of others
            # counts: the next_pid switched in, the thread it woke.
            comm, tid, (seconds, fraction, rest) = EXITED_COMM, -1, exited.groups()
        else:
            self.diagnostics.report(pairing.path, number, "bad-header", decode(line))
            self.diagnostics.skipped_records += 1
            return None
        ns = parse_time_ns(seconds, fraction)
        pairing.tick(ns)
        if ns and tid > 0:
            pairing.seen.add(tid)
        wait: Wait | None = None
        tracepoint = SCHED_SWITCH in rest or is_waker_record(rest) is not None
        if tracepoint and pairing.tree is not None and pairing.tree.attached():
            pairing.start = ns  # perf on all CPUs: side-band records flow while it describes the machine
        if SCHED_SWITCH in rest:
            return self._sched_switch(pairing, line, rest, ns, number, ready, frames)
        if self.options.wakers and (which := is_waker_record(rest)) is not None:
            return self._wake_record(pairing, which, comm, tid, ns, rest, line)
        switch = SWITCH_RECORD.match(rest)
        task = TASK_RECORD.match(rest) if switch is None else None
        if switch is not None:
            pairing.switch_records = True
        if switch is not None and tid > 0:
            if switch.group(1) == b"IN":
                wait = pairing.switch_in(tid, ns, thread_label(comm, tid), traced=True)
            else:
                preempted = b"preempt" in rest
                wait = pairing.switch_out_record(tid, ns, thread_label(comm, tid), preempted)
        elif task is not None:
            child = int(task.group(3))
            if pairing.tree is not None and task.group(1) == b"FORK":
                parent = task.group(4)
                pairing.tree.fork(int(task.group(2)), child, int(parent) if parent is not None else None)
            if task.group(1) == b"FORK":
                pairing.exited.discard(child)  # a recycled tid is a new thread
                if ns and child not in pairing.known:
                    pairing.forked[child] = ns
            elif task.group(1) == b"EXIT":
                pairing.exit(child)
        elif (lost := LOST_RECORD.match(rest)) is not None:
            pairing.lost += int(lost.group(1))
        elif pairing.tree is not None and (named := COMM_RECORD.match(rest)) is not None:
            self._comm(pairing, named, ns)
        elif not ns and (named := COMM_RECORD.match(rest)) is not None:  # synthesized at attach
            pairing.alive[int(named.group(3))] = thread_label(named.group(1), int(named.group(3)))
        elif (other := OTHER_EVENT.match(rest)) is not None:
            self.skipped_by_event[decode(other.group(1))] += 1
        if wait is not None:
            ready.append(wait)
        return None

    def _comm(self, pairing: _Pairing, named: re.Match[bytes], ns: int) -> None:
        """A COMM record of a system-wide recording: a thread's process; a workload's exec opens its window."""
        assert pairing.tree is not None
        pid, tid = int(named.group(2)), int(named.group(3))
        pairing.tree.comm(pid, tid)
        if not ns:
            if pairing.tree.wants(tid):
                pairing.alive[tid] = thread_label(named.group(1), tid)
        elif named.group(0).startswith(b"PERF_RECORD_COMM exec") and pairing.tree.exec(pid):
            pairing.start = ns  # before it, the workload was perf's child waiting to exec

    def _wake_record(
        self, pairing: _Pairing, which: bytes, comm: bytes, tid: int, ns: int, rest: bytes, line: bytes
    ) -> _WakeRecord | None:
        self.wakeups += 1
        if which == b"waking":
            self.waking_seen = True
        elif self.waking_seen:
            return None  # sched_waking runs in the waker's context; sched_wakeup may run on the wakee's CPU
        wakee = wakee_of(rest)
        if wakee is None or not pairing.wants(wakee):
            return None
        return _WakeRecord(wakee, ns, thread_label(comm, tid), tid, line.rstrip(b"\n"), [])

    def _sched_switch(
        self,
        pairing: _Pairing,
        line: bytes,
        rest: bytes,
        ns: int,
        number: int,
        ready: list[Wait],
        frames: list[bytes],
    ) -> _SwitchRecord | None:
        fields = SWITCH_FIELDS.search(rest)
        if fields is None:
            self.diagnostics.report(pairing.path, number, "bad-switch", decode(line))
            self.diagnostics.skipped_records += 1
            return None
        self.switches += 1
        prev_comm, prev_pid, state, next_comm, next_pid, trailing = fields.groups()
        prev, nxt = int(prev_pid), int(next_pid)
        pairing.seen.update((prev, nxt))
        if nxt > 0:
            wait = pairing.switch_in(nxt, ns, thread_label(next_comm, nxt), traced=False)
            if wait is not None:
                ready.append(wait)
        if prev <= 0 or not pairing.wants(prev):
            return None  # the idle task (not a thread that waits), or not the target's
        if trailing.strip():  # recorded without a call graph: the one frame is on the header line
            name = self.frame(trailing)
            if name is None:
                self.diagnostics.report(pairing.path, number, "bad-frame-line", decode(line))
            elif name:
                frames.append(name)
        return _SwitchRecord(
            prev,
            ns,
            thread_label(prev_comm, prev),
            state.rstrip(b"+") or UNKNOWN_STATE,
            number,
            line.rstrip(b"\n"),
        )
