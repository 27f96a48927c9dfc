"""The fold stage as one call: inputs (text, gzip, stdin, perf.data) -> folded profile(s)."""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .collapse.parallel import fold_parallel
from .collapse.perf import FoldOptions, PerfCollapser
from .collapse.perf_blocks import fold_blocks, iter_blocks
from .diagnostics import Diagnostics, InputMissing, NoSamples
from .folded import decode
from .inputs import STDIN, kind_of, label, open_stream
from .model import FoldedProfile


@dataclass
class FoldResult:
    profile: FoldedProfile  # the folded event (the first one, or --event-filter's)
    per_event: dict[str, FoldedProfile] = field(default_factory=dict)  # with --per-event
    skipped_events: Counter[str] = field(default_factory=Counter)  # event -> samples not folded


def fold_perf(
    inputs: Sequence[str],
    options: FoldOptions | None = None,
    diagnostics: Diagnostics | None = None,
    jobs: int = 1,
) -> FoldResult:
    """Fold `perf script` output from every input into one profile (and one per event if asked)."""
    options = options or FoldOptions()
    diagnostics = diagnostics or Diagnostics()
    collapser = PerfCollapser(options, diagnostics)
    with_pid = options.pid or options.tid
    for path in inputs or [STDIN]:
        try:
            if jobs > 1 and not diagnostics.strict and path != STDIN and kind_of(path) == "text":
                fold_parallel(path, options, jobs, collapser)
                continue
            with open_stream(path, with_pid) as stream:
                fold_blocks(collapser, iter_blocks(stream), label(path))
        except (EOFError, gzip.BadGzipFile) as err:
            raise InputMissing(f"{label(path)}: truncated or corrupt gzip data: {err}") from None
        except OSError as err:
            raise InputMissing(f"{label(path)}: read failed: {err.strerror or err}") from None
    diagnostics.finish()
    result = _result(collapser)
    _explain_events(result, options, diagnostics)
    if not result.profile.counts and not any(p.counts for p in result.per_event.values()):
        names = ", ".join(label(p) for p in inputs) or "<stdin>"
        if diagnostics.records == 0:
            raise NoSamples(f"{names}: no samples found (empty input, or not `perf script` output)")
        raise NoSamples(f"{names}: none of the {diagnostics.records:,} records could be folded")
    return result


def _result(collapser: PerfCollapser) -> FoldResult:
    per_event: dict[str, FoldedProfile] = {}
    if collapser.options.per_event:
        for event in collapser.by_event:
            profile = collapser.profile(event)
            per_event[profile.event or "unknown-event"] = profile
        first = next(iter(per_event.values()), FoldedProfile())
        return FoldResult(first, per_event)
    skipped = Counter({decode(e): n for e, n in collapser.skipped_by_event.items()})
    return FoldResult(collapser.profile(), {}, skipped)


def _explain_events(result: FoldResult, options: FoldOptions, diagnostics: Diagnostics) -> None:
    if not result.skipped_events:
        return
    others = ", ".join(f"{event} ({n:,} samples)" for event, n in result.skipped_events.most_common())
    how = "--event-filter EVENT" if options.event_filter else "--event-filter EVENT, or --per-event DIR"
    diagnostics.note(
        f"note: folded event {result.profile.event}; skipped {others}: select one with {how}"
    )
