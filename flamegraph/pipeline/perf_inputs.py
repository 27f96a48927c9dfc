"""The pipeline of `flamegraph fold`: perf inputs (perf script text, a .gz of it, perf.data) -> fold
(on-CPU, or off-CPU waits paired; here, over --jobs processes, or by the request's `cluster`: a Dask
cluster) -> the report -> the folded text written with its facts beside it (FILE.json), or one file
per event.

    result = fold_inputs(FoldRequest(["perf.data"], FoldOptions(annotate_kernel=True), output=Path("out.folded")))
    result.profile.total, result.written   # the profile, and the files written (FILE.json beside each)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..folding.options import FoldOptions

if TYPE_CHECKING:
    from ..folding import stage
    from ..io.diagnostics import Diagnostics
    from ..model import FoldedProfile
    from ..window import Window

# A fold done elsewhere: (inputs, options, diagnostics) -> what `fold_perf` returns. `fold --scheduler`
# passes `fleet.fold.on_scheduler(ADDRESS)` (a Dask cluster): fleet builds on the pipeline, never the
# other way (docs/architecture.md).
ClusterFold = Callable[[list[str], FoldOptions, "Diagnostics"], "stage.FoldResult"]

SAFE_FILE_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


class FoldRequest(NamedTuple):
    """What to fold and where the folded text goes (`output` None: stdout)."""

    inputs: list[str]  # [] or ["-"]: stdin
    options: FoldOptions = FoldOptions()
    window: Window | None = None
    output: Path | None = None
    per_event: Path | None = None  # a directory: one EVENT.folded per event
    offcpu: bool = False  # sched_switch recordings: blocked time per stack (µs)
    group_unknown: bool | None = None  # None: for perf.data whose build-ids match, never for text
    report: bool = False  # the attribution report, noted
    strict: bool = False  # stop at the first malformed line
    jobs: int | None = None
    cluster: ClusterFold | None = None  # fold there instead of here (`fold --scheduler`)


class FoldResult(NamedTuple):
    profile: FoldedProfile
    written: list[Path]  # the folded files (stdout is not listed)


def fold_inputs(request: FoldRequest, note: Callable[[str], None] = print) -> FoldResult:
    """Fold, report (`note`: the grouping note, the report, the per-event files, off-CPU's totals), write."""
    from ..io.diagnostics import Diagnostics
    from ..naming.grouping import grouping_note, namer_for_inputs

    if request.offcpu:
        return _fold_offcpu(request, note)
    options = request.options
    namer = namer_for_inputs(request.inputs, request.group_unknown) if not (options.addrs or options.compat) else None
    hook = None
    if (namer is not None or request.report) and not options.compat:
        from ..naming.observer import FrameObserver  # only here: a plain fold of text starts without it

        hook = FrameObserver(namer)
    options = options._replace(frame_hook=hook)
    diagnostics = Diagnostics(strict=request.strict)
    if request.cluster is not None:
        result = request.cluster(request.inputs, options, diagnostics)
    else:
        from ..folding.stage import fold_perf

        result = fold_perf(request.inputs, options, diagnostics, jobs=request.jobs, window=request.window)
    if (grouped := grouping_note(namer)) is not None:
        diagnostics.note(grouped)
    if request.report:
        from ..analysis.report import build_report, report_lines

        for line in report_lines(*build_report(result.profile, hook)):
            note(line)
    written = _write_per_event(result.per_event, request.per_event, note) if request.per_event is not None else []
    if request.per_event is None or request.output is not None:
        _write(result.profile, request.output, note)
        written += [request.output] if request.output is not None else []
    return FoldResult(result.profile, written)


def _write(profile: FoldedProfile, output: Path | None, note: Callable[[str], None]) -> None:
    from ..io.folded import write_folded
    from ..io.sidecar import Context
    from ..io.writer import write_atomically, write_sidecar

    write_atomically(output, lambda out: write_folded(profile, out))
    write_sidecar(output, Context.of(profile), note)


def _write_per_event(
    profiles: dict[str, FoldedProfile], directory: Path, note: Callable[[str], None]
) -> list[Path]:
    names = per_event_file_names(list(profiles))
    written = []
    for event, profile in profiles.items():
        target = directory / names[event]
        _write(profile, target, note)
        renamed = "" if names[event] == f"{event}.folded" else f" (event {event})"
        note(f"{target}: {len(profile.counts):,} stacks, {profile.total:,} {profile.unit}{renamed}")
        written.append(target)
    return written


def _fold_offcpu(request: FoldRequest, note: Callable[[str], None]) -> FoldResult:
    """Pair switch-outs with switch-ins (flamegraph.folding.offcpu); the header totals are noted.
    [unknown] frames are grouped by function under fold's rule (perf.data, build-ids checked)."""
    from ..folding.offcpu import fold_offcpu_totals
    from ..folding.perf_sched import OffCpuOptions
    from ..io.diagnostics import Diagnostics
    from ..naming.grouping import grouping_note, namer_for_inputs
    from ..naming.observer import FrameObserver

    inputs = request.inputs or ["-"]
    namer = namer_for_inputs(inputs, request.group_unknown)
    options = OffCpuOptions(
        annotate_kernel=request.options.annotate_kernel,
        window=request.window,
        frame_hook=FrameObserver(namer) if namer is not None else None,
    )
    fold = fold_offcpu_totals([] if inputs == ["-"] else inputs, options, Diagnostics(strict=request.strict))
    _write(fold.profile, request.output, note)
    if (grouped := grouping_note(namer)) is not None:
        note(grouped)
    for key, value in fold.totals.metadata().items():
        note(f"{key}: {value}")
    return FoldResult(fold.profile, [request.output] if request.output is not None else [])


def per_event_file_names(events: list[str]) -> dict[str, str]:
    """EVENT.folded per event, its unsafe characters as '_'; names that would clash get a hash of the event.

    `cycles` -> cycles.folded, `sched:sched_switch` -> sched:sched_switch.folded; `a/b` and `a_b`
    -> a_b-c14cddc0.folded and a_b.folded (a name that needed no change keeps it).
    """
    safe = {event: SAFE_FILE_NAME.sub("_", event) or "_" for event in events}
    taken = Counter(safe.values())
    names = {}
    for event, name in safe.items():
        if taken[name] > 1 and name != event:
            import hashlib  # only for clashing event names

            name = f"{name}-{hashlib.sha256(event.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"
        names[event] = f"{name}.folded"
    if len(set(names.values())) < len(names):  # only an event literally named like another's hashed name
        names = {event: f"{index}-{name}" for index, (event, name) in enumerate(sorted(names.items()), 1)}
    return names
