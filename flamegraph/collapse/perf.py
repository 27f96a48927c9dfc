"""Collapse `perf script` text into folded stacks, as stackcollapse-perf.pl does, minus its losses.

Input it handles (one sample per record, records separated by a blank line):
    java 24636/25607 [000] 4794564.109216:     250000 cpu-clock:
    \t    7f0c1a2b3c4d std::_Function_handler<void (std::shared_ptr<X>), F>::_M_invoke+0x1d (/lib/libmxnet.so)
    \t    ffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])
    python 4242 123.456789:     1001001 cpu-clock:  7f12 PyEval_Eval+0x3 (/usr/bin/python3)   <- no -g

Hot path: a frame line is looked up in a dict keyed by its raw bytes and parsed only the first
time it is seen (a recording repeats a few thousand distinct frame lines millions of times).
Memory is O(distinct stacks + distinct frame lines), never O(input).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..diagnostics import Diagnostics
from ..folded import decode
from ..model import FoldedProfile
from . import tidy

# The reference's patterns, kept verbatim so that what it accepts, we accept the same way.
HEADER = re.compile(rb"^(\S.+?)\s+(\d+)/*(\d+)*\s+")
HEADER_OURS = re.compile(rb"^(\S.*?)\s+(\d+)/*(\d+)*\s+")  # the reference needs comm >= 2 chars
PERIOD_EVENT = re.compile(rb":\s*(\d+)*\s+(\S+):\s*$")
FRAME_REFERENCE = re.compile(rb"^\s*(\w+)\s*(.+) \((.*)\)")
# Ours, tried only where the reference's fails: "<time>: [<period>] <event>: <rest>", where rest is
# the sampled frame of a recording made without -g, or a tracepoint's fields.
TIMED_EVENT = re.compile(rb"\s\d+\.\d+:\s+(?:(\d+)\s+)?(\S+?):(?=\s|$)(.*)$")
FRAME_ON_HEADER = re.compile(rb"^\s*([0-9a-fA-F]+)\s+(.+?)\s*$")
FRAME_HEAD = re.compile(rb"^\s*(\w+)\s*(.+)$")

# (address, symbol, DSO) of a frame -> a replacement symbol, or None to keep it. Called once per
# distinct frame (never with --compat); flamegraph.report.FrameObserver groups [unknown] frames of
# readable DSOs by function with it (--group-unknown) and notes which frames are JIT code.
FrameHook = Callable[[bytes, bytes, bytes], bytes | None]
# (sample header line, folded frame names leaf first) -> the frame names to fold, leaf first. Called
# once per kept sample record (never with --compat); flamegraph.mxnet.join inserts MXNet operator and
# oneDNN primitive frames with it, from the sample's time and thread. None (the default) costs nothing.
SampleHook = Callable[[bytes, list[bytes]], list[bytes]]

NONE, OPEN, FILTERED = 0, 1, 2  # record state: between records, inside one we keep, inside a skipped one


@dataclass(frozen=True)
class FoldOptions:
    """stackcollapse-perf.pl's options, with their meaning, plus ours."""

    pid: bool = False  # comm-PID as the root frame
    tid: bool = False  # comm-PID/TID as the root frame
    kernel: bool = False  # annotate kernel frames with _[k]
    jit: bool = False  # annotate JIT frames with _[j]
    addrs: bool = False  # [dso <addr>] instead of [dso] for unknown symbols
    event_filter: str | None = None  # fold only this event (default: the first one seen)
    per_event: bool = False  # fold every event separately (no filtering)
    compat: bool = False  # reproduce the reference byte for byte, including the records it loses
    frame_hook: FrameHook | None = None  # see FrameHook; ignored with compat
    sample_hook: SampleHook | None = None  # see SampleHook; ignored with compat

    @classmethod
    def with_all(cls, **kwargs: object) -> FoldOptions:
        return cls(kernel=True, jit=True, **kwargs)  # type: ignore[arg-type]


def split_frame(text: bytes, compat: bool) -> tuple[bytes, bytes, bytes] | None:
    """'<addr> <symbol> (<dso>)' -> (addr, symbol, dso); the DSO is the last balanced (...) group."""
    match = FRAME_REFERENCE.match(text)
    if match is None:
        return None
    if compat:
        return match.group(1), match.group(2), match.group(3)
    body = text.rstrip()
    if not body.endswith(b")"):
        return match.group(1), match.group(2), match.group(3)
    dso = match.group(3)
    if b"(" not in dso and b")" not in dso and len(body) - len(dso) - 2 == body.rfind(b" (") + 1:
        return match.group(1), match.group(2), dso  # the usual case: the last group is the whole DSO
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        byte = body[i]
        if byte == 0x29:
            depth += 1
        elif byte == 0x28:
            depth -= 1
            if depth == 0:
                # As the reference: the symbol ends before the " (" that opens the DSO group.
                head = FRAME_HEAD.match(body[: i - 1]) if i and body[i - 1] == 0x20 else None
                if head is None:
                    break
                return head.group(1), head.group(2), body[i + 1 : -1]
    return match.group(1), match.group(2), match.group(3)


HEX_DIGITS = frozenset(b"0123456789abcdef")


def _symbol_key(line: bytes, java: bool, addrs: bool, hooked: bool = False) -> bytes | None:
    """'<addr> <sym>+0x<off> (<dso>)' -> b'<sym> (<dso>)' (+ java flag); None when unsure."""
    body = line.strip()
    space = body.find(b" ")
    paren = body.rfind(b" (")
    if space <= 0 or paren <= space or not body[:space].isalnum():
        return None
    symbol = body[space + 1 : paren].lstrip()
    if b"[unknown]" in symbol and (addrs or (hooked and not body.endswith(b" ([unknown])"))):
        return None  # --addrs prints the address; a frame hook may name each address differently
    plus = symbol.rfind(b"+0x")
    if plus > 0 and len(symbol) > plus + 3 and HEX_DIGITS.issuperset(symbol[plus + 3 :]):
        symbol = symbol[:plus]
    return (b"J" if java else b"-") + symbol + body[paren:]


class PerfCollapser:
    """Folds one or more `perf script` streams; call `feed` per input, then `profile()`."""

    def __init__(self, options: FoldOptions, diagnostics: Diagnostics) -> None:
        self.options = options
        self.diagnostics = diagnostics
        self.event_filter: bytes | None = options.event_filter.encode() if options.event_filter else None
        self.by_event: dict[bytes | None, dict[bytes, int]] = {}
        self.records_by_event: Counter[bytes | None] = Counter()
        self.skipped_by_event: Counter[bytes] = Counter()
        self._frames: dict[bytes, bytes] = {}  # raw frame line -> folded frame text
        self._java_frames: dict[bytes, bytes] = {}  # the same for java processes (Java tidy rules)
        self._skip_lines: set[bytes] = set()  # frames the reference drops, e.g. "(comm)" names
        # The same caches for perf_blocks' fast path, keyed by the line without its newline.
        self._block_frames: dict[bytes, bytes] = {}
        self._block_java_frames: dict[bytes, bytes] = {}
        self._roots: dict[tuple[bytes, ...], bytes] = {}  # (comm, pid, tid) -> root frame
        self._symbols: dict[bytes, bytes] = {}  # frame line without address and offset -> name

    # -- frames ------------------------------------------------------------------------------
    def frame_name(self, text: bytes, java: bool) -> bytes | None:
        """Folded text of one frame line, b'' for a frame the reference drops, None if malformed."""
        parts = split_frame(text, self.options.compat)
        if parts is None:
            return None
        pc, raw, dso = parts
        raw = tidy.OFFSET.sub(b"", raw)
        if raw.startswith(b"(") and (self.options.compat or not raw.startswith(tidy.ANONYMOUS_NAMESPACE)):
            return b""  # the reference drops "(...)" names as process names
        opts = self.options
        if opts.frame_hook is not None and not opts.compat:
            raw = opts.frame_hook(pc, raw, dso) or raw
        names = []
        for i, name in enumerate(raw.split(b"->")):
            if name == b"[unknown]":
                name = dso.rsplit(b"/", 1)[-1] if dso != b"[unknown]" else b"unknown"
                name = b"[" + name + (b" <" + pc + b">" if opts.addrs else b"") + b"]"
            name = tidy.tidy_name(name, java, opts.compat)
            if i > 0 or (dso == b"inlined" and not opts.compat):
                if b"_[i]" not in name:
                    name += b"_[i]"
            elif opts.kernel and tidy.is_kernel_dso(dso, opts.compat):
                name += b"_[k]"
            elif opts.jit and tidy.is_jit_dso(dso, opts.compat) and b"_[j]" not in name:
                name += b"_[j]"
            names.append(name)
        return b";".join(names)

    # -- headers -----------------------------------------------------------------------------
    def _root_name(self, match: re.Match[bytes]) -> bytes:
        comm, pid, tid = match.group(1), match.group(2), match.group(3)
        if not tid or tid == b"0":  # perf printed only one id: it is the thread's
            tid, pid = pid, b"?"
        if self.options.tid:
            root = comm + b"-" + pid + b"/" + tid
        elif self.options.pid:
            root = comm + b"-" + pid
        else:
            root = comm
        return root.replace(b" ", b"_")

    # -- the loop ----------------------------------------------------------------------------
    def feed(self, lines: Iterable[bytes], path: str, first_line: int = 1) -> int:
        """Fold the records of one stream; returns the number of lines read."""
        opts = self.options
        compat = opts.compat
        sample_hook = opts.sample_hook if not compat else None
        header = b""
        diagnostics = self.diagnostics
        by_event = self.by_event
        frames_cache = self._frames
        cache = frames_cache
        java = False
        state = NONE
        record_bad = False
        root = b""
        period = 1
        counts: dict[bytes, int] = {}
        frames: list[bytes] = []
        append = frames.append
        number = first_line - 1

        for number, line in enumerate(lines, first_line):
            first = line[0]
            if first == 9 or first == 32:  # "\t" or " ": a frame line, the hot path
                name = cache.get(line)
                if name is not None and state == OPEN:
                    append(name)
                    continue
                if compat or not self._is_indented_header(line):
                    if state == FILTERED:
                        continue
                    if state == NONE:
                        if line.strip():
                            diagnostics.report(path, number, "orphan-frame", decode(line))
                        continue
                    if not compat and not line.strip():
                        first = 10  # a line of spaces ends the record like a blank one
                    else:
                        name = self._slow_frame(line, java, cache)
                        if name is None:
                            diagnostics.report(path, number, "bad-frame-line", decode(line))
                            record_bad = not compat
                        elif name:
                            append(name)
                        continue
                else:
                    line = line.lstrip(b" \t")  # no -g: perf right-aligns the comm column

            if first == 10 or (first == 13 and line == b"\r\n" and not compat):  # the record ends
                if state == OPEN and not record_bad:
                    names = frames if sample_hook is None else sample_hook(header, frames)
                    key = root + b";" + b";".join(names[::-1]) if names else root
                    counts[key] = counts.get(key, 0) + period
                frames.clear()
                state = NONE
                continue
            if first == 35:  # "#": perf's header comments
                continue

            stripped = line.rstrip(b"\r\n") if not compat else line.rstrip(b"\n")
            match = (HEADER if compat else HEADER_OURS).match(stripped)
            if match is None:
                if state == FILTERED:
                    continue
                # perf prints frames unindented in some layouts; the reference accepts them anywhere.
                name = None if state == NONE else self._slow_frame(line, java, cache)
                if name is None:
                    diagnostics.report(path, number, "bad-header", decode(line))
                    record_bad = not compat
                    if state == NONE:
                        diagnostics.records += 1
                        state = FILTERED  # swallow the frames of this unparseable record
                elif name:
                    append(name)
                continue

            # A sample header: the previous record ends here when it had no blank line after it.
            if state == OPEN and not compat:
                if not record_bad:
                    names = frames if sample_hook is None else sample_hook(header, frames)
                    key = root + b";" + b";".join(names[::-1]) if names else root
                    counts[key] = counts.get(key, 0) + period
                frames.clear()
            elif state == FILTERED:
                frames.clear()
            if not compat or state != OPEN:
                record_bad = False
            diagnostics.records += 1

            event, period_text, rest = self._event(stripped)
            if event is not None:
                if self.event_filter is None and not opts.per_event:
                    self.event_filter = event
                if not opts.per_event and event != self.event_filter:
                    self.skipped_by_event[event] += 1
                    if state != OPEN or not compat:
                        state = FILTERED
                    continue
            # Without --per-event every kept record lands in one profile (key None), as in the reference.
            profile_key = event if opts.per_event else None
            self.records_by_event[profile_key] += 1
            counts = by_event.setdefault(profile_key, {})
            period = int(period_text) if period_text and period_text != b"0" else 1
            root = self._root_name(match)
            java = root.startswith(b"java")
            cache = self._java_frames if java else frames_cache
            state = OPEN
            header = stripped
            if rest:  # sampled without -g: the one frame is on the header line
                name = self.frame_name(rest, java)
                if name is None:
                    diagnostics.report(path, number, "bad-frame-line", decode(line))
                    record_bad = True
                elif name:
                    append(name)

        if state == OPEN and not compat and not record_bad:  # no blank line after the last record
            names = frames if sample_hook is None else sample_hook(header, frames)
            key = root + b";" + b";".join(names[::-1]) if names else root
            counts[key] = counts.get(key, 0) + period
        return number - first_line + 1

    def _is_indented_header(self, line: bytes) -> bool:
        """A sample header printed with leading spaces (perf right-aligns comm without -g)."""
        stripped = line.strip()
        return (
            HEADER_OURS.match(stripped) is not None
            and (PERIOD_EVENT.search(stripped) is not None or TIMED_EVENT.search(stripped) is not None)
        )

    def _slow_frame(self, line: bytes, java: bool, cache: dict[bytes, bytes]) -> bytes | None:
        """Parse a frame line not yet in the cache; b'' for frames to drop, None if malformed."""
        if line in self._skip_lines:
            return b""
        # Lines differing only in address and offset ("7f01 work+0x34 (/t)", "7f09 work+0x3c (/t)")
        # fold to the same name: key a second cache by what is left.
        symbol_key = _symbol_key(line, java, self.options.addrs, self.options.frame_hook is not None)
        name = self._symbols.get(symbol_key) if symbol_key is not None else None
        if name is None:
            name = self.frame_name(line.rstrip(b"\n"), java)
            if name and symbol_key is not None:
                self._symbols[symbol_key] = name
        if name:
            cache[line] = name
        elif name == b"":
            self._skip_lines.add(line)
        return name

    def _event(self, header: bytes) -> tuple[bytes | None, bytes | None, bytes]:
        """(event, period, frame text after the event) of a sample header line."""
        match = PERIOD_EVENT.search(header)
        if match is not None:
            return match.group(2), match.group(1), b""
        if self.options.compat:
            return None, None, b""
        timed = TIMED_EVENT.search(header)
        if timed is None:
            return None, None, b""
        rest = timed.group(3)
        frame = FRAME_ON_HEADER.match(rest)
        # Tracepoint fields ("prev_comm=x prev_pid=1 ...") are not a frame: require '<hex> <sym> (<dso>)'.
        is_frame = frame is not None and frame.group(2).endswith(b")") and b" (" in frame.group(2)
        return timed.group(2), timed.group(1), rest if is_frame else b""

    # -- results -----------------------------------------------------------------------------
    def profile(self, event: bytes | None = None) -> FoldedProfile:
        """The folded profile: of `event` with --per-event, else the one the filter kept."""
        counts = self.by_event.get(event, {})
        name = event if self.options.per_event else self.event_filter
        return FoldedProfile(
            counts={decode(stack): count for stack, count in counts.items()},
            event=decode(name) if name is not None else None,
        )
