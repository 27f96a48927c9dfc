"""Read and write folded stacks (`root;child;leaf 42`): sorted byte-wise, deterministic.

Lines this reader handles (ours, flamegraph.pl's and inferno's):
    python-4242;_start;main;compute 17
    java;Lorg/Foo:.bar_[j] 3.5
    swapper;[unknown];cpu_idle 1e3
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from .diagnostics import Diagnostics
from .model import FoldedProfile

ENCODING = "utf-8"
ERRORS = "surrogateescape"  # raw bytes in symbol names round-trip unchanged


def decode(raw: bytes) -> str:
    return raw.decode(ENCODING, ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


def format_count(count: float) -> str:
    if isinstance(count, int):
        return str(count)
    if float(count).is_integer() and abs(count) < 2**63:
        return str(int(count))
    return repr(float(count))


def iter_folded_lines(profile: FoldedProfile) -> Iterator[bytes]:
    """Folded lines sorted by their bytes, as stackcollapse-perf.pl sorts them."""
    encoded = sorted((encode(stack), count) for stack, count in profile.counts.items())
    for stack, count in encoded:
        yield stack + b" " + format_count(count).encode() + b"\n"


def write_folded(profile: FoldedProfile, out: BinaryIO) -> None:
    out.writelines(iter_folded_lines(profile))


def parse_count(text: bytes) -> float | None:
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)  # type: ignore[assignment]
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
    return value if value >= 0 else None


def read_folded(
    lines: Iterable[bytes], path: str, diagnostics: Diagnostics, profile: FoldedProfile | None = None
) -> FoldedProfile:
    """Merge folded lines into `profile` (a new one by default); bad lines are reported and skipped."""
    profile = profile if profile is not None else FoldedProfile()
    counts = profile.counts
    for number, line in enumerate(lines, 1):
        line = line.rstrip(b"\r\n")
        if not line.strip() or line.startswith(b"#"):
            continue
        diagnostics.records += 1
        stack, sep, count_text = line.rpartition(b" ")
        if not sep or not stack.strip():
            diagnostics.report(path, number, "bad-folded-line", decode(line))
            continue
        count = parse_count(count_text)
        if count is None:
            diagnostics.report(path, number, "bad-count", decode(line))
            continue
        key = decode(stack)
        counts[key] = counts.get(key, 0) + count
    return profile
