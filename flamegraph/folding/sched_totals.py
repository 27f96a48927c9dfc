"""Sum off-CPU waits per stack, exactly (integer nanoseconds), and the totals the graph's header shows.

What it adds up are the `Wait`s of folding.perf_sched; what it gives is a FoldedProfile in
microseconds whose metadata read, for example:
    off-CPU: 7.630 s in 22,639 waits of 9 threads
    by state: S 6.602 s, R 1.003 s, D 25.0 ms
    by thread: python-25702 2.940 s, python-25709 1.720 s, ..., 3 more 12.0 ms
    clipped to the window: 1 wait open at the start (40.0 ms), 2 waits open at the end (1.2 s)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..io.folded import decode
from ..model import FoldedProfile
from .perf_sched import NEW, OPEN_AT_END, OPEN_AT_START, THROUGHOUT, WITHOUT_STACK, OffCpuOptions, Wait

# How the header names each kind of clipped wait, singular and plural, in this order.
CLIPPED = {
    OPEN_AT_START: ("wait open at the start", "waits open at the start"),
    NEW: ("new thread's first wait", "new threads' first waits"),
    OPEN_AT_END: ("wait open at the end", "waits open at the end"),
    THROUGHOUT: ("thread off-CPU throughout", "threads off-CPU throughout"),
}


def format_ns(ns: float) -> str:
    """A duration as people read it: '2.941 s', '12.3 ms', '85 µs'."""
    if ns >= 1e9:
        return f"{ns / 1e9:,.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.0f} µs"


def _join(totals: dict[bytes, int], limit: int) -> str:
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    shown = [f"{decode(name)} {format_ns(ns)}" for name, ns in ranked[:limit]]
    if len(ranked) > limit:
        rest = sum(ns for _, ns in ranked[limit:])
        shown.append(f"{len(ranked) - limit} more {format_ns(rest)}")
    return ", ".join(shown)


class OffCpuFolder:
    """Sums waits per stack (in nanoseconds, exactly) and keeps the totals the graph's header shows."""

    def __init__(self, options: OffCpuOptions) -> None:
        self.options = options
        self.states = {state.encode() for state in options.states} if options.states else None
        self.min_ns = int(options.min_us * 1000)
        self.ns_by_stack: dict[bytes, int] = {}
        self.by_state: dict[bytes, int] = {}
        self.by_thread: dict[bytes, int] = {}
        self.by_kind: dict[str, list[int]] = {}  # kind -> [waits, ns]
        self.by_waker: dict[bytes, int] = {}  # what ended the waits (with wakers): [timer], comm-tid... -> ns
        self.excluded: dict[str, list[int]] = {}  # reason -> [waits, ns]
        self.waits = 0

    def add(self, wait: Wait) -> None:
        if self.options.window is not None:
            wait = self.clip(wait, *self.options.window.ns())
            if not wait.ns:
                return  # outside the window asked for
        if self.states is not None and wait.state not in self.states:
            self._count(self.excluded, f"state {decode(wait.state)}", wait.ns)
            return
        if wait.ns < self.min_ns:
            self._count(self.excluded, f"shorter than {self.options.min_us:g} µs", wait.ns)
            return
        self._count(self.by_kind, wait.kind, wait.ns)
        if not wait.ns:
            return  # e.g. a thread whose first record opens the window: counted, but nothing to draw
        self.waits += 1
        self.ns_by_stack[wait.stack] = self.ns_by_stack.get(wait.stack, 0) + wait.ns
        self.by_state[wait.state] = self.by_state.get(wait.state, 0) + wait.ns
        self.by_thread[wait.thread] = self.by_thread.get(wait.thread, 0) + wait.ns
        if wait.waker:
            self.by_waker[wait.waker] = self.by_waker.get(wait.waker, 0) + wait.ns

    @staticmethod
    def clip(wait: Wait, start: int, end: int) -> Wait:
        """The part of `wait` inside [start, end]; a wait of unknown time spans the whole recording."""
        if not wait.end:
            return wait._replace(ns=min(wait.ns, max(0, end - start)))
        overlap = min(wait.end, end) - max(wait.end - wait.ns, start)
        return wait._replace(ns=max(0, overlap))

    @staticmethod
    def _count(table: dict[str, list[int]], key: str, ns: int) -> None:
        entry = table.setdefault(key, [0, 0])
        entry[0] += 1
        entry[1] += ns

    def profile(self, totals: OffCpuTotals | None = None) -> FoldedProfile:
        """The waits per stack in microseconds; the header shows `totals` (those of `totals()` by default)."""
        counts = {decode(stack): _microseconds(ns) for stack, ns in self.ns_by_stack.items()}
        totals = totals or self.totals()
        window = totals.window_ns / 1000 or None  # typed: the renderer tells idle threads with it
        return FoldedProfile(counts, "microseconds", "sched:sched_switch", totals.metadata(), window_us=window)

    def totals(self, window_ns: int = 0, lost: int = 0, silent: Sequence[bytes] = ()) -> OffCpuTotals:
        return OffCpuTotals(
            self.waits,
            dict(self.by_state),
            dict(self.by_thread),
            {kind: (n, ns) for kind, (n, ns) in self.by_kind.items()},
            {why: (n, ns) for why, (n, ns) in self.excluded.items()},
            window_ns,
            lost,
            tuple(silent),
            dict(self.by_waker),
        )


@dataclass(frozen=True)
class OffCpuTotals:
    """What the off-CPU fold found, as facts (integer nanoseconds); `metadata()` is the header's text."""

    waits: int
    by_state: dict[bytes, int]
    by_thread: dict[bytes, int]
    by_kind: dict[str, tuple[int, int]]  # kind of wait -> (waits, ns), counted before the 0-length ones
    excluded: dict[str, tuple[int, int]]  # reason -> (waits, ns) left out by --state or --min-us
    window_ns: int = 0  # the recording's length
    lost: int = 0  # events perf lost
    silent: tuple[bytes, ...] = ()  # threads with no switch in the window
    by_waker: dict[bytes, int] | None = None  # offcpu --wakers: what ended the waits -> ns

    THREADS_SHOWN = 8

    @property
    def total_ns(self) -> int:
        return sum(self.by_state.values())

    def terminal(self) -> dict[str, str]:
        """The totals as the recording commands print them (the window is in their first line)."""
        meta = self.metadata()
        order = [*(key for key in meta if key not in ("window", "excluded", "lost events")), "excluded", "lost events"]
        return {key: meta[key] for key in order if key in meta}

    def metadata(self) -> dict[str, str]:
        """The totals as the graph's header shows them."""
        meta = {
            "off-CPU": f"{format_ns(self.total_ns)} in {self.waits:,} waits of {len(self.by_thread):,} threads",
            "by state": _join(self.by_state, len(self.by_state)),
            "by thread": _join(self.by_thread, self.THREADS_SHOWN),
        }
        if self.by_waker:
            meta["woken by"] = _join(self.by_waker, self.THREADS_SHOWN)
        if self.window_ns:
            meta["window"] = format_ns(self.window_ns)
        clipped = [
            f"{n:,} {words[n != 1]} ({format_ns(ns)})"
            for kind, words in CLIPPED.items()
            if kind in self.by_kind
            for n, ns in [self.by_kind[kind]]
        ]
        if clipped:
            meta["clipped to the window"] = ", ".join(clipped)
        if WITHOUT_STACK in self.by_kind:
            n, ns = self.by_kind[WITHOUT_STACK]
            meta["without stack"] = f"{n:,} waits seen only as PERF_RECORD_SWITCH ({format_ns(ns)})"
        if self.excluded:
            meta["excluded"] = ", ".join(
                f"{n:,} waits {why} ({format_ns(ns)})" for why, (n, ns) in sorted(self.excluded.items())
            )
        if self.silent:
            names = ", ".join(decode(name) for name in sorted(self.silent)[: self.THREADS_SHOWN])
            more = f" and {len(self.silent) - self.THREADS_SHOWN} more" if len(self.silent) > self.THREADS_SHOWN else ""
            meta["no switch in the window"] = f"{names}{more} (blocked, or running, throughout: not drawn)"
        if self.lost:
            meta["lost events"] = f"{self.lost:,} (some waits are missing or unpaired)"
        return meta


def _microseconds(ns: int) -> float:
    return ns // 1000 if ns % 1000 == 0 else round(ns / 1000, 3)
