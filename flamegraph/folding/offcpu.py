"""Folding off-CPU: `perf script` of sched_switch -> one wait per switch-out/switch-in pair -> microseconds.

    fold_offcpu(["offcpu.perf.txt.gz"]) -> FoldedProfile          # text, gzip, stdin or perf.data
    fold_offcpu_totals(inputs) -> OffCpuFold                     # the same with the totals as facts
    fold_offcpu_recording(recording, options, resolve=...)       # a fresh recording, capture facts added
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import IO

from ..io.diagnostics import Diagnostics, NoSamples
from ..io.inputs import STDIN, label, open_stream
from ..model import FoldedProfile
from ..record import Recording, Status, show_progress
from ..record.offcpu import EVENT, recorded_target
from ..record.proc import Resolver
from .perf_sched import OffCpuOptions, SchedCollapser
from .sched_totals import OffCpuFolder, OffCpuTotals, format_ns
from .stage import open_lines

SCRIPT_OPTIONS = (
    "-F",
    "comm,tid,time,event,trace,ip,sym,dso",
    "--show-switch-events",
    "--show-task-events",
    "--show-lost-events",
)


@contextmanager
def open_offcpu(path: str) -> Iterator[IO[bytes]]:
    """`perf script` text (plain, gzip, stdin) or a perf.data file scripted with the off-CPU options."""
    with open_stream(path, script_args=SCRIPT_OPTIONS) as stream:
        yield stream


@dataclass(frozen=True)
class OffCpuFold:
    """An off-CPU fold: the profile (its header text in `metadata`) and the totals as facts."""

    profile: FoldedProfile
    totals: OffCpuTotals
    skipped_events: Counter[str] = field(default_factory=Counter)  # samples of other events, not folded


def fold_offcpu(
    inputs: Sequence[str],
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
) -> FoldedProfile:
    """Off-CPU time per stack (microseconds) of each recording in `inputs`, summed into one profile."""
    return fold_offcpu_totals(inputs, options, diagnostics, status).profile


def fold_offcpu_totals(
    inputs: Sequence[str],
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
    resolve: Resolver | None = None,
    recording_end: int | None = None,
    where: str | None = None,
) -> OffCpuFold:
    """`fold_offcpu`, with the totals as facts.

    `resolve` turns the threads a recording shows no record of into waits, where something outside
    the text (the live process) can tell; the others are named in the header. `recording_end` (ns,
    perf's clock) is when perf stopped, if known: waits still open then end there, not at the last record.
    `where` names the one input in messages on its lines (a scratch perf.data: not by a path gone when
    they are read; the error that nothing was found names the path, the file being kept then)."""
    progress = show_progress(status, "pairing") if status else None

    def lines_of(path: str) -> Iterator[bytes]:
        # The lines are read inside open_lines: a corrupt gzip or perf.data raised while the pairing reads
        # them is still turned into its one line by it (yielding the open iterator would read it outside).
        with open_lines(path, SCRIPT_OPTIONS, progress) as lines:
            yield from lines
        if status:
            status.clear()

    sources = ((where or label(path), lines_of(path)) for path in inputs or [STDIN])
    names = ", ".join(label(p) for p in inputs) or "<stdin>"
    return fold_offcpu_sources(sources, names, options, diagnostics, resolve, recording_end)


def fold_offcpu_sources(
    sources: Iterable[tuple[str, Iterable[bytes]]],
    names: str,
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    resolve: Resolver | None = None,
    recording_end: int | Callable[[], int | None] | None = None,
) -> OffCpuFold:
    """`fold_offcpu_totals` of (label, perf script lines) sources, each one recording: a streamed recording
    is one source whose lines come chunk after chunk (a wait spanning two chunks is one wait)."""
    options = options or OffCpuOptions()
    diagnostics = diagnostics or Diagnostics()
    collapser = SchedCollapser(options, diagnostics)
    folder = OffCpuFolder(options)
    silent: list[bytes] = []
    for where, lines in sources:
        # Pairing is sequential (a wait's two ends may be far apart): one process, reading perf
        # script's text as it is written, frames named through the same cache as `fold`.
        for wait in collapser.iter_waits(lines, where, recording_end):
            folder.add(wait)
        resolved = resolve(collapser.silent, collapser.last_window_ns) if resolve else []
        for wait in resolved:
            folder.add(wait)
        done = {wait.thread for wait in resolved}
        silent += [name for _, name in collapser.silent if name not in done]
    diagnostics.finish()
    totals = folder.totals(collapser.window_ns, collapser.lost, silent)
    profile = folder.profile(totals)
    if not profile.counts:
        raise NoSamples(f"{names}: {nothing_found(collapser.switches, totals, collapser.hidden_switch_ins)}")
    return OffCpuFold(profile, totals, collapser.skipped_by_event)


def nothing_found(switches: int, totals: OffCpuTotals, hidden_switch_ins: bool = False) -> str:
    """Why no off-CPU time is left: the filters (--state, --min-us) removed every wait, or the records
    held none (then how to record them, or to print them: `hidden_switch_ins`, perf script printed no
    switch-in though the recording may hold them)."""
    if totals.excluded:
        waits = sum(n for n, _ in totals.excluded.values())
        ns = sum(ns for _, ns in totals.excluded.values())
        why = "; ".join(f"{reason}: {_waits(n)}, {format_ns(t)}" for reason, (n, t) in sorted(totals.excluded.items()))
        return f"no off-CPU time left: --state/--min-us removed all {_waits(waits)}, {format_ns(ns)} ({why})"
    what = f"{switches:,} sched_switch records" if switches else "no sched_switch records"
    hint = "print it with `perf script --show-switch-events`" if hidden_switch_ins else None
    return f"no off-CPU time found ({what}; {hint or f'record with -e {EVENT} --switch-events'})"


def _waits(n: int) -> str:
    return f"{n:,} wait" if n == 1 else f"{n:,} waits"


def fold_offcpu_recording(
    recording: Recording,
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
    resolve: Resolver | None = None,
) -> OffCpuFold:
    """The fold of a fresh recording, its capture facts in the header after the off-CPU totals."""
    if resolve is not None:  # a recording where nothing switched has no timestamps: perf's run time then
        inner, seconds = resolve, recording.seconds
        resolve = lambda silent, window: inner(silent, window or int(seconds * 1e9))  # noqa: E731
    end = recording.stopped_ns  # perf records with -k CLOCK_MONOTONIC: the clock we read it from
    if (target := recorded_target(recording)) is not None:  # offcpu --wakers: all CPUs were recorded
        options = replace(options or OffCpuOptions(), target=target, wakers=True)
    fold = fold_offcpu_totals([str(recording.perf_data)], options, diagnostics, status, resolve, end, recording.label)
    profile = fold.profile
    captured = {k: v for k, v in recording.metadata.items() if k not in ("frequency", "event")}  # said above
    profile.metadata.update(captured)
    size = recording.perf_data.stat().st_size / 1e6
    if recording.seconds > 0:
        rate = size / recording.seconds
        profile.metadata["data"] = f"{size:,.1f} MB in {recording.seconds:.1f} s ({rate:,.1f} MB/s)"
    return fold
