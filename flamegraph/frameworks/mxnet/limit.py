"""In the profiled process: the instruments' files kept under their caps (`record --mxnet`, streamed).

MXNet's trace (~10 MB/s for the MLP) and oneDNN's verbose log (~1.7 MB/s) grow with the run. With caps
(FLAMEGRAPH_MXNET_CAPS, set by the hook from `--max-spool`: hook.py), a daemon thread watches both
files' sizes every POLL_S; when one comes within its headroom of its cap it calls `stop` once, which
stops both instruments (inprocess.py: the profiler stopped and dumped whole, fd 1 to /dev/null), so the
files are complete up to one moment and nothing grows after it. The headroom is what may still arrive
after the decision: a second and a half of the fastest growth seen over a second (MXNet dumps the
events it holds once a second; the drainers empty their pipes every 10 and 50 ms). Should a burst
still pass a cap, the drainer writes no byte beyond it (drain.py): the cap is a bound, the headroom
only keeps the file whole. With segments read by flamegraph as the run goes, flamegraph may also ask for
the stop (segments.py's STOP_REQUEST, a file it creates in the directory: its readers' memory passed its
budget): the watch stops the instruments the same way, once. Standard library only.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .segments import present_bytes

CAPS = "FLAMEGRAPH_MXNET_CAPS"  # "TRACE_BYTES,LOG_BYTES": the profiler's trace, the verbose log
POLL_S = 0.25
GROWTH_WINDOW_S = 1.0  # growth is measured over this long (MXNet dumps once a second: one dump's bytes)
HEADROOM_RATE_S = 1.5  # seconds of the fastest growth seen kept free under the cap


@dataclass(frozen=True)
class Cap:
    label: str  # "MXNet's trace", "oneDNN's verbose log"
    path: str
    limit: int  # bytes
    segmented: bool = False  # written in segments (segments.py): the cap bounds those not read yet
    requested: bool = False  # not a file's cap: flamegraph asked for the stop (its readers' memory budget)

    def size(self) -> int:
        """Bytes on disk: the file's, or its segments' that flamegraph has not read yet."""
        if self.segmented:
            return present_bytes(os.path.dirname(self.path), os.path.basename(self.path))
        return os.stat(self.path).st_size



def headroom(rate: float) -> float:
    """Bytes kept free under a cap for a file growing at up to `rate` bytes a second."""
    return HEADROOM_RATE_S * rate


class Growth:
    """The fastest growth of a size seen over GROWTH_WINDOW_S, from (time, size) readings."""

    def __init__(self) -> None:
        self.history: list[tuple[float, int]] = []
        self.fastest = 0.0  # bytes a second

    def add(self, now: float, size: int) -> float:
        history = self.history
        history.append((now, size))
        while len(history) > 1 and now - history[0][0] > GROWTH_WINDOW_S:
            history.pop(0)
        if len(history) > 1:
            rate = (size - history[0][1]) / max(now - history[0][0], GROWTH_WINDOW_S)
            self.fastest = max(self.fastest, rate)
        return self.fastest


class Limits:
    """Watches the files of `caps`; calls `stop(cap, size)` once, for the first that nears its limit (or,
    when the file `request` appears, for flamegraph's request)."""

    def __init__(self, caps: list[Cap], stop: Callable[[Cap, int], None], request: str | None = None) -> None:
        self.caps, self.stop, self.request = caps, stop, request
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.lock = threading.Lock()  # held while the instruments are stopped: the exit handler waits for it

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="flamegraph-limits", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """No more checks (at exit, before the exit handler dumps): a stop under way is finished first."""
        self._stopping.set()
        with self.lock:
            pass

    def _watch(self) -> None:
        growth = {cap.path: Growth() for cap in self.caps}
        while not self._stopping.wait(POLL_S):
            now = time.monotonic()
            if self.request is not None and os.path.lexists(self.request):
                self._stop(Cap("flamegraph's readers", self.request, 0, segmented=True, requested=True), 0)
                return
            for cap in self.caps:
                try:
                    size = cap.size()
                except OSError:
                    continue
                if size + headroom(growth[cap.path].add(now, size)) >= cap.limit:
                    self._stop(cap, size)
                    return

    def _stop(self, cap: Cap, size: int) -> None:
        with self.lock:
            if not self._stopping.is_set():
                self._stopping.set()
                self.stop(cap, size)


TRACE_SHARE = 7 / 8  # of the budget: the MLP's trace grows ~6 times as fast as its log (~10 and ~1.7 MB/s)


def split_budget(budget: int) -> tuple[int, int]:
    """(trace, log) caps of a `budget` of bytes for both files (`--max-spool`'s SIZE)."""
    trace = int(budget * TRACE_SHARE)
    return trace, budget - trace


def capped_text(capped: dict[str, object], total: float | None) -> str:
    """One line on what a cap cut, from the sidecar's "capped" (and the process's run time in seconds)."""
    size, limit, seconds = capped.get("size"), capped.get("cap"), capped.get("seconds")
    of_total = f" of {_seconds(total)}" if total else ""
    if capped.get("requested"):  # (size and cap: the readers' bytes held and their budget, filled in by the hook)
        figures = (
            f"flamegraph's readers held {_mb(size)} of spans and executions, over their {_mb(limit)} budget"
            f" (--max-spool), at {_seconds(seconds)}{of_total}"
        )
    else:
        behind = bool(capped.get("segments"))  # segments read as the run went: flamegraph's reader fell behind
        what = f"{capped.get('file')}: the segments not read yet" if behind else capped.get("file")
        figures = (
            f"{what} neared {'the' if behind else 'its'} {_mb(limit)} cap ({_mb(size)}) at {_seconds(seconds)}"
            + of_total
            + (" (flamegraph's reader fell behind)" if behind else "")
        )
    return f"{figures}: MXNet's profiler and oneDNN's verbose log stopped; operators and primitives named up to then"


def _mb(value: object) -> str:
    if not isinstance(value, int | float):
        return "?"
    return f"{value / 1e6:.1f} MB" if value < 1e6 else f"{value / 1e6:,.0f} MB"  # (a test's small caps: not "0 MB")


def _seconds(value: object) -> str:
    return f"{value:,.0f} s" if isinstance(value, int | float) and value >= 10 else (
        f"{value:.1f} s" if isinstance(value, int | float) else "? s")
