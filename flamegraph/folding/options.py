"""What a fold is asked to do: stackcollapse-perf.pl's options plus ours, and the frame hook's type."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

# (address, symbol, DSO) of a frame -> a replacement symbol, or None to keep it. Called once per
# distinct frame (never with --compat); flamegraph.naming.observer.FrameObserver groups [unknown] frames of
# readable DSOs by function with it (--group-unknown) and notes which frames are JIT code.
FrameHook = Callable[[bytes, bytes, bytes], bytes | None]
# (sample header line, folded frame names leaf first) -> the frame names to fold, leaf first. Called
# once per kept sample record (never with --compat), so a fold with one runs in one process; it can
# add frames from the sample's time and thread (flamegraph.frameworks.mxnet's operator frames). None costs nothing.
SampleHook = Callable[[bytes, list[bytes]], list[bytes]]


class FoldOptions(NamedTuple):
    """stackcollapse-perf.pl's options, with their meaning, plus ours (`options._replace(tid=True)`: a copy
    with one changed). A NamedTuple, not a frozen dataclass: `dataclasses` imports `inspect`, a fifth
    of `fold`'s start-up."""

    pid: bool = False  # comm-PID as the root frame
    tid: bool = False  # comm-PID/TID as the root frame
    annotate_kernel: bool = False  # suffix kernel frames with _[k] (stackcollapse-perf.pl --kernel)
    annotate_jit: bool = False  # suffix JIT frames with _[j] (stackcollapse-perf.pl --jit)
    addrs: bool = False  # [dso <addr>] instead of [dso] for unknown symbols
    event_filter: str | None = None  # fold only this event (default: the first one seen)
    per_event: bool = False  # fold every event separately (no filtering)
    compat: bool = False  # reproduce the reference byte for byte, including the records it loses
    srcline: bool = False  # append each frame's source line (perf script -F +srcline) as ':file:line'
    frame_hook: FrameHook | None = None  # see FrameHook; ignored with compat
    sample_hook: SampleHook | None = None  # see SampleHook; ignored with compat

    @classmethod
    def with_all(cls, **kwargs: object) -> FoldOptions:
        return cls(annotate_kernel=True, annotate_jit=True, **kwargs)  # type: ignore[arg-type]
