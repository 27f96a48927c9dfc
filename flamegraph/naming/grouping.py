"""Whether `[unknown]` frames are grouped by function, and the one note saying what was not.

A file here may name a recording's frames only when it is provably the binary that was recorded:
its build-id equals the one perf stored (flamegraph.naming.buildid). perf.data inputs are checked DSO by
DSO; `perf script` text holds no build-ids, so it is grouped only when the user asks for it
(`--group-unknown`), and then a note says the names are unverified. `record`, `offcpu` and
`make flamegraph` fold their own fresh perf.data, checked the same way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..io.inputs import STDIN, kind_of

if TYPE_CHECKING:
    from .symbols import FunctionNamer

UNVERIFIED = (
    "note: [unknown] frames grouped by function from the DSOs on this machine, unverified: perf script "
    "text carries no build-ids (a DSO rebuilt or updated since the recording gives wrong names; fold the "
    "perf.data file to have them checked)"
)
SHOWN_PER_REASON = 4
# perf stores build-ids only for the DSOs samples landed in, not for those seen only in call stacks.
NOT_RECORDED_HINT = "perf record --buildid-all stores one for every DSO"


def namer_for_inputs(inputs: Sequence[str], requested: bool | None) -> FunctionNamer | None:
    """The namer for `fold`: `requested` is --group-unknown (True), --no-group-unknown (False) or
    neither (None: group perf.data inputs, checked; leave text alone)."""
    if requested is False:
        return None
    # buildid and symbols (mmap, struct, perf) only when a namer is made: `fold` of text makes none,
    # and a small fold's time is mostly imports.
    paths = list(inputs) or [STDIN]
    # A pipe or FIFO is never peeked at: that would eat the text the fold reads next.
    if all(path != STDIN and os.path.isfile(path) and kind_of(path) == "perf.data" for path in paths):
        from .buildid import RecordedBuildIds, read_recorded_build_ids
        from .symbols import FunctionNamer

        recorded = RecordedBuildIds()
        for path in paths:
            recorded = recorded.merge(read_recorded_build_ids(path))
        return FunctionNamer(recorded)
    if not requested:
        return None
    from .symbols import FunctionNamer

    return FunctionNamer()


def namer_for_recording(perf_data: str) -> FunctionNamer:
    """The namer for a fresh recording: grouped where the build-ids match, as for any perf.data."""
    from .buildid import read_recorded_build_ids
    from .symbols import FunctionNamer

    return FunctionNamer(read_recorded_build_ids(perf_data))


def grouping_note(namer: FunctionNamer | None) -> str | None:
    """One line: the names are unverified, or which DSOs kept `[dso]` because they could not be
    proven to be the recorded ones (how many, how many distinct frames, why); None if all is well."""
    if namer is None:
        return None
    if namer.recorded is None:
        return UNVERIFIED
    if not namer.refused:
        return None
    from .symbols import DIFFERENT, NO_LOCAL_ID, NOT_RECORDED

    order = (DIFFERENT, NO_LOCAL_ID, NOT_RECORDED)  # the alarming one first
    by_reason: dict[str, list[str]] = {reason: [] for reason in order}
    for path, reason in sorted(namer.refused.items()):
        by_reason.setdefault(reason, []).append(os.path.basename(path))
    by_reason = {reason: names for reason, names in by_reason.items() if names}
    parts = []
    for reason, names in by_reason.items():
        more = f" and {len(names) - SHOWN_PER_REASON} more" if len(names) > SHOWN_PER_REASON else ""
        parts.append(f"{', '.join(names[:SHOWN_PER_REASON])}{more} ({reason})")
    count = len(namer.refused)
    frames = namer.refused_frames
    line = (
        f"note: {count} DSO{'s' if count != 1 else ''} kept as [dso], not grouped by function "
        f"({frames:,} distinct frame{'s' if frames != 1 else ''}): {'; '.join(parts)}"
    )
    problems = namer.recorded.problems
    if problems:
        line += f" ({problems[0]})"
    elif NOT_RECORDED in by_reason:
        line += f"; {NOT_RECORDED_HINT}"
    return line
