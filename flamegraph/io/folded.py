"""Read and write folded stacks (`root;child;leaf 42`): sorted byte-wise, deterministic.

Lines this reader handles (ours, flamegraph.pl's and inferno's):
    python-4242;_start;main;compute 17
    java;Lorg/Foo:.bar_[j] 3.5
    swapper;[unknown];cpu_idle 0.25
and, for a differential graph, difffolded.pl's two counts (BEFORE AFTER):
    python-4242;_start;main;compute 17 23

A count is plain digits, optionally with a '.' and more digits (what flamegraph.pl accepts):
no sign, exponent, '_' or 'inf', and never more than a float holds.

Every command that reads folded files (`render`, `diff`, `convert`, `fleet outlier`) reads them with
`read_folded_inputs`: the first record decides whether the input is plain or differential, once.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import IO, BinaryIO

from ..model import FoldedProfile
from .diagnostics import BadCounts, Diagnostics, InputMissing

ENCODING = "utf-8"
ERRORS = "surrogateescape"  # raw bytes in symbol names round-trip unchanged


def decode(raw: bytes) -> str:
    return raw.decode(ENCODING, ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


DECIMAL = re.compile(rb"[0-9]+\.[0-9]*")
FLOAT_MAX = sys.float_info.max
MAX_LINE = 64 << 20  # a line longer than this is no folded stack nor perf script text (/dev/zero: no line end ever)
MAX_DIGITS = len(str(int(FLOAT_MAX)))  # 309: an integer count with more digits overflows a float


def check_total(total: float, factor: float = 1.0) -> None:
    """Counts that add up past a float's range (or do once multiplied by --factor) cannot be shown
    honestly: the one rule for every writer that states a total (the SVG, speedscope, pprof), exit 3."""
    try:
        whole = float(total)
    except OverflowError:  # an exact int sum of integer counts
        whole = math.inf
    if not math.isfinite(whole):
        raise BadCounts(f"the counts add up to more than the largest float ({FLOAT_MAX:.3g})")
    if not math.isfinite(whole * factor):
        raise BadCounts(f"--factor {factor:g} times the total ({whole:.6g}) is past the largest float")


def format_folded_count(count: float) -> str:
    """A count as the folded format spells it: digits, and a '.' only for a fraction (never 1e-05)."""
    if isinstance(count, int):
        return str(count)
    if float(count).is_integer():
        return str(int(count))
    from decimal import Decimal  # only for a fraction: most counts are integers, and fold starts faster

    return format(Decimal(repr(float(count))), "f")


def iter_folded_lines(profile: FoldedProfile) -> Iterator[bytes]:
    """Folded lines sorted by their bytes, as stackcollapse-perf.pl sorts them."""
    encoded = sorted((encode(stack), count) for stack, count in profile.counts.items())
    for stack, count in encoded:
        yield stack + b" " + format_folded_count(count).encode() + b"\n"


def iter_diff_folded_lines(before: FoldedProfile, after: FoldedProfile) -> Iterator[bytes]:
    """difffolded.pl's `stack BEFORE AFTER` lines, sorted by their bytes; a stack one side lacks has 0 there."""
    stacks = sorted((encode(stack), stack) for stack in before.counts.keys() | after.counts.keys())
    for raw, stack in stacks:
        old, new = (format_folded_count(side.counts.get(stack, 0)).encode() for side in (before, after))
        yield raw + b" " + old + b" " + new + b"\n"


def write_folded(profile: FoldedProfile, out: BinaryIO) -> None:
    out.writelines(iter_folded_lines(profile))


def parse_count(text: bytes) -> float | None:
    """`17` -> 17, `3.5` -> 3.5; None for anything else (`-1`, `1e3`, `1_000`, `inf`) or past a float's range."""
    if text.isdigit():  # bytes: ASCII digits only
        if len(text) < MAX_DIGITS:  # the common case: certainly within a float's range
            return int(text)
        text = text.lstrip(b"0") or b"0"
        if len(text) > MAX_DIGITS:
            return None
        value = int(text)
        return value if value <= FLOAT_MAX else None
    if DECIMAL.fullmatch(text) is None:
        return None
    number = float(text)
    return number if number <= FLOAT_MAX else None


def read_folded(
    lines: Iterable[bytes],
    path: str,
    diagnostics: Diagnostics,
    profile: FoldedProfile | None = None,
    before: FoldedProfile | None = None,
    in_order: list[tuple[str, float]] | None = None,
) -> FoldedProfile:
    """Merge folded lines into `profile` (a new one by default); bad lines are reported and skipped.

    With `before`, every line holds two counts (difffolded.pl's `stack BEFORE AFTER`): the first goes
    to `before`, the second to `profile`. With `in_order`, each good record is also appended there as
    (stack, count), repeats kept: a flame chart's time order.
    """
    profile = profile if profile is not None else FoldedProfile()
    counts = profile.counts
    records = 0  # the fast path's, added to diagnostics.records at the end
    for number, line in enumerate(lines, 1):
        line = line.rstrip(b"\r\n")
        stack, sep, count_text = line.rpartition(b" ")
        # The usual record ('a;b;c 42', one integer count) without a copy of the line: what the checks
        # below decide for it, in fewer steps (a third of a render's reading time on 81 k stacks).
        if before is None and count_text.isdigit() and len(count_text) < MAX_DIGITS and sep and stack:
            if not stack.isspace():
                records += 1
                key = stack.decode(ENCODING, ERRORS)
                counts[key] = counts.get(key, 0) + int(count_text)
                if in_order is not None:
                    in_order.append((key, int(count_text)))
                continue
        if not line.strip():
            continue
        before_text = b"0"
        if before is not None:
            stack, sep, before_text = stack.rpartition(b" ")
        count = parse_count(count_text) if sep and stack.strip() else None
        old = parse_count(before_text) if before is not None else 0
        if (count is None or old is None) and line.startswith(b"#"):
            continue  # a comment; with its count(s) it is a stack, as flamegraph.pl reads it (a thread named "#1")
        diagnostics.records += 1
        if not sep or not stack.strip():
            diagnostics.report(path, number, "bad-folded-line", decode(line))
            diagnostics.skipped_records += 1  # one line is one record: the summary counts it skipped
            continue
        if count is None or old is None:
            diagnostics.report(path, number, "bad-count", decode(line))
            diagnostics.skipped_records += 1
            continue
        key = decode(stack)
        counts[key] = counts.get(key, 0) + count
        if in_order is not None:
            in_order.append((key, count))
        if before is not None:
            before.counts[key] = before.counts.get(key, 0) + old
    diagnostics.records += records
    return profile


def _regular(stream: IO[bytes]) -> bool:
    """A plain regular file: its lines are bounded by its size (a device, a pipe or a gzip stream may never end)."""
    import os
    import stat

    try:
        return type(stream).__name__ != "GzipFile" and stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, AttributeError, ValueError):
        return False


def iter_bounded_lines(stream: IO[bytes], path: str) -> Iterator[bytes]:
    """The lines of a stream that may never end, none longer than MAX_LINE: a longer one is no input of ours
    (not a MemoryError, nor all the machine's memory)."""
    readline = stream.readline
    number = 0
    while line := readline(MAX_LINE + 1):
        number += 1
        if len(line) > MAX_LINE:
            raise too_long(path, number)
        yield line


def too_long(path: str, number: int) -> InputMissing:
    return InputMissing(
        f"{path}: line {number:,} is longer than {MAX_LINE >> 20} MiB: not perf script text or folded stacks"
    )


def has_two_counts(lines: Iterator[bytes]) -> tuple[bool, Iterator[bytes]]:
    """Whether the first record holds two counts (a differential file), and the lines, none lost."""
    seen = []
    for line in lines:
        seen.append(line)
        text = line.rstrip(b"\r\n")
        if not text.strip() or text.startswith(b"#"):
            continue
        stack, _, last = text.rpartition(b" ")
        rest, sep, first = stack.rpartition(b" ")
        two = bool(sep and rest.strip()) and parse_count(first) is not None and parse_count(last) is not None
        return two, chain(seen, lines)
    return False, iter(seen)


class FoldedRead:
    """What folded input holds: one count per stack (plain), or two (differential: BEFORE AFTER)."""

    def __init__(
        self,
        profile: FoldedProfile,  # the counts; for a differential input, AFTER
        before: FoldedProfile | None = None,  # a differential input's BEFORE; None for a plain one
        stacks: list[tuple[str, float]] | None = None,  # each record in input order, when asked (a flame chart)
    ) -> None:
        self.profile = profile
        self.before = before
        self.stacks = stacks

    @property
    def differential(self) -> bool:
        return self.before is not None

    def plain(self, path: str) -> FoldedProfile:
        """The profile of an input that must hold one count per stack (`diff`'s sides, a host's file)."""
        if self.before is not None:
            raise InputMissing(
                f"{path}: two counts per line (a differential profile already); draw it with `flamegraph render`"
            )
        return self.profile


def read_folded_inputs(paths: Iterable[str], diagnostics: Diagnostics, keep_order: bool = False) -> FoldedRead:
    """Folded files (text, .gz or '-') merged into one read; the first record of the first input decides
    plain or differential for all of them (a later input of the other shape is reported line by line).
    Each input is read once: stdin cannot be read twice."""
    from .inputs import gzip_errors, label, open_stream  # here: the writer imports this module

    read = FoldedRead(FoldedProfile(), stacks=[] if keep_order else None)
    for index, path in enumerate(paths):
        with open_stream(path) as stream, gzip_errors(path):
            two, lines = has_two_counts(iter(stream) if _regular(stream) else iter_bounded_lines(stream, label(path)))
            if index == 0 and two:
                read.before = FoldedProfile()
            read_folded(lines, label(path), diagnostics, read.profile, read.before, read.stacks)
    return read
