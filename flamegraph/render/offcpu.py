"""The off-CPU view of a profile in microseconds: what to draw, and what to say about its threads.

- A thread idle for (nearly) the whole window in one stack has that stack left out (unless
  `--show-idle`): one summary line says whose and how long, so the graph shows the waits that vary.
  Its other waits are drawn: a main thread that wrote to disk, then joined its workers, keeps its writes.
- Root frames carry the thread's role: `python-3677 (main)`.
- The per-thread totals are a table in the capture facts (not a line that wraps).
- The self table lists the functions that blocked, not the states every stack ends with.
The folded data itself is never changed: this is a view, computed from the counts and the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..analysis.offcpu_threads import (
    SEP,
    ThreadTotal,
    blocked_part,
    blocking_frame,
    is_state,
    label_roots,
    thread_roles,
    thread_totals,
)
from ..model import FoldedProfile
from .facts import Table
from .text import format_duration_us, format_percent

THREADS_IN_TABLE = 40


@dataclass
class OffCpuView:
    counts: dict[str, float]  # what to draw: roots labelled, idle stacks left out unless asked for
    threads: list[ThreadTotal]
    idle: list[ThreadTotal] = field(default_factory=list)  # threads whose idle stack is left out of the drawing
    window: float | None = None

    def summary(self) -> list[str]:
        """The idle line for the header (empty when nothing was left out): what was left out, and
        what of those threads is still drawn."""
        if not self.idle or not self.window:
            return []
        hidden = sum(thread.largest for thread in self.idle)
        roles: dict[str, int] = {}
        for thread in self.idle:
            role = thread.role or "other"
            roles[role] = roles.get(role, 0) + 1
        kinds = ", ".join(f"{n} {role}" for role, n in sorted(roles.items(), key=lambda item: (-item[1], item[0])))
        count = len(self.idle)
        least = math.floor(100 * min(thread.largest for thread in self.idle) / self.window)  # never overstated
        line = (
            f"Not drawn: the idle stack of {count} thread{'s' if count != 1 else ''} ({kinds}; "
            f"{format_duration_us(hidden)}), {'each ' if count != 1 else ''}"
            f"{'the whole window' if least >= 100 else f'≥ {least} % of the window'} "
            f"(--show-idle draws {'them' if count != 1 else 'it'})"
        )
        others = sum(thread.stacks - 1 for thread in self.idle)
        if others:
            rest = sum(thread.total - thread.largest for thread in self.idle)
            whose, plural = "their" if count != 1 else "its", "s" if others != 1 else ""
            line += f"; {whose} other waits are drawn ({others:,} stack{plural}, {format_duration_us(rest)})"
        return [line]

    def thread_table(self) -> Table:
        rows = []
        for thread in self.threads[:THREADS_IN_TABLE]:
            share = f"{format_percent(thread.total, self.window)} %" if self.window else "-"
            note = "idle" if thread.idle else ""
            if thread in self.idle:
                note = "idle, not drawn" if thread.stacks == 1 else "idle stack not drawn"
            rows.append(
                (format_duration_us(thread.total), share, f"{thread.stacks:,}", thread.thread, thread.role or "", note)
            )
        if len(self.threads) > THREADS_IN_TABLE:
            rest = self.threads[THREADS_IN_TABLE:]
            rows.append((format_duration_us(sum(t.total for t in rest)), "", "", f"{len(rest)} more threads", "", ""))
        window = f" of the {format_duration_us(self.window)} window" if self.window else ""
        return Table(
            f"Off-CPU time per thread{window}",
            ("off-CPU", "of window", "stacks", "thread", "role", ""),
            rows,
            ("end", "end", "end", "start", "start", "start"),
        )


def thread_label(thread: ThreadTotal) -> str:
    return f"{thread.thread} ({thread.role})" if thread.role else thread.thread


def offcpu_view(profile: FoldedProfile, show_idle: bool) -> OffCpuView:
    window = profile.window_us
    threads = thread_totals(profile.counts, window)
    idle = [thread for thread in threads if thread.idle]
    if show_idle or len(idle) == len(threads):  # all idle: nothing varies, draw them all
        idle = []
    hidden = {thread.largest_stack for thread in idle}  # their other stacks are drawn
    labels = {}
    roles = thread_roles(profile.counts)  # wakers too: a thread that only woke others has no root
    for waker, role in roles.items():
        labels[waker] = f"{waker} ({role})"
    for thread in threads:
        if thread.role:
            labels[thread.thread] = f"{thread.thread} ({thread.role}{', idle' if thread.idle else ''})"
        elif thread.idle:
            labels[thread.thread] = f"{thread.thread} (idle)"
    kept = {stack: weight for stack, weight in profile.counts.items() if stack not in hidden}
    return OffCpuView(label_roots(kept, labels), threads, idle, window)


def blocked_in(counts: Mapping[str, float], limit: int, wall: bool = False) -> list[tuple[str, float]]:
    """The functions that blocked, with their state ('mxnet::...::WaitForVar [S]'), heaviest first."""
    weights: dict[str, float] = {}
    for stack, weight in counts.items():
        frames = blocked_part(stack.split(SEP))
        if wall and not is_state(frames[-1]):
            continue  # record --wall: what ran did not block  # record --wall: an on-CPU stack, not a wait
        state = frames[-1] if is_state(frames[-1]) else ""
        name = blocking_frame(frames) + (f" {state}" if state else "")
        weights[name] = weights.get(name, 0.0) + weight
    return sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:limit]
