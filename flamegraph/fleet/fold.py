"""`flamegraph fold --scheduler`: fold large `perf script` files on a Dask cluster's workers.

The result is the one a local `flamegraph fold` gives, byte for byte, stderr included:
  - text files are cut just after blank lines (flamegraph.folding.parallel.split_points), so no
    record is split; a .gz file is one chunk (gzip cannot be entered in the middle);
  - the event to fold is fixed before cutting: the first event of the first input, as a local fold
    picks it, or --event-filter's;
  - every chunk is folded by the same engine (PerfCollapser + fold_blocks), then adjacent chunks are
    merged in file order by a tree of merge tasks on the workers (fan-in FAN_IN): stacks summed,
    problems' line numbers shifted by the lines of the chunks before them, the first few of each
    kind kept, as a local fold shows them. The client receives one merged result.
`on_scheduler(ADDRESS)` is what `fold --scheduler` hands the pipeline (its `FoldRequest.cluster`).
The workers must see the inputs at the same paths (a shared file system); each chunk checks the
file's size there against the client's and says so when they differ.
"""

from __future__ import annotations

import gzip
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..folding.first_event import first_event
from ..folding.parallel import MIN_CHUNK, split_points
from ..folding.perf import FoldOptions, PerfCollapser
from ..folding.perf_blocks import fold_blocks, iter_blocks
from ..folding.stage import FoldResult, finish_fold
from ..io.diagnostics import MAX_SHOWN_PER_KIND, BadOption, Diagnostics, InputMissing, Problem
from ..io.folded import decode
from ..io.inputs import STDIN, kind_of, label, open_stream
from ..model import FoldedProfile

if TYPE_CHECKING:
    from ..pipeline.perf_inputs import ClusterFold  # fleet builds on the pipeline, never the other way

FAN_IN = 4  # chunks merged per reduction task: log4(chunks) rounds
CHUNKS_PER_THREAD = 2  # some slack, so a slow worker does not hold the others up


@dataclass(frozen=True)
class Chunk:
    """A byte range of one input (end None: the whole input, decompressed)."""

    index: int  # which input (the same file given twice is two inputs, numbered from line 1 each)
    path: str  # absolute, as the workers open it
    label: str  # as the user typed it, for messages
    size: int  # the file's size on the client
    start: int = 0
    end: int | None = None


@dataclass
class ChunkFold:
    """A folded run of adjacent chunks: what the merge needs to rebuild a whole-file fold."""

    counts: dict[str, int] = field(default_factory=dict)
    skipped: Counter[bytes] = field(default_factory=Counter)
    problems: list[tuple[int, Problem]] = field(default_factory=list)  # (input index, problem), in file order
    # counts, records, notes... (its shown problems are moved to `problems`, where their lines can be shifted)
    diagnostics: Diagnostics = field(default_factory=lambda: Diagnostics(echo=False))
    lines: dict[int, int] = field(default_factory=dict)  # input index -> lines read so far


def plan_chunks(inputs: Sequence[str], threads: int) -> list[Chunk]:
    """Record-aligned chunks, about CHUNKS_PER_THREAD per worker thread over all text inputs."""
    sizes = []
    for path in inputs:
        if path == STDIN:
            raise BadOption("fold --scheduler: the workers cannot read this process's stdin; name the files")
        kind = kind_of(path)
        if kind == "perf.data":
            raise BadOption(
                f"{path}: perf.data is folded where it was recorded (perf script needs that machine's binaries): "
                "fold it without --scheduler, or `flamegraph fleet record` on the cluster"
            )
        sizes.append((path, kind, os.path.getsize(path)))
    text_bytes = sum(size for _, kind, size in sizes if kind == "text")
    target = max(MIN_CHUNK, math.ceil(text_bytes / max(1, threads * CHUNKS_PER_THREAD)))
    chunks: list[Chunk] = []
    for index, (path, kind, size) in enumerate(sizes):
        whole = Chunk(index, os.path.abspath(path), label(path), size)
        if kind != "text" or size < 2 * target:
            chunks.append(whole)
            continue
        points = split_points(path, math.ceil(size / target))
        chunks += [replace(whole, start=a, end=b) for a, b in zip(points, points[1:], strict=False)]
    return chunks


def fold_chunk(chunk: Chunk, options: FoldOptions) -> ChunkFold:
    """On a worker: fold one chunk with the engine every fold uses."""
    try:
        here = os.path.getsize(chunk.path)
    except OSError as err:
        raise InputMissing(f"{chunk.label}: not readable on this worker ({err.strerror}): the workers need the "
                           "inputs at the same path (a shared file system)") from None
    if here != chunk.size:
        raise InputMissing(f"{chunk.label}: {here:,} bytes on this worker, {chunk.size:,} on the client: "
                           "the workers need the same files at the same path")
    diagnostics = Diagnostics(echo=False)
    collapser = PerfCollapser(options, diagnostics)
    try:
        if chunk.end is None:
            with open_stream(chunk.path) as stream:
                lines = fold_blocks(collapser, iter_blocks(stream), chunk.label)
        else:
            with open(chunk.path, "rb") as stream:
                stream.seek(chunk.start)
                lines = fold_blocks(collapser, iter_blocks(stream, chunk.end - chunk.start), chunk.label)
    except (EOFError, gzip.BadGzipFile) as err:
        raise InputMissing(f"{chunk.label}: truncated or corrupt gzip data: {err}") from None
    profile = collapser.profile()
    problems = [(chunk.index, problem) for problem in diagnostics.problems]
    diagnostics.problems = []
    return ChunkFold(
        {stack: int(count) for stack, count in profile.counts.items()},
        Counter(collapser.skipped_by_event),
        problems,
        diagnostics,
        {chunk.index: lines},
    )


def merge_folds(parts: Sequence[ChunkFold]) -> ChunkFold:
    """Adjacent folds, in file order -> one, as if their chunks had been folded in one go."""
    merged = ChunkFold()
    shown: Counter[str] = Counter()
    for part in parts:
        for stack, count in part.counts.items():
            merged.counts[stack] = merged.counts.get(stack, 0) + count
        merged.skipped.update(part.skipped)
        for index, problem in part.problems:
            if shown[problem.kind] < MAX_SHOWN_PER_KIND:
                shown[problem.kind] += 1
                line = problem.line + merged.lines.get(index, 0)
                merged.problems.append((index, Problem(problem.path, line, problem.kind, problem.text)))
        merged.diagnostics.merge(part.diagnostics)  # counts, records, notes: whatever Diagnostics keeps
        for index, lines in part.lines.items():
            merged.lines[index] = merged.lines.get(index, 0) + lines
    return merged


def reduce_on_cluster(client: Any, chunks: list[Chunk], options: FoldOptions) -> ChunkFold:
    """Fold every chunk on the workers and merge them there in a tree; one result comes back."""
    level = [client.submit(fold_chunk, chunk, options, pure=False) for chunk in chunks]
    while len(level) > 1:
        level = [client.submit(merge_folds, level[i : i + FAN_IN], pure=False) for i in range(0, len(level), FAN_IN)]
    return level[0].result()  # type: ignore[no-any-return]


def on_scheduler(scheduler: str) -> ClusterFold:
    """The pipeline's `FoldRequest.cluster` for `fold --scheduler ADDRESS` (an address, or local[:N])."""
    return lambda inputs, options, diagnostics: fold_on_scheduler(scheduler, inputs, options, diagnostics)


def fold_on_scheduler(
    scheduler: str, inputs: Sequence[str], options: FoldOptions, diagnostics: Diagnostics
) -> FoldResult:
    """`fold_perf` with the work done on a Dask cluster: an address, or local[:N] (see the module docstring)."""
    from .cluster import connect
    from .scheduler import Scheduler

    where = Scheduler.parse(scheduler)
    if options.per_event or options.frame_hook is not None or diagnostics.strict:
        raise BadOption("fold --scheduler folds one event, without --strict, --per-event, --report or grouping")
    if not inputs:
        raise BadOption("fold --scheduler: name the input files (the workers cannot read stdin)")
    plan_chunks(inputs, 1)  # stdin and perf.data are refused before a cluster is started
    with connect(where) as client:
        return fold_on_cluster(client, inputs, options, diagnostics)


def fold_on_cluster(
    client: Any, inputs: Sequence[str], options: FoldOptions, diagnostics: Diagnostics
) -> FoldResult:
    """Fold `inputs` on the cluster `client` is connected to; the same result as `fold_perf`."""
    threads = sum(client.nthreads().values())
    chunks = plan_chunks(inputs, threads)
    fixed = options._replace(event_filter=first_event(inputs, options))
    folded = reduce_on_cluster(client, chunks, fixed)
    seen = folded.diagnostics
    seen.problems = [problem for _, problem in folded.problems]
    diagnostics.merge(seen)  # shown as a local fold shows them: the first of each kind, in file order
    profile = FoldedProfile(counts=dict(folded.counts), event=fixed.event_filter)  # type: ignore[arg-type]
    result = FoldResult(profile, {}, Counter({decode(e): n for e, n in folded.skipped.items()}))
    return finish_fold(result, inputs, options, diagnostics)
