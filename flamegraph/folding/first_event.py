"""Which event a fold of several events keeps, before folding: -e/--event's, else the first sample's.

    first_event(["perf.data"], FoldOptions()) -> "cpu-clock"

The collapser sets its filter to the first sample it folds; this folds the inputs' heads until it
does. The one rule for every caller that must know the event first: --jobs (each worker folds it),
--scheduler, and `convert` (sched_switch is paired into waits, anything else folded as samples).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..io.diagnostics import Diagnostics
from ..io.folded import decode
from ..io.inputs import label, open_stream
from .options import FoldOptions
from .perf import PerfCollapser
from .perf_blocks import fold_blocks

PROBE_BLOCK = 1 << 16  # folded at a time: a record cut at a block's end only costs the probe


class _Found(Exception):
    """Ends a probe of perf.data inside its `perf script`: killed then, not left to die of SIGPIPE (an error)."""


def first_event(inputs: Sequence[str], options: FoldOptions) -> str | None:
    """The event a fold of `inputs` keeps (None: no sample); perf.data's `perf script` is stopped there."""
    if options.event_filter is not None:
        return options.event_filter
    probe = PerfCollapser(options._replace(frame_hook=None, sample_hook=None), Diagnostics(echo=False))
    for path in inputs:
        try:
            with open_stream(path, options.pid or options.tid) as stream:
                while block := stream.read(PROBE_BLOCK):
                    fold_blocks(probe, [block], label(path))
                    if probe.event_filter is not None:
                        raise _Found
        except _Found:
            return decode(probe.event_filter or b"")
    return None
