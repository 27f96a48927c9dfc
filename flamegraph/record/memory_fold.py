"""From a `record --memory` recording to bytes per stack: `perf script` of the probes, weighed by
collapse.memory, folded by the one perf-script collapser (frames named as on-CPU: JIT, [unknown]
grouped by function, --mxnet's operators through its sample hook).

    profile = fold_memory_recording(recording, probes, window, status)   # unit "bytes", facts in metadata
"""

from __future__ import annotations

from ..folding.allocations import AllocationWeigher, MemoryTotals
from ..folding.perf import FoldOptions, PerfCollapser, SampleHook
from ..folding.stage import open_lines
from ..io.diagnostics import Diagnostics, NoSamples
from ..model import FoldedProfile
from ..naming.grouping import grouping_note, namer_for_recording
from ..naming.observer import FrameObserver
from ..render.text import format_bytes
from ..window import Window
from .memory import MemoryProbes, MemoryRequest
from .script import script_args, show_progress
from .spec import Recording
from .status import Status

MEMORY_FIELDS = "comm,pid,tid,time,event,trace,ip,sym,dso"
UNIT = "bytes"
RAISED = "limit reached"  # the capture fact of what --memory-max-rate did


def fold_memory_recording(
    recording: Recording,
    probes: MemoryProbes,
    window: Window | None = None,
    status: Status | None = None,
    threads: bool = False,
    group_unknown: bool = True,
    sample_hook: SampleHook | None = None,
) -> FoldedProfile:
    """Bytes requested (alloc) or still held (live) per allocation stack; what was probed and seen in the facts."""
    status = status or Status()
    namer = namer_for_recording(str(recording.perf_data)) if group_unknown else None
    options = FoldOptions.with_all(tid=threads, frame_hook=FrameObserver(namer), sample_hook=sample_hook)
    diagnostics = Diagnostics()
    collapser = PerfCollapser(options, diagnostics)
    request = probes.request
    sampler = str(probes.sampler) if probes.sampler is not None else ""
    weigher = AllocationWeigher(probes.group, request.mode, probes.library, sampler, probes.wrappers())
    label = str(recording.perf_data)
    try:
        args, progress = script_args(recording, window, MEMORY_FIELDS), show_progress(status, "weighing")
        with open_lines(label, args, progress) as lines:
            collapser.feed_lines(weigher.iter_weighted(lines), label)
            collapser.end_input()
    finally:
        status.clear()
    diagnostics.finish()
    if (note := grouping_note(namer)) is not None:
        status.note(note)
    profile = collapser.profile()
    totals = weigher.totals
    if not profile.counts:
        what = "still allocated at the end" if request.mode == "live" else "allocated"
        unseen = ""
        if probes.sampler is not None and not totals.processes:
            unseen = "; no process had the sampling allocator loaded (LD_PRELOAD ignored or cleared by the program?)"
        raise NoSamples(f"{label}: no bytes {what} ({calls_text(totals)}{unseen})")
    profile.unit = UNIT
    profile.event = "bytes allocated" if request.mode == "alloc" else "bytes still allocated at the end"
    raised = raised_interval(totals, request)
    if request.sample:
        profile.event += f" ({request.rate()}{f'; {RAISED}: {raised}' if raised else ''})"
    profile.metadata.update({k: v for k, v in recording.metadata.items() if k not in ("event", "frequency")})
    profile.metadata.update(probes.facts())
    profile.metadata.update(memory_facts(totals, recording.seconds, request.mode, probes.sampler is not None))
    if raised:
        profile.metadata[RAISED] = raised
    if window is not None:
        profile.metadata["window"] = window.format()
    return profile


def raised_interval(totals: MemoryTotals, request: MemoryRequest) -> str | None:
    """What the samples-per-second limit did, in the graph's words: None when every sample was drawn at
    the mean asked for."""
    raised = {mean: count for mean, count in totals.means.items() if mean > request.sample}
    if not raised:
        return None
    low, high = format_bytes(min(raised)), format_bytes(max(raised))
    span = low if low == high else f"{low}–{high}"
    share = 100 * sum(raised.values()) / sum(totals.means.values())
    return f"interval raised to {span} for {share:.0f} % of the samples"


def memory_subtitle(subtitle: str | None, profile: FoldedProfile) -> str | None:
    """The graph's subtitle with the interval the limit raised to, when it did (the rate the graph says is
    the rate the samples were taken at)."""
    raised = profile.metadata.get(RAISED)
    return f"{subtitle}; {RAISED}: {raised}" if subtitle and raised else subtitle


def calls_text(totals: MemoryTotals, sampled: bool = False) -> str:
    what = "samples" if sampled else "calls"
    if not totals.calls:
        return f"no allocation {what} recorded"
    parts = ", ".join(f"{api} {count:,}" for api, count in totals.calls.most_common())
    return f"{sum(totals.calls.values()):,} {what} recorded: {parts}"


def memory_facts(totals: MemoryTotals, seconds: float, mode: str, sampled: bool = False) -> dict[str, str]:
    """The weighing's totals as capture facts (the rate: calls recorded per second)."""
    calls = sum(totals.calls.values())
    rate = f" ({calls / seconds:,.0f}/s)" if seconds > 0 else ""
    facts = {"allocation calls": calls_text(totals, sampled) + rate}
    if sampled:
        facts["sampled processes"] = f"{totals.processes:,} with the sampling allocator loaded"
    left = []
    if totals.nested:
        left.append(f"{totals.nested:,} the allocator's own inner calls (counted once, as the outer call)")
    if totals.internal:
        left.append(f"{totals.internal:,} anonymous mmaps of the C library itself (arenas, thread stacks)")
    if totals.not_anonymous:
        left.append(f"{totals.not_anonymous:,} mmaps of files")
    if left:
        facts["not counted"] = "; ".join(left)
    if mode == "live":
        facts["live"] = f"{totals.live:,} allocations still held at the end, {totals.freed:,} freed"
        if totals.unpaired:
            facts["unpaired"] = f"{totals.unpaired:,} posix_memalign calls whose address perf cannot read (not drawn)"
    return facts
