"""The fold stage as one call: inputs (text, gzip, stdin, perf.data) -> folded profile(s).

Every command folds through here (`fold`, `record`, `make flamegraph`): one opener
(`inputs.open_stream`), the block fast path, and `--jobs` for text files large enough to pay
for it. perf.data is folded as `perf script` writes it, so the two overlap.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import NamedTuple

from ..io.diagnostics import BadOption, Diagnostics, InputMissing, NoSamples
from ..io.folded import decode
from ..io.inputs import GZIP_MAGIC, STDIN, kind_of, label, open_stream
from ..model import FoldedProfile, period_unit
from ..window import Window, WindowFilter
from .grammar import join_srclines, missing_fields, weighs_by_period
from .options import FoldOptions
from .perf import PerfCollapser
from .perf_blocks import fold_blocks, iter_blocks, iter_lines

Progress = Callable[[int], None]  # bytes of perf script text folded so far
BlockFilter = Callable[[Iterable[bytes]], Iterator[bytes]]  # the text's raw blocks, rewritten


class FoldResult(NamedTuple):
    profile: FoldedProfile  # the folded event (the first one, or -e/--event's)
    per_event: dict[str, FoldedProfile]  # with --per-event
    skipped_events: Counter[str]  # event -> samples not folded


def jobs_for(path: str, jobs: int | None, strict: bool) -> int:
    """Processes for one input: 1 unless it is a regular text file; `None` picks what pays."""
    if strict or path == STDIN or jobs == 1 or not hasattr(os, "fork"):
        return 1
    try:
        size = os.stat(path).st_size
    except OSError:
        return 1  # the opener says why
    from .parallel import MIN_CHUNK, default_jobs

    wanted = default_jobs(size) if jobs is None else jobs
    if wanted < 2 or size < 2 * MIN_CHUNK or kind_of(path) != "text":
        return 1
    return wanted


@contextmanager
def open_lines(
    path: str, script_args: Sequence[str] = (), progress: Progress | None = None
) -> Iterator[Iterator[bytes]]:
    """The lines of any input, without their line ends, for folders that read line by line (off-CPU)."""
    with open_stream(path, script_args=script_args) as stream:
        yield iter_lines(iter_blocks(stream), progress, path)


def fold_input(
    collapser: PerfCollapser,
    path: str,
    jobs: int | None = None,
    script_args: Sequence[str] = (),
    progress: Progress | None = None,
    window: Window | None = None,
    meanwhile: Callable[[], object] | None = None,
    head: bytearray | None = None,
    rewrite: BlockFilter | None = None,
) -> None:
    """Fold one input into `collapser`: the one path every command takes; with `window` (seconds of
    perf's clock), only the records in it. `meanwhile`: work of the caller's to do while workers fold
    (called only when the input is folded in several processes). `head`: filled with the first bytes
    of the text folded in this process (stdin, gzip: read once, so the head cannot be read again).
    `rewrite`: what the text goes through first, in one process (a streamed chunk's thread names:
    record.chunk_threads)."""
    options = collapser.options
    where = label(path)
    # A sample hook is called per sample, in order, and may keep what it saw: one process. So is a window.
    in_order = options.sample_hook is not None or window is not None or options.srcline or rewrite is not None
    processes = 1 if in_order else jobs_for(path, jobs, collapser.diagnostics.strict)
    if processes > 1:
        from .parallel import fold_parallel

        try:
            fold_parallel(path, collapser, processes, meanwhile)
        except OSError as err:
            raise InputMissing(f"{where}: read failed: {err.strerror or err}") from None
        return
    # perf.data: `-F +pid` for --pid/--tid, unless the caller names the fields itself (record does).
    with_pid = (options.pid or options.tid) and not script_args
    with open_stream(path, with_pid, script_args) as stream:
        source = stream if window is None else WindowFilter(stream, window)
        blocks = iter_blocks(source)  # type: ignore[arg-type]
        if rewrite is not None:
            blocks = rewrite(blocks)
        if head is not None:
            blocks = _keeping_head(blocks, head)
        if options.srcline:  # a frame and its source line are one line to name: the line path
            lines = iter_lines(blocks, progress, where)
            failed: list[Exception] = []
            collapser.feed_lines(join_srclines(_until_failure(lines, failed), options.compat), where)
            if failed:  # (perf script killed: the record it cut short stays open, for the caller to drop)
                raise failed[0]
            collapser.end_input()
            return
        fold_blocks(collapser, blocks, where, progress=progress)


def _keeping_head(blocks: Iterator[bytes], head: bytearray) -> Iterator[bytes]:
    """The blocks, their first HEAD_BYTES also added to `head`."""
    from ..io.sniff import HEAD_BYTES

    for block in blocks:
        if len(head) < HEAD_BYTES:
            head += block[: HEAD_BYTES - len(head)]
        yield block


def _until_failure(lines: Iterator[bytes], failed: list[Exception]) -> Iterator[bytes]:
    """`lines` until reading them fails, the error kept in `failed`: the line-by-line fold then ends
    normally, its state (the record being read) kept."""
    try:
        yield from lines
    except Exception as error:
        failed.append(error)


def fold_perf(
    inputs: Sequence[str],
    options: FoldOptions | None = None,
    diagnostics: Diagnostics | None = None,
    jobs: int | None = None,
    window: Window | None = None,
    meanwhile: Callable[[], object] | None = None,
    per_event_hint: bool = True,
) -> FoldResult:
    """Fold `perf script` output from every input into one profile (and one per event if asked).

    `jobs`: processes per large text file; None picks what pays (one per core from 8 MB on).
    `window`: only the samples in this span (seconds of perf's clock, either end open).
    `meanwhile`: the caller's work to do while workers fold (see `fold_input`). `per_event_hint`: the note
    on skipped events names --per-event (`fold` has it, `convert` not)."""
    options = options or FoldOptions()
    diagnostics = diagnostics or Diagnostics()
    collapser = PerfCollapser(options, diagnostics)
    heads: dict[str, bytes] = {}
    for path in inputs or [STDIN]:
        head = bytearray()
        fold_input(collapser, path, jobs, window=window, meanwhile=meanwhile, head=head)
        heads[path] = bytes(head)
    result = _result(collapser)
    if window is not None:
        for profile in (result.profile, *result.per_event.values()):
            profile.metadata["window"] = window.format()
        if not result.profile.counts and not any(p.counts for p in result.per_event.values()):
            diagnostics.finish()
            names = ", ".join(label(p) for p in inputs) or "<stdin>"
            raise NoSamples(f"{names}: no samples in the window {window.format()}")
    return finish_fold(result, inputs, options, diagnostics, per_event_hint, heads)


def finish_fold(
    result: FoldResult,
    inputs: Sequence[str],
    options: FoldOptions,
    diagnostics: Diagnostics,
    per_event_hint: bool = True,
    heads: Mapping[str, bytes] | None = None,
) -> FoldResult:
    """The end of every fold (here, and `fold --scheduler`'s): the summary line, the note on events not
    folded, and the error when nothing could be folded. `heads`: the first bytes of inputs as folded
    (a stream's, which cannot be read again); a regular file's are read again where missing."""
    diagnostics.finish()
    if _weighed_by_period(inputs or [STDIN], heads or {}):
        for profile in (result.profile, *result.per_event.values()):
            profile.unit = period_unit(profile.event)
    if options.event_filter and not options.per_event and not result.profile.counts:
        _refuse_absent_event(options.event_filter, result.skipped_events, diagnostics.records, inputs)
    chosen = options.event_filter is not None
    explain_events(result.profile.event, result.skipped_events, chosen, diagnostics, per_event_hint and not chosen)
    profiles = (result.profile, *result.per_event.values())
    if all(";" not in stack for p in profiles for stack in p.counts):  # nothing folded, or roots only
        _missing_fields(inputs or [STDIN], heads or {}, diagnostics, refuse=not any(p.counts for p in profiles))
    if not result.profile.counts and not any(p.counts for p in result.per_event.values()):
        names = ", ".join(label(p) for p in inputs) or "<stdin>"
        if diagnostics.records == 0:
            raise NoSamples(f"{names}: no samples found (empty input, or not `perf script` output)")
        raise NoSamples(f"{names}: none of the {diagnostics.records:,} records could be folded")
    return result


def _weighed_by_period(inputs: Sequence[str], heads: Mapping[str, bytes]) -> bool:
    """Text whose sample headers print perf's period: each sample weighed by it (perf.data is scripted without)."""
    from ..io.sniff import read_head

    for path in inputs:
        head = heads.get(path) or read_head(path)
        if head[:2] != GZIP_MAGIC and weighs_by_period(head.split(b"\n")[:-1]):
            return True
    return False


def _missing_fields(inputs: Sequence[str], heads: Mapping[str, bytes], diagnostics: Diagnostics, refuse: bool) -> None:
    """Text printed with `perf script -F` fields a fold cannot do without: say which; when nothing
    could be folded, as the error (exit 3), else (stacks of threads alone: no ip) as a note."""
    from ..io.sniff import read_head  # a regular file's head only: a pipe is never read ahead

    for path in inputs:
        head = heads.get(path) or read_head(path)  # the text as folded (stdin, gunzipped), else the file's
        missing = missing_fields(head.split(b"\n")[:-1]) if head[:2] != GZIP_MAGIC else []
        if not missing:
            continue
        fields = ", ".join(missing)
        why = (
            f"{label(path)}: perf script printed no {fields} field{'s' if len(missing) > 1 else ''}: a fold "
            f"needs comm, tid, ip and sym (plain `perf script` prints them; or add {','.join(missing)} to -F)"
        )
        if refuse:
            raise NoSamples(why)
        diagnostics.note(f"note: {why}; the stacks are the threads alone")


def _result(collapser: PerfCollapser) -> FoldResult:
    per_event: dict[str, FoldedProfile] = {}
    if collapser.options.per_event:
        for event in collapser.by_event:
            profile = collapser.profile(event)
            per_event[profile.event or "unknown-event"] = profile
        first = next(iter(per_event.values()), FoldedProfile())
        return FoldResult(first, per_event, Counter())
    skipped = Counter({decode(e): n for e, n in collapser.skipped_by_event.items()})
    return FoldResult(collapser.profile(), {}, skipped)


def _refuse_absent_event(event: str, skipped: Counter[str], records: int, inputs: Sequence[str]) -> None:
    """-e/--event naming an event the input does not hold (a typo): a usage error naming those it has. The
    records not counted under another event (`skipped`) are the event's own: read, if none could be folded."""
    if event in skipped or not skipped or records > sum(skipped.values()):
        return  # present but nothing foldable, or no samples at all: the errors that follow say which
    names = ", ".join(label(p) for p in inputs) or "<stdin>"
    raise BadOption(f"no event {event} in {names} (it has {', '.join(sorted(skipped))})")


def explain_events(
    folded: str | None, skipped: Counter[str], chosen: bool, diagnostics: Diagnostics, per_event: bool = False
) -> None:
    """The note on the events a fold skipped (`chosen`: -e/--event picked `folded`; `per_event`: the command
    has --per-event); `convert` notes the same for off-CPU input."""
    if not skipped:
        return
    others = ", ".join(f"{event} ({n:,} samples)" for event, n in skipped.most_common())
    if chosen:  # the user's pick: no advice to pick
        diagnostics.note(f"note: folded event {folded}; skipped {others}")
        return
    how = "-e/--event EVENT, or --per-event DIR" if per_event else "-e/--event EVENT"
    diagnostics.note(f"note: folded event {folded}; skipped {others}: select one with {how}")
