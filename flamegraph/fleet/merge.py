"""Many hosts' profiles -> one: summed stacks (or one root frame per host), and the per-host table.

The header of the merged graph says, one line per host: its samples and share, how long it
recorded, perf's own CPU time where it can be measured, the attribution figures computed on that
host, its perf and kernel, and for a host that is missing, why. Capture facts that every host
shares are shown once.
"""

from __future__ import annotations

from ..model import FoldedProfile
from .hosts import HOST_VARIABLE
from .model import OK, HostResult

SHARED_FACTS = ("event", "frequency", "call graph")
ATTRIBUTION = (
    ("stacks reaching a thread root", "roots"),
    ("samples with [unknown] frames", "[unknown]"),
    ("JIT code", "JIT"),
)


def root_frame(host: str) -> str:
    """A host's name as a root frame: ';' separates frames and a blank ends the stack in folded text."""
    return "".join("_" if ch == ";" or ch.isspace() else ch for ch in host) or "_"


def merge_hosts(results: list[HostResult], per_host: bool = False) -> FoldedProfile:
    """The hosts that answered, summed; with `per_host` each host's stacks under a root frame of its name."""
    merged = FoldedProfile()
    for result in results:
        if result.state != OK or result.profile is None:
            continue
        merged.event = merged.event or result.profile.event
        prefix = root_frame(result.host) + ";" if per_host else ""
        for stack, weight in result.profile.counts.items():
            merged.add(prefix + stack, weight)
    return merged


def fleet_metadata(results: list[HostResult], target: str, scheduler: str, duration: float) -> dict[str, str]:
    """The merged graph's header: the fleet, the target, the shared facts, one line per host."""
    answered = [r for r in results if r.state == OK]
    meta = {
        "fleet": f"{len(answered)} of {len(results)} host{'s' * (len(results) != 1)} answered ({scheduler})",
        "target": target,
        "duration asked": f"{duration:g} s",
    }
    profiles = [r.profile for r in answered if r.profile is not None]
    for key in SHARED_FACTS:
        values = {p.metadata.get(key) for p in profiles}
        if len(values) == 1 and None not in values:
            meta[key] = values.pop()  # type: ignore[assignment]
    total = sum(r.samples for r in answered) or 1.0
    for result in results:
        meta[f"host {result.host}"] = host_line(result, total)
    missing = [r for r in results if r.state != OK]
    if missing:
        meta["missing"] = "; ".join(f"{r.host} ({r.reason})" for r in missing)
    simulated = [r.host for r in results if r.simulated]
    if simulated:
        meta["simulated hosts"] = (
            f"{', '.join(simulated)}: names set by {HOST_VARIABLE}, not the machine's (several may share one machine)"
        )
    return meta


def host_line(result: HostResult, total: float) -> str:
    """One row of the per-host table."""
    workers = f" · {result.workers} workers on this host, recorded once" if result.workers > 1 else ""
    if result.state != OK or result.profile is None:
        return f"{result.state}: {result.reason}{workers}"
    meta = result.profile.metadata
    parts = [f"{result.samples:,.0f} samples ({100 * result.samples / total:.1f} %)"]
    if result.pids:
        parts.append(f"{len(result.pids)} process{'es' * (len(result.pids) != 1)}")
    parts.append(f"recorded {result.seconds:.1f} s")
    if result.perf_cpu is not None:
        share = 100 * result.perf_cpu / result.seconds if result.seconds else 0.0
        parts.append(f"perf CPU {result.perf_cpu:.2f} s ({share:.1f} % of one CPU)")
    else:
        parts.append("perf CPU not measurable (mixed with the launched command's)")
    figures = [f"{label} {meta[key]}" for key, label in ATTRIBUTION if key in meta]  # as the host wrote them
    if figures:
        parts.append(", ".join(figures))
    parts.append(f"perf {meta.get('perf', 'unknown')}, kernel {meta.get('kernel', 'unknown')}")
    return " · ".join(parts) + workers
