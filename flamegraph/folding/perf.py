"""Collapse `perf script` text into folded stacks, as stackcollapse-perf.pl does, minus its losses.

Input it handles (one sample per record, records separated by a blank line):
    java 24636/25607 [000] 4794564.109216:     250000 cpu-clock:
    \t    7f0c1a2b3c4d std::_Function_handler<void (std::shared_ptr<X>), F>::_M_invoke+0x1d (/lib/libmxnet.so)
    \t    ffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])
    python 4242 123.456789:     1001001 cpu-clock:  7f12 PyEval_Eval+0x3 (/usr/bin/python3)   <- no -g

`PerfCollapser` holds what a fold accumulates (stacks per event, the frame-line cache, the header
cache, the event filter) and runs the line-by-line state machine, which alone handles every
irregular record. Usual records go through `perf_blocks`, the fast path, which shares all of it.
Memory is O(distinct stacks + distinct frame lines + distinct header shapes), never O(input).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from ..io.diagnostics import Diagnostics
from ..io.folded import decode, encode
from ..model import FoldedProfile
from .frames import FrameNames, name_frame, split_frame
from .grammar import (
    FRAME_ON_HEADER,
    HEADER,
    HEADER_OURS,
    PERIOD_EVENT,
    PERIOD_ONLY,
    TIMED_EVENT,
    is_detail,
    is_exited_task,
    is_header,
    is_inlined_srcline,
    is_non_sample,
    is_period,
)
from .options import FoldOptions, FrameHook, SampleHook

__all__ = [
    "FoldOptions", "FrameHook", "HeaderFacts", "Names", "PerfCollapser", "SampleHook", "Stacks", "name_frame",
    "split_frame",
]

# The header patterns and the line classes are the grammar's (script.py); this module folds with them.
NONE, OPEN, FILTERED = 0, 1, 2  # record state: between records, inside one we keep, inside a skipped one

Names = tuple[bytes, ...]  # the folded names of a stack's frames below its root, leaf first
Stacks = dict[Names, int]  # -> weight


class HeaderFacts(NamedTuple):
    """What the fast path needs of a usual sample header, the same for every header of its shape."""

    weight: int  # the period (1 when perf printed none, or 0)
    stacks: Stacks  # where its samples add up: those of its root frame and event
    frames: dict[bytes, bytes]  # the frame-line table for its process (Java or not)


class _Record(NamedTuple):
    """Where the state machine stopped: the record being read, if any."""

    state: int
    header: bytes
    bad: bool
    tail_junk: bool
    period: int
    java: bool
    counts: Stacks
    frames: list[bytes]

    @classmethod
    def none(cls) -> _Record:
        """Between records: nothing read."""
        return cls(NONE, b"", False, False, 1, False, {}, [])


class PerfCollapser:
    """Folds one or more `perf script` streams into stacks per event.

    Feed it through `flamegraph.folding.perf_blocks.fold_blocks` (the fast path, which hands
    irregular records to `feed_lines`), then read `profile()`. It is a stateful object rather than
    a generator of samples because the fold's speed comes from state that outlives one record:
    the frame-line and header caches, and the stack counts updated in place."""

    def __init__(self, options: FoldOptions, diagnostics: Diagnostics) -> None:
        self.options = options
        self.diagnostics = diagnostics
        # surrogateescape: an event named with raw bytes (argv, or --jobs passing the file's first one on)
        self.event_filter: bytes | None = encode(options.event_filter) if options.event_filter else None
        # (event, root frame) -> stacks; the event is None without --per-event (the one kept profile).
        self.stacks: dict[tuple[bytes | None, bytes], Stacks] = {}
        self.skipped_by_event: Counter[bytes] = Counter()
        self.frames = FrameNames(options)
        # (header before its timestamp, after it) -> facts, or None: the line path reads such headers
        self.headers: dict[tuple[bytes, bytes], HeaderFacts | None] = {}
        self._header_re = HEADER if options.compat else HEADER_OURS
        self._record = _Record.none()

    # -- headers -----------------------------------------------------------------------------
    def root_name(self, match: re.Match[bytes]) -> bytes:
        """The root frame of a header matched by HEADER/HEADER_OURS."""
        comm, pid, tid = match.group(1), match.group(2), match.group(3)
        if not tid or tid == b"0":  # perf printed only one id: it is the thread's
            tid, pid = pid, b"?"
        if self.options.tid:
            root = comm + b"-" + pid + b"/" + tid
        elif self.options.pid:
            root = comm + b"-" + pid
        else:
            root = comm
        root = root.replace(b" ", b"_")
        return root if self.options.compat else root.replace(b";", b":")  # ';' would split the root in two

    def event_of(self, header: bytes, ids_end: int = 0) -> tuple[bytes | None, bytes | None, bytes]:
        """(event, period, frame text after the event) of a sample header line whose comm and ids
        end at `ids_end`."""
        match = PERIOD_EVENT.search(header)
        if match is not None:
            return match.group(2), match.group(1), b""
        if self.options.compat:
            return None, None, b""
        timed = TIMED_EVENT.search(header)
        if timed is None:
            alone = PERIOD_ONLY.match(header, ids_end) if ids_end else None  # -F comm,tid,period
            return None, alone.group(1) if alone is not None else None, b""
        rest = timed.group(5)
        frame = FRAME_ON_HEADER.match(rest)
        # Tracepoint fields ("prev_comm=x prev_pid=1 ...") are not a frame: require '<hex> <sym> (<dso>)'.
        is_frame = frame is not None and frame.group(2).endswith(b")") and b" (" in frame.group(2)
        return timed.group(4), timed.group(3), rest if is_frame else b""

    def header_facts(self, header: bytes, space: int, colon: int) -> HeaderFacts | None:
        """Facts of a record's first line for the fast path, or None: the line path must read it.

        `colon` is where the first ': ' is, `space` the last blank before it, so header[space+1:colon]
        is the timestamp. Facts are cached under the header without it, and only when both matches
        lie outside it: HEADER_OURS ends at or before `space`, PERIOD_EVENT starts at `colon`. Any
        other header of the same key then matches the same way whatever its timestamp (a token with
        no blank and no ': ' in it: neither pattern can end, nor PERIOD_EVENT start, inside it)."""
        facts = self._facts(header, space, colon)
        self.headers[header[:space], header[colon + 2 :]] = facts
        return facts

    def _facts(self, header: bytes, space: int, colon: int) -> HeaderFacts | None:
        compat = self.options.compat
        if header[:1] in (b"\t", b" ", b"#") or header.endswith(b"\r") and not compat:
            return None
        if not compat and (is_non_sample(header) or header[:1] == b"|" and is_detail(header)):
            return None
        match = self._header_re.match(header)
        found = PERIOD_EVENT.search(header)
        if match is None or match.end() > space + 1 or found is None or found.start() != colon:
            return None
        event, period = found.group(2), found.group(1)
        if period is not None and not is_period(period):
            return None  # the line path reports it
        if not self.options.per_event:
            if self.event_filter is None:
                self.event_filter = event
            if event != self.event_filter:
                return None  # skipped events take the line path: it alone tells frames from headers
        root = self.root_name(match)
        stacks = self.stacks_of(event if self.options.per_event else None, root)
        weight = int(period) if period and period != b"0" else 1
        return HeaderFacts(weight, stacks, self.frames.table(root.startswith(b"java")))

    def stacks_of(self, event: bytes | None, root: bytes) -> Stacks:
        stacks = self.stacks.get((event, root))
        if stacks is None:
            stacks = self.stacks[event, root] = {}
        return stacks

    # -- the line-by-line state machine ------------------------------------------------------
    def feed(self, lines: Iterable[bytes], path: str, first_line: int = 1) -> int:
        """Fold a whole input given as a file iterates it (lines with their b'\\n'); returns the
        number of lines read."""
        read = self.feed_lines((line[:-1] if line[-1:] == b"\n" else line for line in lines), path, first_line)
        self.end_input()
        return read

    def end_input(self) -> None:
        """The input ends: a record without a blank line after it ends too (the reference loses it)."""
        record = self._record
        if record.state == OPEN and not self.options.compat:
            self._close(record.counts, record.header, record.frames, record.period, record.bad, record.tail_junk)
        self._record = _Record.none()

    def drop_record(self) -> bool:
        """The input was cut short (its perf script killed): the record being read, if any, is not whole.
        It is dropped unfolded and uncounted in `diagnostics.records`; True if there was one."""
        record = self._record
        self._record = _Record.none()
        if record.state != OPEN:
            return False  # between records, or in one not folded anyway (counted as read: it was printed)
        self.diagnostics.records -= 1
        return True

    def feed_lines(self, lines: Iterable[bytes], path: str, first_line: int = 1) -> int:
        """Fold lines given without their line end, going on from where the last call stopped
        (`end_input` ends the input); returns the number of lines read."""
        opts = self.options
        compat = opts.compat
        diagnostics = self.diagnostics
        frame_names = self.frames
        header_re = self._header_re
        record = self._record
        java = record.java
        cache = frame_names.table(java)
        state = record.state
        header = record.header  # the sample header line of the record being read
        record_bad = record.bad  # a problem inside the record: it is not folded
        tail_junk = record.tail_junk  # an unindented line we cannot read ended the record's frames
        period = record.period
        counts = record.counts
        frames = record.frames
        append = frames.append
        number = first_line - 1
        above = b""  # the last frame line named: an inlined source line names it again

        for number, line in enumerate(lines, first_line):
            first = line[0] if line else 10
            if first == 9 or first == 32:  # "\t" or " ": a frame line, the hot path
                name = cache.get(line)
                if name is not None and state == OPEN and not tail_junk:
                    append(name)
                    above = line
                    continue
                if compat or not (self._is_indented_header(line) or is_non_sample(line)):
                    if not compat and is_detail(line):
                        # a source line, the instruction, the registers (-F +srcline, +insn, +uregs): not a
                        # frame; `  prog.c:8 (inlined)` says the frame above it (printed without DSO) is inlined
                        if frames and state == OPEN and is_inlined_srcline(line):
                            frames[-1] = frame_names.name_inlined(above, java, frames[-1])
                        continue
                    if state == FILTERED:
                        continue
                    if state == NONE:
                        if line.strip():
                            diagnostics.report(path, number, "orphan-frame", decode(line))
                        continue
                    if not compat and not line.strip():
                        first = 10  # a line of spaces ends the record like a blank one
                    else:
                        if tail_junk:  # frames after the unreadable line: the record is not whole
                            tail_junk, record_bad = False, True
                        name = frame_names.name(line, java)
                        if name is None:
                            diagnostics.report(path, number, "bad-frame-line", decode(line))
                            record_bad = not compat
                        elif name:
                            append(name)
                            above = line
                        continue
                else:
                    line = line.lstrip(b" \t")  # no -g: perf right-aligns the comm column

            if first == 10 or (first == 13 and line == b"\r" and not compat):  # the record ends
                if state == OPEN:
                    self._close(counts, header, frames, period, record_bad, tail_junk)
                frames.clear()
                state, tail_junk = NONE, False
                continue
            if first == 35 and (compat or not self._is_indented_header(line)):
                continue  # "#": perf's header comments; not a sample of a thread named "#..." (the reference drops it)

            if first == 124 and not compat and is_detail(line):
                continue  # "|": the source code of the sample (-F +srccode), after its record
            stripped = line.rstrip(b"\r") if not compat else line
            if not compat and is_non_sample(stripped):  # --show-*-events: a record, never a sample
                if state == OPEN:
                    self._close(counts, header, frames, period, record_bad, tail_junk)
                frames.clear()
                state, tail_junk, record_bad = FILTERED, False, False
                continue
            match = header_re.match(stripped)
            if match is None:
                if state == FILTERED or tail_junk:
                    continue
                # perf prints frames unindented in some layouts; the reference accepts them anywhere.
                name = None if state == NONE else frame_names.name(line, java)
                if name is None:
                    diagnostics.report(path, number, "bad-header", decode(line))
                    if state == NONE:
                        diagnostics.records += 1
                        diagnostics.skipped_records += 1
                        state = FILTERED  # swallow the frames of this unparseable record
                    elif not compat:
                        # Whole if nothing follows it but a blank line, a header or the end.
                        tail_junk = True
                elif name:
                    append(name)
                continue

            # A sample header: the previous record ends here when it had no blank line after it.
            if state == OPEN and not compat:
                self._close(counts, header, frames, period, record_bad, tail_junk)
                frames.clear()
            elif state == FILTERED:
                frames.clear()
            if not compat or state != OPEN:
                record_bad = False
            tail_junk = False
            diagnostics.records += 1
            if not compat and is_exited_task(match.group(1)):
                diagnostics.report(path, number, "exited-task", decode(line))
                diagnostics.skipped_records += 1
                frames.clear()
                state = FILTERED  # perf lost the task's name and ids: whose stack it is is unknown
                continue

            event, period_text, rest = self.event_of(stripped, match.end())
            if period_text is not None and not is_period(period_text):
                diagnostics.report(path, number, "bad-header", decode(line))
                diagnostics.skipped_records += 1
                frames.clear()
                state = FILTERED  # swallow its frames
                continue
            if event is not None:
                if self.event_filter is None and not opts.per_event:
                    self.event_filter = event
                if not opts.per_event and event != self.event_filter:
                    self.skipped_by_event[event] += 1
                    if state != OPEN or not compat:
                        state = FILTERED
                    continue
            # Without --per-event every kept record lands in one profile (key None), as in the reference.
            root = self.root_name(match)
            counts = self.stacks_of(event if opts.per_event else None, root)
            period = int(period_text) if period_text and period_text != b"0" else 1
            java = root.startswith(b"java")
            cache = frame_names.table(java)
            state = OPEN
            header = stripped
            if rest:  # sampled without -g: the one frame is on the header line
                name = name_frame(rest, opts, java)
                if name is None:
                    diagnostics.report(path, number, "bad-frame-line", decode(line))
                    record_bad = True
                elif name:
                    append(name)

        self._record = _Record(state, header, record_bad, tail_junk, period, java, counts, frames)
        return number - first_line + 1

    def _close(
        self, counts: Stacks, header: bytes, frames: list[bytes], period: int, bad: bool, tail_junk: bool
    ) -> None:
        """The record ends: add its stack, or count it skipped. An unreadable unindented line after
        its frames is a record of its own (counted, skipped); this one is whole and kept."""
        if bad:
            self.diagnostics.skipped_records += 1
        else:
            hook = self.options.sample_hook
            key = tuple(frames if hook is None or self.options.compat else hook(header, list(frames)))
            counts[key] = counts.get(key, 0) + period
        if tail_junk:
            self.diagnostics.records += 1
            self.diagnostics.skipped_records += 1

    def _is_indented_header(self, line: bytes) -> bool:
        """A sample header printed with leading spaces (perf right-aligns comm without -g)."""
        return is_header(line.strip())

    def is_frame_line(self, line: bytes) -> bool:
        """An indented, non-blank line that is not an indented header: the fast path may name it."""
        if line[:1] not in (b"\t", b" ") or not line.strip():
            return False
        return not (b": " in line and self._is_indented_header(line)) and not is_non_sample(line)

    # -- results -----------------------------------------------------------------------------
    @property
    def by_event(self) -> dict[bytes | None, dict[bytes, int]]:
        """Whole folded stacks (root first) per event (None: the kept one, without --per-event)."""
        result: dict[bytes | None, dict[bytes, int]] = {}
        for (event, root), stacks in self.stacks.items():
            counts = result.setdefault(event, {})
            for names, weight in stacks.items():
                key = root + b";" + b";".join(reversed(names)) if names else root
                counts[key] = counts.get(key, 0) + weight
        return result

    def merge(self, stacks: dict[tuple[bytes | None, bytes], Stacks], skipped_by_event: Counter[bytes]) -> None:
        """Add what another collapser folded (a --jobs worker's part of the same input)."""
        for where, counts in stacks.items():
            target = self.stacks.get(where)
            if target is None:
                self.stacks[where] = counts
                continue
            for stack, count in counts.items():
                target[stack] = target.get(stack, 0) + count
        self.skipped_by_event.update(skipped_by_event)

    def profile(self, event: bytes | None = None) -> FoldedProfile:
        """The folded profile: of `event` with --per-event, else the one the filter kept."""
        counts = self.by_event.get(event, {})
        name = event if self.options.per_event else self.event_filter
        return FoldedProfile(
            counts={decode(stack): count for stack, count in counts.items()},
            event=decode(name) if name is not None else None,
        )
