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
from ..io.inputs import STDIN, kind_of, label, open_stream
from .options import FoldOptions
from .perf import PerfCollapser
from .perf_blocks import fold_blocks

# perf.data: the header's fields alone (its order is the fold's: by time); no frame, so no symbol read.
PROBE_FIELDS = ("-F", "comm,tid,time,event")
PROBE_BLOCK = 1 << 16  # folded at a time: a record cut at a block's end only costs the probe


class _Found(Exception):
    """Ends a probe of perf.data inside its `perf script`: killed then, not left to die of SIGPIPE (an error)."""


def first_event(inputs: Sequence[str], options: FoldOptions) -> str | None:
    """The event a fold of `inputs` keeps (None: no sample); perf.data's `perf script` is stopped there."""
    if options.event_filter is not None:
        return options.event_filter
    if len(inputs) == 1 and inputs[0] != STDIN and kind_of(inputs[0]) == "perf.data":
        from pathlib import Path

        from ..io.perf import find_perf
        from ..record.scope import recorded_events

        events = [e for e in recorded_events(find_perf(), Path(inputs[0])) if not e.startswith("#")]  # "# Tip: ..."
        if len(events) == 1:
            return events[0]  # the header's list (~0 s) instead of perf script's start (~0.1 s of a 3 MB file)
    probe = PerfCollapser(options._replace(frame_hook=None, sample_hook=None), Diagnostics(echo=False))
    for path in inputs:
        try:
            with open_stream(path, script_args=PROBE_FIELDS) as stream:
                while block := stream.read(PROBE_BLOCK):
                    fold_blocks(probe, [block], label(path))
                    if probe.event_filter is not None:
                        raise _Found
        except _Found:
            return decode(probe.event_filter or b"")
    return None
