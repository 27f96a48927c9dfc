"""`--jobs N`: fold one large text file in N processes, split on record boundaries.

The output is identical to a single process: chunks start right after a blank line (so no
record is cut), the event filter is fixed from the file's head before splitting, and each
worker's line numbers are shifted by the lines of the chunks before it.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, replace

from ..diagnostics import Diagnostics, Problem
from .perf import HEADER, HEADER_OURS, FoldOptions, PerfCollapser
from .perf_blocks import fold_blocks, iter_blocks

MIN_CHUNK = 4 << 20  # below this, process start-up costs more than it saves


@dataclass
class ChunkResult:
    by_event: dict[bytes | None, dict[bytes, int]]
    records_by_event: Counter[bytes | None]
    skipped_by_event: Counter[bytes]
    event_filter: bytes | None
    diagnostics: Diagnostics
    lines: int


def split_points(path: str, parts: int) -> list[int]:
    """Byte offsets [0, ..., size]; each inner one is just after a blank line (a record boundary)."""
    size = os.path.getsize(path)
    parts = max(1, min(parts, size // MIN_CHUNK))
    points = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            target = max(size * k // parts, points[-1])
            f.seek(target)
            window = f.read(1 << 20)
            found = window.find(b"\n\n")
            if found < 0:
                continue
            points.append(target + found + 2)
    points.append(size)
    return sorted(set(points))


def first_event(path: str, options: FoldOptions) -> bytes | None:
    """The event the reference would fold by default: the first header's."""
    probe = PerfCollapser(options, Diagnostics(echo=False))
    header = HEADER if options.compat else HEADER_OURS
    with open(path, "rb") as f:
        for line in f:
            if line[:1] in (b"\n", b"#") or (line[:1] in (b"\t", b" ") and options.compat):
                continue
            stripped = line.strip() if not options.compat else line.rstrip(b"\n")
            if header.match(stripped):
                event = probe._event(stripped)[0]
                if event is not None:
                    return event
    return None


def _fold_chunk(path: str, start: int, end: int, options: FoldOptions) -> ChunkResult:
    diagnostics = Diagnostics(echo=False)
    collapser = PerfCollapser(options, diagnostics)
    with open(path, "rb") as stream:
        stream.seek(start)
        lines = fold_blocks(collapser, iter_blocks(stream, end - start), path)
    return ChunkResult(
        collapser.by_event,
        collapser.records_by_event,
        collapser.skipped_by_event,
        collapser.event_filter,
        diagnostics,
        lines,
    )


def fold_parallel(path: str, options: FoldOptions, jobs: int, into: PerfCollapser) -> int:
    """Fold `path` with `jobs` processes and merge the results into `into`; returns lines read."""
    if not options.per_event and options.event_filter is None:
        event = first_event(path, options)
        if event is not None:
            options = replace(options, event_filter=event.decode("utf-8", "surrogateescape"))
            into.event_filter = event
    from concurrent.futures import ProcessPoolExecutor  # only --jobs pays for it

    points = split_points(path, jobs)
    chunks = list(zip(points, points[1:], strict=False))
    # This process folds the first chunk itself while jobs-1 workers fold the rest.
    with ProcessPoolExecutor(max_workers=max(1, len(chunks) - 1)) as pool:
        futures = [pool.submit(_fold_chunk, path, a, b, options) for a, b in chunks[1:]]
        results = [_fold_chunk(path, *chunks[0], options)] + [future.result() for future in futures]
    base = 0
    for result in results:
        shifted = Diagnostics(echo=False)
        shifted.problems = [Problem(p.path, p.line + base, p.kind, p.text) for p in result.diagnostics.problems]
        shifted.counts = result.diagnostics.counts
        shifted.records = result.diagnostics.records
        into.diagnostics.merge(shifted)
        base += result.lines
        for event, counts in result.by_event.items():
            target = into.by_event.setdefault(event, {})
            for stack, count in counts.items():
                target[stack] = target.get(stack, 0) + count
        into.records_by_event.update(result.records_by_event)
        into.skipped_by_event.update(result.skipped_by_event)
        if into.event_filter is None:
            into.event_filter = result.event_filter
    return base
