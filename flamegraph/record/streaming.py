"""Whether a recording folds while perf records (the default: raw data on disk bounded) or is recorded whole.

`record` and `offcpu` stream by default, at most DEFAULT_MAX_SPOOL of raw data on disk (flamegraph.record.spool);
`--max-spool SIZE` sets the cap, `--max-spool 0` records whole. What reads the whole perf.data after the run
cannot stream yet: the recording is then whole, and one line says which option and why.

    plan = streaming_plan("--max-spool" text or None, every, blockers(...))   # Plan(cap, note)
    plan.cap    # bytes: fold while recording; None: record whole
    plan.note   # the one line to print when the recording is whole though streaming was the default or asked
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..io.diagnostics import BadOption
from .command import python_target
from .spool import MIN_CAP, parse_size

if TYPE_CHECKING:
    from .spec import RecordSpec

DEFAULT_MAX_SPOOL = "256M"
WHOLE = ("0", "off")  # --max-spool 0: record whole (the raw data on disk is not bounded)

# Why each option needs the whole perf.data (the text after "--OPTION: ").
WHY = {
    "--perf-data": "keeps the whole raw recording, as asked",
    "--jit --pid": "a running process's kernels are located from outside once the recording ends",
    "Python frames": "off-CPU pairing reads one stream of chunks; their Python frames are not injected per chunk yet",
    "--memory": "the allocation probes' records are folded from the whole recording",
    "exports": "--speedscope/--pprof/--chrome-trace read the samples in time order after the run",
    "--wakers": "each wait is joined to its waker over the whole system-wide recording, then filtered to the target",
}


@dataclass(frozen=True)
class Plan:
    cap: int | None  # bytes of raw data on disk at most (streamed); None: recorded whole
    note: str | None = None  # why it is recorded whole, when streaming was the default or asked


def python_frames_on(python: bool | None, command: Sequence[str], env: Mapping[str, str] | None = None) -> bool:
    """Python frames will be recorded: a command that runs Python 3.12+, unless --no-python."""
    if python is False or not command:
        return False
    target = python_target(command, {**os.environ, **(env or {})})
    return target is not None and target.version >= (3, 12)


def offcpu_blockers(spec: RecordSpec, perf_data: bool, exports: bool, python: bool | None) -> list[str]:
    """What of an off-CPU recording needs the whole perf.data (keys of WHY): --wakers read from the spec."""
    from .offcpu import WAKEUP, WAKING

    wakers = any(arg in (WAKING, WAKEUP) for arg in spec.options.extra_args)
    used = (("--perf-data", perf_data), ("exports", exports),
            ("Python frames", python_frames_on(python, spec.command)), ("--wakers", wakers))  # fmt: skip
    return [name for name, on in used if on]


def streaming_plan(max_spool: str | None, every: float | None, blockers: Sequence[str]) -> Plan:
    """The cap (None: whole) for `--max-spool` (None: the default), `--every`, and the options in use that
    need the whole perf.data (keys of WHY); a bad size, or --every with a blocker, is a BadOption."""
    if max_spool is not None and max_spool.strip().lower() in WHOLE:
        if every is not None:
            raise BadOption("--every folds while recording: not with --max-spool 0")
        return Plan(None)
    try:
        cap = parse_size(max_spool or DEFAULT_MAX_SPOOL)
    except ValueError as err:
        raise BadOption(f"--max-spool: {err}") from None
    if cap < MIN_CAP:
        raise BadOption(f"--max-spool {max_spool!r}: less than {MIN_CAP // 10**6}M (0: record whole)")
    if not blockers:
        return Plan(cap)
    if every is not None:
        raise BadOption(f"--every folds while recording: not with {', '.join(blockers)} ({WHY[blockers[0]]})")
    return Plan(None, whole_note(blockers, asked=max_spool is not None))


def whole_note(blockers: Sequence[str], asked: bool) -> str:
    """The line that says the recording is whole, and which options in use (keys of WHY) need that;
    `asked`: --max-spool was given (else streaming was only the default)."""
    applied = "--max-spool not applied" if asked else "not folded while recording"
    why = "; ".join(f"{name}: {WHY[name]}" for name in blockers)
    return f"note: recorded whole, {applied}, the raw data on disk is not bounded ({why})"
