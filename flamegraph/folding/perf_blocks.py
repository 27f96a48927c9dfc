"""The fast path of the perf folder: whole records at a time, frame lookups done in C.

A block of `perf script` text is cut at its last blank line and split into records. A record in
the usual shape costs a few bytes methods on its header (the timestamp cut out, the rest looked up
in the collapser's header cache), one `map(dict.get)` over its frame lines and one join. Every
other record (first sight of a header shape, comments, malformed lines, other events, --compat
quirks) goes through `PerfCollapser.feed_lines`, the line-by-line state machine, so that results
and diagnostics are identical either way.

    perf 4242 [001] 100.000001:     1001001 cpu-clock:      <- header
    \t    7f00a1 compute+0x11 (/usr/lib/libfoo.so)          <- frames, leaf first
    \t    4011 main+0x21 (/usr/bin/python3)
                                                            <- blank line ends the record
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import filterfalse
from typing import IO

from ..io.folded import MAX_LINE, too_long
from .grammar import NON_SAMPLE, is_detail, is_inlined_srcline
from .perf import HeaderFacts, Names, PerfCollapser

# Small blocks pay: memory freed by one block's records is reused by the next (a cold process
# spends more on page faults with 4 MiB blocks than with 256 KiB ones), and the pipe from perf
# script is drained while perf goes on writing.
BLOCK = 256 << 10
MAX_CARRY = 32 << 20
# A record whose frame lines are not all named yet: (header, frame lines, its facts, the next record's line)
Waiting = tuple[bytes, list[bytes], HeaderFacts, int]


def iter_blocks(stream: IO[bytes], limit: int | None = None, size: int = BLOCK) -> Iterator[bytes]:
    """Raw blocks of a stream (at most `limit` bytes in all)."""
    remaining = limit
    read = stream.read
    while remaining is None or remaining > 0:
        block = read(size if remaining is None else min(size, remaining))
        if not block:
            return
        if remaining is not None:
            remaining -= len(block)
        yield block


def iter_lines(
    blocks: Iterable[bytes], progress: Callable[[int], None] | None = None, path: str = "<input>"
) -> Iterator[bytes]:
    """The lines of a stream given as raw blocks, without their line ends (`progress` as below)."""
    carry = b""
    done = 0
    number = 0  # lines so far
    for block in blocks:
        done += len(block)
        lines = (carry + block if carry else block).split(b"\n")
        carry = lines.pop()
        number += len(lines)
        if len(carry) > MAX_LINE:  # no line end at all (/dev/zero)
            raise too_long(path, number + 1)
        yield from lines
        if progress is not None:
            progress(done)
    if carry:
        yield carry


def fold_blocks(
    collapser: PerfCollapser,
    blocks: Iterable[bytes],
    path: str,
    first_line: int = 1,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Fold a stream given as raw blocks; returns the number of lines read.

    `progress`, if given, is called with the number of bytes folded so far after each block."""
    line = first_line
    carry = b""
    done = 0
    pending = False  # the state machine is inside a record: the next one is its to finish
    for block in blocks:
        done += len(block)
        data = carry + block if carry else block
        cut = data.rfind(b"\n\n")
        if cut < 0:
            carry = data
            end = carry.rfind(b"\n") if len(carry) > MAX_CARRY else -1
            if end >= 0:  # no blank line for long (CRLF, garbage): the state machine reads on
                line += collapser.feed_lines(carry[:end].split(b"\n"), path, line)
                carry, pending = carry[end + 1 :], True
            elif len(carry) > MAX_LINE:  # no line end at all (/dev/zero): no text of perf's
                raise too_long(path, line)
            continue
        carry = data[cut + 2 :]
        line = _fold_records(collapser, data[:cut], path, line, pending)
        pending = False
        if progress is not None:
            progress(done)
    if carry:  # the tail: no blank line after it
        lines = carry.split(b"\n")
        if not lines[-1]:
            lines.pop()  # the line end of the last line, not a blank line
        line += collapser.feed_lines(lines, path, line)
    collapser.end_input()
    return line - first_line


def _fold_records(collapser: PerfCollapser, text: bytes, path: str, line: int, pending: bool = False) -> int:
    """Fold complete records (text holds records joined by blank lines); returns the next line.

    `pending`: the first record goes on with one the state machine has begun.

    A usual record whose frame lines are all known is added at once. One with new lines waits, so
    that the new lines of many records are named in one batch (`FrameNames.name_all`); the waiting
    ones are added before any record the state machine reads, so problems come in line order. With
    a hook (called per sample, or per distinct frame) every record is done in order."""
    headers = collapser.headers
    facts_of = collapser.header_facts
    options = collapser.options
    hook = options.sample_hook if not options.compat else None
    waits = hook is None and options.frame_hook is None
    waiting: list[Waiting] = []
    new: list[bytes] = []  # the frame lines of the waiting records their tables miss (repeats kept)
    records = text.split(b"\n\n")
    slow = 0  # records the state machine read (it counts them itself)
    for index, record in enumerate(records):
        lines = record.split(b"\n")
        # Lines counted from the split, not with text.count(b"\n"): that was a pass over all the text.
        line += len(lines) + 1  # its lines and the blank one after it
        header = lines[0]
        stamped, sep, rest = header.partition(b": ")
        before, blank, _ = stamped.rpartition(b" ")  # the timestamp is the last word before ': '
        facts = headers.get((before, rest), False) if blank and sep else None
        if facts is False:
            facts = facts_of(header, len(before), len(stamped))
        if facts is not None and not (pending and index == 0):
            weight, stacks, table = facts  # type: ignore[misc]
            del lines[0]
            names = tuple(map(table.get, lines))
            if None in names:
                if waits:
                    waiting.append((header, lines, facts, line))  # type: ignore[arg-type]
                    new += filterfalse(table.__contains__, lines)  # in C: no Python step per known line
                    continue
                names = _resolve(collapser, lines, table)  # type: ignore[assignment]
                if names is None:
                    lines.insert(0, header)
            if names is not None:
                if hook is not None:
                    names = tuple(hook(header, list(names)))
                stacks[names] = stacks.get(names, 0) + weight
                continue
        if waiting:
            slow += _add_waiting(collapser, waiting, new, path)
        lines.append(b"")
        collapser.feed_lines(lines, path, line - len(lines))
        slow += 1
    if waiting:
        slow += _add_waiting(collapser, waiting, new, path)
    collapser.diagnostics.records += len(records) - slow
    return line


def _add_waiting(collapser: PerfCollapser, waiting: list[Waiting], new: list[bytes], path: str) -> int:
    """Name the new frame lines of the waiting records in one batch, then add the records in order;
    returns how many the state machine read (a line that is not a frame, or folds to nothing)."""
    frames = collapser.frames
    # Only tab-indented lines that cannot be a header nor a non-sample record (nor a detail line:
    # those begin with blanks or '|'); anything else is left to _resolve's checks. Checked over the
    # joined batch first: on CPython 3.11 `sub in line` costs ~2 k instructions (bytes.__contains__
    # formats a TypeError for a non-int before it searches), 10 % of a system-wide fold one line at a time.
    distinct = list(dict.fromkeys(new))
    new.clear()
    text = b"\n" + b"\n".join(distinct)  # lines hold no b'\n' (split on it)
    joined: bytes | None = None
    if text.count(b"\n\t") == len(distinct) and not _unusual(text):
        usual, joined = distinct, text  # every line tab-indented, none with ': ' or a non-sample record's mark
    else:
        usual = [line for line in distinct if line[:1] == b"\t" and not _unusual(line)]
    tables = {id(facts.frames): facts.frames for _, _, facts, _ in waiting}
    if len(tables) == 1:
        frames.name_all(usual, next(iter(tables.values())) is frames.java, joined)
    else:  # Java and other processes in one block: a line is named by each table that misses it
        for table in tables.values():
            frames.name_all([line for line in usual if line not in table], table is frames.java)
    slow = 0
    for header, lines, (weight, stacks, table), line in waiting:
        names = tuple(map(table.get, lines))
        if None in names:
            names = _resolve(collapser, lines, table)  # type: ignore[assignment]
        if names is None:
            lines.insert(0, header)
            lines.append(b"")
            collapser.feed_lines(lines, path, line - len(lines))
            slow += 1
        else:
            stacks[names] = stacks.get(names, 0) + weight  # type: ignore[index,arg-type]
    waiting.clear()
    return slow


def _unusual(text: bytes) -> bool:
    """': ' (a header's) or a non-sample record's mark in text (find: no `in`, see _add_waiting)."""
    return text.find(b": ") >= 0 or text.find(NON_SAMPLE) >= 0


def _resolve(collapser: PerfCollapser, lines: list[bytes], table: dict[bytes, bytes]) -> Names | None:
    """Name the frame lines the table missed; None when the record needs the line-by-line path
    (a line that is not a frame, or a frame that folds to nothing)."""
    frames = collapser.frames
    java = table is frames.java
    details = False
    for line in [line for line in lines if line not in table]:
        if is_detail(line) and not collapser.options.compat:
            details = True  # a source line or the instruction (-F +srcline, +insn): not a frame
        elif not collapser.is_frame_line(line) or not frames.name(line, java):
            return None
    if details:
        names: list[bytes] = []
        for above, line in zip([b"", *lines], lines, strict=False):  # each line and the one above it
            if line in table:
                names.append(table[line])
            elif names and is_inlined_srcline(line):  # `  prog.c:8 (inlined)`: the frame above it is
                names[-1] = frames.name_inlined(above, java, names[-1])
        return tuple(names)
    return tuple(map(table.__getitem__, lines))
