"""The facts a fleet recording passes around: what to record, what each host sent back, what is missing.

Plain dataclasses (picklable, no Dask): the client builds a `HostRequest`, each host answers with a
`HostResult` (kilobytes: folded stacks and figures, never perf.data), and the client turns hosts
that did not answer into `HostResult`s too, so the merge and the header see one list.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..record.spec import DEFAULT_CALL_GRAPH, DEFAULT_EVENT, DEFAULT_FREQ

if TYPE_CHECKING:
    from ..model import FoldedProfile

# HostResult.state
OK = "ok"
FAILED = "failed"  # the host answered with an error (no perf, not permitted, no matching process...)
MISSING = "missing"  # the host did not answer (its worker died, or it hung past the deadline)


@dataclass(frozen=True)
class Target:
    """What to record on every host: processes whose command line matches `match`, the whole machine
    (`all_cpus`), or `command` launched there. Each is data: the pattern is compiled by Python's `re`,
    the command is an argv list run without a shell."""

    match: str | None = None
    all_cpus: bool = False
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if sum((self.match is not None, self.all_cpus, bool(self.command))) != 1:
            raise ValueError("Target needs exactly one of match, all_cpus and command")

    def describe(self) -> str:
        if self.match is not None:
            return f"processes whose command line matches /{self.match}/"
        if self.all_cpus:
            return "the whole machine (all CPUs)"
        return f"launched on each host: {shlex.join(self.command)}"


@dataclass(frozen=True)
class HostRequest:
    """One host's task: record `target` for `duration` seconds and fold it as `flamegraph record` folds
    (flamegraph.pipeline.oncpu: grouped by build-id and attributed where the binaries are)."""

    target: Target
    duration: float
    event: str = DEFAULT_EVENT
    freq: int | None = DEFAULT_FREQ  # None: every event (a tracepoint)
    call_graph: str = DEFAULT_CALL_GRAPH
    jit: bool = False
    mxnet: bool = False  # --mxnet: operator and primitive frames (a launched Python command)
    threads: bool = False
    group_unknown: bool = True


@dataclass(frozen=True)
class HostIdentity:
    """Who a worker is: its host (workers with the same host record once) and how we know it."""

    host: str
    simulated: bool = False  # the name came from FLAMEGRAPH_FLEET_HOST, not from the machine
    flamegraph: str = ""  # the flamegraph version installed there


@dataclass
class HostResult:
    """What one host sent back, or why it sent nothing."""

    host: str
    state: str  # OK, FAILED or MISSING
    worker: str = ""  # the worker that recorded (others on the same host did not)
    workers: int = 1  # workers of the cluster on this host
    simulated: bool = False
    profile: FoldedProfile | None = None  # folded stacks + capture facts + attribution figures
    reason: str = ""  # why FAILED or MISSING, one line
    exit_code: int | None = None  # the error's exit code when FAILED
    command_status: int | None = None  # the launched command's status when it ended by itself non-zero (-N: signal N)
    pids: tuple[int, ...] = ()  # the matched processes (--match)
    seconds: float = 0.0  # recording time
    perf_cpu: float | None = None  # CPU seconds perf itself used there (None: not measurable)
    notes: list[str] = field(default_factory=list)  # what `flamegraph record` would have printed there

    @property
    def samples(self) -> float:
        return self.profile.total if self.profile is not None else 0.0
