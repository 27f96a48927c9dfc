r"""The grammar of `perf script` text: what each line is, and the facts a record's first line holds.

Every reader of `perf script` text (fold and its fast path, off-CPU, `--window`, the timeline,
`convert`'s and `render`'s sniffing, the MXNet join) asks this module; none keeps a pattern of
its own. Lines perf 5.x-6.x prints, and what they are:

    java 24636/25607 [000] 4794564.109216:     250000 cpu-clock:      <- a sample header: comm (may hold
    V8 WorkerThread 25607 4794564.109216123: 1 cycles:u:                 blanks), pid/tid or one id,
    python 4242 123.456789: 1001001 cpu-clock:  7f12 f+0x3 (/x)          [cpu], time (--ns: 9 digits),
    prog 12440                                                           period, event (with modifiers),
    :-1    -1 [001] 10.000001: 250000 cpu-clock:                         and, without -g, the one frame;
                                                                         any of them may be left out (-F);
                                                                         `:-1 -1`: a task that exited
    \t    7f0c1a2b3c4d std::_Function_handler<...>::_M_invoke+0x1d (/lib/libmxnet.so)   <- a frame
    \t           162bd init_cpu_features.constprop.0       <- a frame printed without its DSO (-F ip,sym)
      dl-cacheinfo.h:831                    <- -F +srcline: the source line of the frame above it
      [kernel.kallsyms][ffffffff8135e61a]      (or its DSO and offset when perf has no line; with
      /usr/src/prog.c:12                        --full-source-path the whole path)
    \t    1565 apply+0x25                    <- an inlined frame: printed without its DSO, and
      prog.c:8 (inlined)                        its source line says so (plain: `(inlined)` is the DSO)
     ABI:2    AX:0x25bc5    BX:0x7ffc...    <- -F +uregs/+iregs: the registers, after the frames
     ilen: 3 insn: c1 e8 0e                 <- -F +insn,+insnlen: detail of the sample, not a frame
    |6        for (int i = 0; i < n; i++)     <- -F +srccode: the source at the sample, after its record
    prog 12440 10.687535: PERF_RECORD_COMM exec: prog:12440/12440    <- --show-*-events: a record of
    PERF_RECORD_FINISHED_ROUND                                          its own, never a sample
    # ========                              <- --header: perf's comments

Patterns here are linear: no nested quantifiers, and every `\s+` may start only where a blank run
starts (`(?<=\S)`) and never gives back what it took (a test holds each equal to the plain pattern
it replaces, and times them on megabyte lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

# -- sample headers -----------------------------------------------------------------------------
# stackcollapse-perf.pl's patterns, made linear (its `(\d+)*` is `(\d++)?`): fold's --compat accepts
# what it accepts. The reference needs a comm of two characters or more; HEADER_OURS takes one.
HEADER = re.compile(rb"^(\S.+?)(?:(?<=\S)|(?<=^.\s))\s++(\d++)/*+(\d++)?\s++")
# A comm may hold a blank and a number ("GC Thread 2", "job 12 3"): the ids are the last ones before the
# cpu or the time, so a candidate followed by later ids that are is part of the comm. The look ahead stops at
# the first time field (a tracepoint's payload after it, `prev_comm=a 7 1.5:`, is no ids) and after 64
# characters (a comm is 16): linear on any line, where an unbounded one was quadratic (141 s on 256 KB).
HEADER_OURS = re.compile(
    rb"^(\S.*?)(?<=\S)\s++(\d++)/*+(\d++)?\s++"
    rb"(?!(?:(?:(?!\d+\.\d+:).){0,64}?\s)?\d++/*+\d*+\s++(?:\[\d+\]\s|\d+\.\d+:))"
)
PERIOD_EVENT = re.compile(rb":(?:\s*+(\d++)\s|\s)\s*+(\S+):\s*+$")
# "<seconds>.<fraction>: [<period>] <event>: <rest>": rest is the frame of a sample recorded without
# -g, a tracepoint's fields, or nothing. Tried where PERIOD_EVENT finds no event at the line's end.
TIMED_EVENT = re.compile(rb"\s(\d+)\.(\d+):\s+(?:(\d+)\s+)?(\S+?):(?=\s|$)\s*(.*)$")
FRAME_ON_HEADER = re.compile(rb"^\s*([0-9a-fA-F]+)\s+(.+?)\s*$")
# -F comm,tid,period,...: no time nor event, the period alone after the ids (and cpu), where
# HEADER_OURS ended: "prog 12440     250000 ".
PERIOD_ONLY = re.compile(rb"(?:\[\d+\]\s++)?(\d++)\s*+$")
# A header of any layout with an id and a time (sniffing: is this perf script text?).
ANY_HEADER = re.compile(rb"^\S.*?(?<=\S)\s++-?\d+(?:/-?\d+)?\s++(?:\[\d+\]\s++)?\d+\.\d+:\s")
# The first "<seconds>.<fraction>:" of an unindented line: the record's time (`--window`).
RECORD_TIME = re.compile(rb"^\S.*?\s(\d+\.\d+):(?:\s|$)")
# tid (or pid/tid) and time, wherever the header starts (-F tid,time has no comm: "  14964  459.67:").
THREAD_TIME = re.compile(rb"(?:^|\s)(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?(\d+\.\d+):")
# Off-CPU's header: comm, id(s), [cpu], time, then the event and its fields or a PERF_RECORD_* body.
# Numbers have the digits perf can print (ids: 10, seconds: 12): a longer one is damage.
SCHED_HEADER = re.compile(
    rb"^\s*+(\S.*?)(?<=\S)\s++(\d{1,10})(?:/(\d{1,10}))?\s++(?:\[\d+\]\s++)?(\d{1,12})\.(\d+):\s*+(\S(?:.*\S)?|)\s*+$"
)
EXITED_COMM = b":-1"  # perf's comm for a sample whose task had exited when perf script read it
# Off-CPU's header of such a record: no ids, but a time and a record (all-CPU recordings: offcpu --wakers).
EXITED_SCHED_HEADER = re.compile(
    rb"^\s*+:-1\s++-1(?:/-1)?\s++(?:\[\d+\]\s++)?(\d{1,12})\.(\d+):\s*+(\S(?:.*\S)?|)\s*+$"
)

MAX_PERIOD = 2**64 - 1  # perf's period is a u64; a longer number is damage (and int() stops at 4300 digits)


def is_period(text: bytes) -> bool:
    return len(text) <= 20 and int(text) <= MAX_PERIOD


class Header(NamedTuple):
    """The facts of a sample header line, as printed (bytes); None where -F left the field out."""

    comm: bytes
    pid: bytes | None  # None: perf printed one id, the thread's
    tid: bytes
    seconds: bytes | None  # the time, "<seconds>.<fraction>"
    fraction: bytes | None
    period: bytes | None
    event: bytes | None
    rest: bytes  # after the event: the frame of a sample recorded without -g, a tracepoint's fields

    @property
    def time_ns(self) -> int | None:
        if self.seconds is None or self.fraction is None:
            return None
        return time_ns(self.seconds, self.fraction)


def time_ns(seconds: bytes, fraction: bytes) -> int:
    """'680', '060804' -> 680060804000: exact integer nanoseconds, for µs and ns timestamps alike."""
    return int(seconds) * 1_000_000_000 + int(fraction[:9].ljust(9, b"0"))


def read_header(line: bytes) -> Header | None:
    """The facts of a sample header (leading blanks allowed: perf right-aligns comm without -g),
    or None for a line that is none: a frame, a non-sample record, a comment, damage."""
    stripped = line.lstrip()
    ids = HEADER_OURS.match(stripped)
    if ids is None or is_non_sample(stripped):
        return None
    comm, first, second = ids.group(1), ids.group(2), ids.group(3)
    pid, tid = (first, second) if second and second != b"0" else (None, first)
    timed = TIMED_EVENT.search(stripped)
    if timed is None:
        found = PERIOD_EVENT.search(stripped)
        event, period = (found.group(2), found.group(1)) if found is not None else (None, None)
        alone = PERIOD_ONLY.match(stripped, ids.end()) if found is None else None
        return Header(comm, pid, tid, None, None, alone.group(1) if alone else period, event, b"")
    seconds, fraction, period, event, rest = timed.groups()
    return Header(comm, pid, tid, seconds, fraction, period, event, rest.rstrip())


def starts_sample(line: bytes, following: bytes) -> bool:
    """`line` (then `following`) is a sample header as fold reads it, in any layout, and no folded stack:
    one with its time or event (`prog 12440 10.5: cpu-clock: `), or any header a frame line follows
    (`-F comm,tid,ip,sym`: `tmpl 7360 ` then `\\t  2ca0 main`; without it `prog 12440 250000` is also
    the folded stack `prog 12440` of weight 250000). Sniffing asks this, so that `convert`, `render`
    and `fold` take for `perf script` text whatever fold reads as such."""
    if ANY_HEADER.match(line.lstrip()) is not None:
        return True
    header = read_header(line)
    return header is not None and (header.event is not None or FRAME_LINE.match(following) is not None)


def weighs_by_period(lines: list[bytes]) -> bool:
    """Whether the sample headers among these (first) lines print a period above 1: a fold then weighs
    each sample by it, as stackcollapse-perf.pl does, and the weights are periods, not samples. (Any
    header: perf's first periods in -F mode may be 1.)"""
    for line, following in zip(lines, [*lines[1:], b""], strict=False):
        if line[:1] != b"#" and not is_non_sample(line) and starts_sample(line, following):
            header = read_header(line)
            if header is not None and header.period is not None and is_period(header.period) and int(header.period) > 1:
                return True
    return False


def is_header(stripped: bytes) -> bool:
    """A timed sample header, its leading blanks stripped (an indented line that is no frame)."""
    return HEADER_OURS.match(stripped) is not None and (
        PERIOD_EVENT.search(stripped) is not None or TIMED_EVENT.search(stripped) is not None
    )


def is_exited_task(text: bytes) -> bool:
    """A record's text from its comm on (a HEADER match's group 1, or a whole line, its blanks stripped)
    that is `:-1    -1 [001] ...`: a task perf could not name (it exited before perf script read it);
    `-1` is no id, so no sample header reads it."""
    return text.startswith(EXITED_COMM + b" ") or text == EXITED_COMM


# -- records that are not samples (--show-task-events, --show-mmap-events, ...) -------------------
NON_SAMPLE = b"PERF_RECORD_"
# What may stand before PERF_RECORD_ on its line: an id, pid/tid, [cpu], or a time (with its colon).
_BEFORE_RECORD = re.compile(rb"-?\d+(?:/-?\d+)?|\[\d+\]|\d+\.\d+:")


def non_sample_kind(line: bytes) -> bytes | None:
    """b'COMM', b'MMAP2', b'FORK', b'SWITCH', b'LOST', b'THROTTLE', b'FINISHED_ROUND', ... for a line
    perf prints for a record that is not a sample; None for any other line. Such a record names its
    task and time as a sample header does, then `PERF_RECORD_<KIND>` where a sample has its event."""
    at = line.find(NON_SAMPLE)
    if at < 0:
        return None
    before = line[:at].split()
    if before and (line[at - 1 : at] not in (b" ", b"\t") or _BEFORE_RECORD.fullmatch(before[-1]) is None):
        return None
    end = at + len(NON_SAMPLE)
    while end < len(line) and (line[end] in _KIND_BYTES):
        end += 1
    return line[at + len(NON_SAMPLE) : end] or None


_KIND_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def is_non_sample(line: bytes) -> bool:
    return NON_SAMPLE in line and non_sample_kind(line) is not None


# The bodies of the non-sample records off-CPU pairs (after the time).
SWITCH_FIELDS = re.compile(
    rb"prev_comm=(.*?) prev_pid=(-?\d{1,10}) prev_prio=-?\d+ prev_state=(\S*) ==> "
    rb"next_comm=(.*?) next_pid=(-?\d{1,10}) next_prio=-?\d+(.*)$"
)
SWITCH_RECORD = re.compile(rb"^PERF_RECORD_SWITCH(?:_CPU_WIDE)?\s+(IN|OUT)\b")
SWITCH_ANYWHERE = re.compile(rb"PERF_RECORD_SWITCH(?:_CPU_WIDE)? (IN|OUT)")
# FORK(pid:tid):(ppid:ptid): the parent, for the process tree of offcpu --wakers
TASK_RECORD = re.compile(rb"^PERF_RECORD_(FORK|EXIT)\((-?\d{1,10}):(-?\d{1,10})\)(?::\((-?\d{1,10}):)?")
LOST_RECORD = re.compile(rb"^PERF_RECORD_LOST(?:_SAMPLES)?\b.*?(?<!\d)(\d{1,20})\s*$")
COMM_RECORD = re.compile(rb"^PERF_RECORD_COMM(?: exec)?: (.*):(-?\d{1,10})/(-?\d{1,10})$")


# -- lines inside a sample record -----------------------------------------------------------------
_HEX_WORD = re.compile(rb"[0-9a-fA-F]+[ \t]")
_INSN = re.compile(rb" (?:ilen|insn): ")
_SRCCODE = re.compile(rb"\|\d+(?:\s|$)")
_REGISTERS = re.compile(rb" ABI:\d+ ")  # -F +uregs, +iregs: ' ABI:2    AX:0x25bc5    BX:0x7ffc... '
INLINED = b" (inlined)"  # how perf marks an inlined frame: its DSO, or (-F +srcline) its source line's end


def is_srcline(line: bytes) -> bool:
    """`  file.c:305`, `  [kernel.kallsyms][ffffffff8135e61a]`, `  libc.so.6[27b25]`, `  file.c:8 (inlined)`:
    the line perf prints after a frame with -F +srcline (two blanks, then text that is no '<addr> <symbol>').
    An inlined frame's ends with ' (inlined)' (then the frame above it has no DSO)."""
    if line[:2] != b"  " or line[2:3] in (b" ", b"\t", b"") or _HEX_WORD.match(line, 2) is not None:
        return False
    body = line.rstrip()
    if body.endswith(INLINED):
        body = body[: -len(INLINED)]
    # Not '  [unknown] ([unknown])' (a frame, damaged) nor '  prog 1 1.0: cpu-clock:' (a header, right-aligned)
    return not (body.endswith(b")") and b" (" in body) and b": " not in body and bool(body.strip())


def is_inlined_srcline(line: bytes) -> bool:
    """The source line of an inlined frame (`  prog.c:8 (inlined)`): the frame above it is inlined."""
    return line.rstrip().endswith(INLINED) and is_srcline(line)


def as_inlined(frame: bytes) -> bytes:
    """A frame line perf printed without its DSO because its source line says it is inlined (-F +srcline),
    as plain `perf script` prints it: `(inlined)` as its DSO. A line that has one is returned as it is."""
    body = frame.rstrip()
    return body if dso_opening(body) >= 0 else body + INLINED


def srcline_suffix(line: bytes) -> bytes:
    """What stackcollapse-perf.pl --srcline appends of a source line: `[...]` groups removed, blanks
    trimmed ('libc.so.6[27b25]' -> 'libc.so.6', '[kernel.kallsyms][ffff]' -> '')."""
    kept = []
    at = 0
    while (opening := line.find(b"[", at)) >= 0:
        # Perl's `\[.*?\]` from each '[' to the first ']' after it (one line: `.` never meets a newline),
        # found once: the regex rescans the rest of the line from every '[' that has no ']' after it.
        closing = line.find(b"]", opening + 1)
        if closing < 0:
            break
        kept.append(line[at:opening])
        at = closing + 1
    kept.append(line[at:])
    return b"".join(kept).strip()


def is_detail(line: bytes) -> bool:
    """A line perf prints with a sample that is no frame: a source line, the sampled instruction
    (-F +insn), the registers (-F +uregs, +iregs), or the source code at it (-F +srccode:
    '|42       s += step(i);', after the record)."""
    if line[:1] == b"|":
        found = _SRCCODE.match(line) is not None
    else:
        found = is_srcline(line) or _INSN.match(line) is not None or _REGISTERS.match(line) is not None
    return found and not is_header(line.strip())  # a header of a thread named so is a header


_HEX_LEAD = re.compile(rb"[0-9a-fA-F]+(\s+)")


def is_header_frame(rest: bytes) -> bool:
    """'7f12 PyEval_Eval+0x3 (/usr/bin/python3)': an address, blanks, a name, ' (', ..., ')' at the end.
    What `^[0-9a-fA-F]+\\s+.+ \\(.*\\)$` matches, found in linear time (that regex backtracks
    quadratically on a long line of ' (' with no ')' at its end)."""
    lead = _HEX_LEAD.match(rest)
    if lead is None:
        return False
    end = len(rest) - rest.endswith(b"\n")  # `$` also matches before a final newline
    # '.+' starts after at least one blank, within the blanks or where they end, past any newline
    start = max(lead.start(1) + 1, rest.rfind(b"\n", 0, end) + 1)
    if start > lead.end(1) or rest[end - 1 : end] != b")":
        return False
    opening = rest.find(b" (", start + 1)
    return opening != -1 and opening + 2 < end


def dso_opening(body: bytes) -> int:
    """Where the DSO of a frame line (its trailing blanks stripped) opens: the index of the '(' of the
    balanced group that ends the line, after a blank ('7f0a f+0x1 (/lib/x.so (deleted))'), as perf
    prints it with -F dso; -1 when the line ends otherwise: perf printed no DSO (-F ip,sym), and the
    parentheses are the symbol's ('2ca0 std::_Function_handler<double (double), F>::_M_invoke',
    '2ca0 {lambda()#1}::operator()'). A symbol printed without DSO that itself ends in ' (...)' reads
    as one with a DSO: one line cannot tell them apart."""
    if body[-1:] != b")":
        return -1
    last = body.rfind(b" (")
    if last >= 0 and body.find(b"(", last + 2, -1) < 0 and body.find(b")", last + 2, -1) < 0:
        return last + 1  # the usual line: no parenthesis inside the DSO
    depth = 0
    for at in range(len(body) - 1, -1, -1):
        byte = body[at]
        if byte == 0x29:
            depth += 1
        elif byte == 0x28:
            depth -= 1
            if depth == 0:
                return at if at and body[at - 1] == 0x20 else -1
    return -1


# A frame line without its DSO (-F ip,sym): '<addr> <symbol>'. The symbol runs to the line's end.
FRAME_WITHOUT_DSO = re.compile(rb"^\s*+([0-9a-fA-F]++)[ \t]++(\S(?:.*\S)?)\s*+$")
# Sniffing: an indented '<addr> <something>'.
FRAME_LINE = re.compile(rb"^\s+[0-9a-fA-F]+\s+\S")

# The reference's pattern, verbatim. Not run on input: backtracking its `(\w+)` against `(.+) \(`
# is quadratic (a 64 KB frame line of one word took over a minute); `match_reference` gives the
# same groups in linear time, and a test holds the two equal.
FRAME_REFERENCE = re.compile(rb"^\s*(\w+)\s*(.+) \((.*)\)")
_SPACES = re.compile(rb"\s*")
_WORD = re.compile(rb"\w*")


def match_reference(text: bytes) -> tuple[bytes, bytes, bytes] | None:
    """FRAME_REFERENCE.match(text).groups(), or None, in linear time.

    The regex tries where `(.+)` starts from the right (the end of the blanks after the first word,
    then back into the word) and takes the first start with a " (" after it and a ")" after that:
    the " (" it then picks is the last one before the last ")" of the line, whatever the start. So
    the start is that " (" minus one, or the end of the blanks if that comes first. `.` stops at a
    newline: everything after the word's blanks lies in one line (never an issue for real lines)."""
    word = _run_end(_SPACES, text, 0)
    word_end = _run_end(_WORD, text, word)
    if word_end == word:
        return None
    blanks_end = _run_end(_SPACES, text, word_end)
    newline = text.rfind(b"\n", word_end, blanks_end)
    first = newline + 1 if newline >= 0 else word + 1  # the first place `(.+)` may start
    line_end = text.find(b"\n", first)
    close = text.rfind(b")", first, len(text) if line_end < 0 else line_end)
    opening = text.rfind(b" (", first + 1, close) if close >= 0 else -1
    if opening < 0:
        return None
    start = min(blanks_end, opening - 1)
    return text[word : min(start, word_end)], text[start:opening], text[opening + 2 : close]


def _run_end(run: re.Pattern[bytes], text: bytes, start: int) -> int:
    found = run.match(text, start)  # `\s*` and `\w*` always match
    return found.end() if found else start


def join_srclines(lines: Iterable[bytes], compat: bool) -> Iterator[bytes]:
    """Lines with each frame's source line joined to it ('<frame>\\n<srcline>'), for `fold --srcline`.

    As stackcollapse-perf.pl --srcline reads them (--compat): the line after a frame is its source
    line, whatever it is, except after a frame perf could not place at all ('[unknown] ([unknown])')
    and after a '(...)' name the reference drops. Without --compat only a line shaped as a source
    line is taken (`is_srcline`), so a frame perf printed none for keeps the frame after it, and a frame
    without DSO is joined too (an inlined one is named as plain perf script's `(inlined)` line)."""
    frame = b""
    for line in lines:
        if frame:
            if not compat and is_inlined_srcline(line):
                # `\t 1565 apply+0x25` then `  prog.c:8 (inlined)`: the frame as plain perf script prints it
                # ('(inlined)' its DSO: named `apply_[i]`), with its source line
                yield as_inlined(frame) + b"\n" + line.rstrip()[: -len(INLINED)]
                frame = b""
                continue
            if compat or is_srcline(line):
                yield frame + b"\n" + line
                frame = b""
                continue
            yield frame
            frame = b""
        if line[:1] in (b"\t", b" ") and not line.rstrip().endswith(b"[unknown] ([unknown])"):
            parts = match_reference(line) if HEADER.match(line) is None else None
            if parts is not None and not parts[1].startswith(b"(") or (
                not compat and parts is None and line[:1] == b"\t" and FRAME_WITHOUT_DSO.match(line)
            ):
                frame = line  # (without --compat a frame without DSO too: an inlined one, or -F ip,sym,srcline)
                continue
        yield line
    if frame:
        yield frame


def missing_fields(lines: Iterable[bytes]) -> list[str]:
    """The `perf script -F` fields a fold needs that the text lacks, told from its first records:
    'comm' or 'tid' (a header without them names no thread), 'ip' (no frame lines) and 'sym' (frames
    that are bare addresses). [] when every field is there, or the text is no perf script output."""
    headers: list[bytes] = []
    named = frames = bare = 0
    for line in lines:
        if not line.strip() or line[:1] == b"#" or is_non_sample(line) or line[:1] == b"|" and is_detail(line):
            continue
        if line[:1] in (b"\t", b" ") and not is_header(line.strip()) and not _ID_TIME.match(line) and not (
            _ID_ALONE.match(line)
        ):
            if FRAME_LINE.match(line) or _BARE_ADDRESS.match(line):
                frames += 1
                bare += _BARE_ADDRESS.match(line) is not None
            if FRAME_LINE.match(line) or _BARE_ADDRESS.match(line) or is_detail(line):
                continue  # else a header printed right-aligned (perf does without -g)
        headers.append(line)
        header = read_header(line)
        named += header is not None
        frames += header is not None and is_header_frame(header.rest)  # recorded without -g
    missing = []
    first = headers[0].lstrip() if headers else b""
    if frames and not headers or _LEADING_TIME.match(first):
        missing += ["comm", "tid"]  # -F ip,sym prints a blank line where the header would be
    elif headers and not named:
        missing.append("comm" if _LEADING_ID.match(first) else "tid")
    if headers and not frames:
        missing.append("ip")
    elif frames and bare == frames:
        missing.append("sym")
    return missing


_BARE_ADDRESS = re.compile(rb"\s*+[0-9a-fA-F]++\s*+$")
_LEADING_ID = re.compile(rb"-?\d+(?:/\d+)?\s")
_LEADING_TIME = re.compile(rb"\d+\.\d+:")
_ID_ALONE = re.compile(rb" ++-?\d{1,7}+(?:/-?\d{1,7}+)? $")  # -F tid,ip,sym: ' 3544 ' (perf's '%5d '), no frame
_ID_TIME = re.compile(rb"\s*+-?\d++(?:/\d++)?\s++(?:\[\d+\]\s++)?\d++\.\d++:")  # -F tid,time: right-aligned
