"""The fast path of the perf folder: whole records at a time, frame lookups done in C.

A block of `perf script` text is cut at its last blank line and split into records. A record
in the usual shape (a header line, then indented frame lines that are all in the cache) costs
one header parse, one `map(dict.get)` over its frames and one join. Every other record (first
sight of a frame, comments, malformed lines, --compat quirks) goes through `PerfCollapser.feed`,
the line-by-line state machine, so behaviour and diagnostics are identical either way.

    perf 4242 [001] 100.000001:     1001001 cpu-clock:      <- header
    \t    7f00a1 compute+0x11 (/usr/lib/libfoo.so)          <- frames, leaf first
    \t    4011 main+0x21 (/usr/bin/python3)
                                                            <- blank line ends the record
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import IO

from .perf import HEADER, HEADER_OURS, PERIOD_EVENT, PerfCollapser

BLOCK = 4 << 20


def iter_blocks(stream: IO[bytes], limit: int | None = None) -> Iterator[bytes]:
    """Raw blocks of a stream (at most `limit` bytes in all)."""
    remaining = limit
    while remaining is None or remaining > 0:
        block = stream.read(BLOCK if remaining is None else min(BLOCK, remaining))
        if not block:
            return
        if remaining is not None:
            remaining -= len(block)
        yield block


def fold_blocks(collapser: PerfCollapser, blocks: Iterable[bytes], path: str, first_line: int = 1) -> int:
    """Fold a stream given as raw blocks; returns the number of lines read."""
    line = first_line
    carry = b""
    for block in blocks:
        data = carry + block if carry else block
        cut = data.rfind(b"\n\n")
        if cut < 0:
            carry = data
            continue
        carry = data[cut + 2 :]
        line = _fold_records(collapser, data[:cut], path, line)
    if carry:  # the tail: no blank line after it; feed() applies the end-of-input rules
        line += collapser.feed(carry.splitlines(keepends=True), path, line)
    return line - first_line


# The usual header in one match: "comm pid[/tid] [cpu] sec.usec: [period] event:". Where it
# matches, it splits comm/pid/tid/period/event exactly as HEADER + PERIOD_EVENT do, provided the
# comm holds no blank (then a shorter comm could satisfy HEADER alone); other headers take the
# general route.
USUAL_HEADER = re.compile(rb"^(\S.*?)\s+(\d+)/*(\d+)*\s+(?:\[\d+\]\s+)?\d+\.\d+:\s*(\d+)*\s+(\S+):\s*$")
USUAL_HEADER_COMPAT = re.compile(rb"^(\S.+?)\s+(\d+)/*(\d+)*\s+(?:\[\d+\]\s+)?\d+\.\d+:\s*(\d+)*\s+(\S+):\s*$")


def _fold_records(collapser: PerfCollapser, text: bytes, path: str, line: int) -> int:
    """Fold complete records (text holds records joined by blank lines); returns the next line."""
    options = collapser.options
    compat = options.compat
    header_re = HEADER if compat else HEADER_OURS
    usual = (USUAL_HEADER_COMPAT if compat else USUAL_HEADER).match
    per_event = options.per_event
    sample_hook = options.sample_hook if not compat else None
    cache = collapser._block_frames
    java_cache = collapser._block_java_frames
    roots = collapser._roots
    by_event = collapser.by_event
    event_of = collapser._event
    period_event = PERIOD_EVENT.search
    kept: dict[bytes | None, int] = {}  # records folded per profile key, added to the totals at the end
    seen = 0
    periods: dict[bytes | None, int] = {None: 1, b"0": 1}  # period text -> weight (the reference's 0 -> 1)
    counts: dict[bytes, int] | None = None  # the profile being added to (one, without --per-event)
    for record in text.split(b"\n\n"):
        lines = record.split(b"\n")
        size = len(lines) + 1  # its lines and the blank one after it
        header = lines[0]
        match = usual(header)
        if match is not None:
            comm, _, _, period_text, event = match.groups()
            if b" " in comm or b"\t" in comm:
                match = None
        if match is None:
            match = header_re.match(header) if header[:1] not in (b"\t", b" ", b"#", b"") else None
            if match is None:
                line += collapser.feed([x + b"\n" for x in lines] + [b"\n"], path, line)
                continue
            found = period_event(header)
            if found is not None:
                period_text, event = found.groups()
            else:
                event, period_text, rest = event_of(header)
                if rest:
                    line += collapser.feed([x + b"\n" for x in lines] + [b"\n"], path, line)
                    continue
        if event is not None and not per_event:
            if collapser.event_filter is None:
                collapser.event_filter = event
            elif event != collapser.event_filter:
                # Skipped events take the line path: it alone tells frames from headers it does not parse.
                line += collapser.feed([x + b"\n" for x in lines] + [b"\n"], path, line)
                continue
        ids = match.group(1, 2, 3)
        root = roots.get(ids)  # type: ignore[call-overload]
        if root is None:
            root = roots[ids] = collapser._root_name(match)  # type: ignore[index]
        java = root.startswith(b"java")
        frames = lines[1:]
        found_names = list(map(java_cache.get if java else cache.get, frames))
        if None in found_names:
            resolved = _resolve(collapser, frames, found_names, java)
            if resolved is None:
                line += collapser.feed([x + b"\n" for x in lines] + [b"\n"], path, line)
                continue
            names = resolved
        else:
            names = found_names  # type: ignore[assignment]
        key = event if per_event else None
        if counts is None or per_event:
            counts = by_event.get(key)
            if counts is None:
                counts = by_event[key] = {}
        weight = periods.get(period_text)
        if weight is None:
            weight = periods[period_text] = int(period_text)  # type: ignore[arg-type]
        if sample_hook is not None:
            names = sample_hook(header, names)
        stack = root + b";" + b";".join(names[::-1]) if names else root
        counts[stack] = counts.get(stack, 0) + weight
        kept[key] = kept.get(key, 0) + 1
        seen += 1
        line += size
    collapser.records_by_event.update(kept)
    collapser.diagnostics.records += seen
    return line


def _resolve(
    collapser: PerfCollapser, frames: list[bytes], names: list[bytes | None], java: bool
) -> list[bytes] | None:
    """Parse the frames the cache missed; None when the record needs the line-by-line path."""
    cache = collapser._block_java_frames if java else collapser._block_frames
    resolved: list[bytes] = []
    for frame, name in zip(frames, names, strict=True):
        if name is None:
            if (
                frame[:1] not in (b"\t", b" ")
                or not frame.strip()
                or (b": " in frame and collapser._is_indented_header(frame))
            ):
                return None
            name = collapser._slow_frame(frame, java, cache)
            if name is None:
                return None
        if name:
            resolved.append(name)
    return resolved
