"""The on-CPU pipeline: record (with the --jit/--python and --mxnet hooks, or --memory's probes) -> fold
with the attribution report -> write the folded text, the SVG, the PNG -> the exports.

    request = OnCpuRequest(RecordSpec(command=("python", "train.py")), window=Window.parse("12,20"))
    result = record_oncpu(request, Outputs(svg=Path("out.svg"), render=RenderOptions(title="train")), Status())
    result.recording, result.profile, result.written.svg

`flamegraph record` runs `record_oncpu`; `fleet record` (on each host, its own scratch directory and
stopper around perf) and the `make` recipes (their own hooks) run its steps: `RecordHooks` then
`record_hooked` then `fold_oncpu`, then `write_outputs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .outputs import Outputs, Written

if TYPE_CHECKING:
    from ..folding.perf import FoldOptions
    from ..frameworks.jit.hook import JitHook
    from ..frameworks.mxnet.hook import MxnetHook
    from ..model import FoldedProfile
    from ..record import RecordHook, Recording, RecordSpec, Status
    from ..record.memory import MemoryProbes, MemoryRequest, Probe
    from ..window import Window


@dataclass(frozen=True)
class OnCpuRequest:
    """What to record (`spec`: a command or a pid, and how) and how to fold it."""

    spec: RecordSpec
    window: Window | None = None  # keep the samples in this span of perf's clock
    threads: bool = False  # one root per thread (comm-pid/tid)
    group_unknown: bool = True  # [unknown] frames named by function where the build-ids match
    keep_interpreter: bool = False  # CPython's frames between two Python functions stay
    jit: bool = False  # oneDNN's JIT kernels named and unwound
    python: bool | None = None  # Python 3.12+ frames: None = when the command runs one
    mxnet: bool = False  # [op] and [dnnl] frames (a launched Python command)
    memory: MemoryRequest | None = None  # bytes, not time: allocation probes
    perf_data: Path | None = None  # keep perf.data here (default: scratch, kept only when a later step fails)
    whole_note: str | None = None  # why it is recorded whole (record.streaming), said once perf has recorded


@dataclass
class OnCpuResult:
    """A recording, its folded profile (the capture facts and the report's figures in `metadata`), the files."""

    recording: Recording
    profile: FoldedProfile
    written: Written


@dataclass
class RecordHooks:
    """The record hooks of one recording: --jit/--python's and --mxnet's. A context manager: the perf maps
    the JIT hook wrote go once every perf script pass (folds, exports) has read them."""

    jit: JitHook | None = None
    mxnet: MxnetHook | None = None

    @classmethod
    def of(cls, request: OnCpuRequest, data_path: Path, note: Callable[[str], None]) -> RecordHooks:
        """The hooks the request asks for, their files beside perf.data (PERF_DATA.jit/, PERF_DATA.mxnet/)."""
        from ..frameworks.jit.hook import JitHook
        from ..frameworks.mxnet.hook import MxnetHook

        beside = data_path.absolute()
        jit = None
        if request.jit or request.python is not False:  # Python frames unless --no-python
            jit = JitHook(beside.with_name(beside.name + ".jit"), note=note, dnnl=request.jit, python=request.python,
                          keep_python_maps=request.perf_data is not None)  # fmt: skip
        mx_dir = beside.with_name(beside.name + ".mxnet")
        mxnet = MxnetHook(mx_dir, note=note, memory=request.memory is not None) if request.mxnet else None
        return cls(jit, mxnet)

    @classmethod
    def among(cls, hooks: Sequence[RecordHook]) -> RecordHooks:
        """The JIT and MXNet hooks among a caller's own (the `make` recipes build theirs)."""
        from ..frameworks.jit.hook import JitHook
        from ..frameworks.mxnet.hook import MxnetHook

        jit = next((hook for hook in hooks if isinstance(hook, JitHook)), None)
        return cls(jit, next((hook for hook in hooks if isinstance(hook, MxnetHook)), None))

    @property
    def hooks(self) -> list[RecordHook]:
        return [hook for hook in (self.jit, self.mxnet) if hook is not None]

    @property
    def unwound(self) -> bool:
        """The JIT kernels were given unwind info (the report then does not blame them for cut stacks)."""
        return self.jit is not None and self.jit.unwound

    def __enter__(self) -> RecordHooks:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self.jit is not None:
            if kind is not None:  # the scratch perf.data may be kept (ScratchRecording): perf report reads the maps
                self.jit.keep_python_maps = True
            self.jit.cleanup()


def record_hooked(
    request: OnCpuRequest,
    data_path: Path,
    hooks: RecordHooks,
    status: Status,
    on_recording: Callable[[], None] | None = None,
    spec: RecordSpec | None = None,
) -> tuple[Recording, MemoryProbes | None]:
    """perf record `spec` (default: the request's) into `data_path` with the hooks; with --memory, the
    allocation probes are added for the recording and deleted after it, however it ends."""
    from ..record import record

    spec = spec or request.spec
    if request.memory is None:
        return record(spec, data_path, hooks=hooks.hooks, status=status, on_recording=on_recording), None
    from ..record.memory import memory_probes

    wants_storage = hooks.mxnet is not None and request.memory.mode == "alloc"
    more = _storage_probes(spec, status) if wants_storage else []
    with memory_probes(request.memory, spec.pid, status.note, more) as probes:  # deleted however it ends
        recording = record(probes.apply(spec), data_path, hooks=hooks.hooks, status=status, on_recording=on_recording)
    return recording, probes


def fold_oncpu(
    recording: Recording,
    request: OnCpuRequest,
    status: Status,
    hooks: RecordHooks | None = None,
    probes: MemoryProbes | None = None,
) -> FoldedProfile:
    """Fold (kernel/JIT annotated, [unknown] grouped, the attribution report noted and in the header), the
    MXNet frames joined and their tables reported, the Python frames read as Python."""
    from ..folding.python import fold_interpreter
    from ..folding.with_report import fold_with_report
    from ..frameworks.flamegraph_launcher import own_frames

    mx = hooks.mxnet if hooks is not None else None
    window, threads, group = request.window, request.threads, request.group_unknown
    joiner = mx.joiner(recording, window) if mx else None
    if probes is not None:
        from ..record.memory_fold import fold_memory_recording

        profile = fold_memory_recording(recording, probes, window, status, threads, group, joiner)
    else:
        unwound = hooks is not None and hooks.unwound
        profile = fold_with_report(recording, window, status, threads, group, joiner, unwound)
    fold_interpreter(profile, own_frames(), request.keep_interpreter)  # the launcher's frames go in any case
    if mx and joiner:
        mx.report(joiner, profile)
        if request.memory is not None:
            mx.report_bytes(joiner, profile)
    return profile


def _storage_probes(spec: RecordSpec, status: Status) -> list[Probe]:
    """--memory --mxnet: the probe on MXNet's own storage allocator, when the target has libmxnet.so."""
    from ..frameworks.mxnet.storage import find_libmxnet, storage_probe

    library, why = find_libmxnet(spec.command, spec.pid, spec.env)
    if library is None:
        status.note(f"note: --memory --mxnet: MXNet's storage allocator not probed ({why})")
        return []
    return [storage_probe(library)]


def record_oncpu(request: OnCpuRequest, outputs: Outputs, status: Status) -> OnCpuResult:
    """Record, fold, write, export. perf.data goes to a scratch directory unless the request names it, and
    is kept (its path said) when a later step fails, so nothing recorded is lost."""
    from .outputs import write_exports, write_outputs
    from .scratch import ScratchRecording

    outputs.check(request.perf_data)
    with ScratchRecording("flamegraph-record-", request.perf_data, status.note) as session:
        with RecordHooks.of(request, session.data_path, status.note) as hooks:
            recording, probes = record_hooked(request, session.data_path, hooks, status, session.mark_recorded)
            status.note(recorded_line(recording, session.data_path))
            if request.whole_note is not None:
                status.note(request.whole_note)
            profile = fold_oncpu(recording, request, status, hooks, probes)
            if probes is not None and outputs.render is not None:  # the rate the samples were taken at
                from ..record.memory_fold import memory_subtitle

                subtitle = memory_subtitle(outputs.render.subtitle, profile)
                outputs = dataclasses.replace(outputs, render=dataclasses.replace(outputs.render, subtitle=subtitle))
            written = write_outputs(profile, outputs, status.note)
            timeline = _timeline(request, recording, outputs) if outputs.exports else None
            written.exports = write_exports(profile, outputs, recording, status.note, timeline, request.window)
    return OnCpuResult(recording, profile, written)


def _timeline(request: OnCpuRequest, recording: Recording, outputs: Outputs) -> FoldOptions:
    """The Chrome trace's frames named as the fold named them (build-id checked grouping included)."""
    from ..folding.perf import FoldOptions
    from ..naming.grouping import namer_for_recording
    from ..naming.observer import FrameObserver

    timed = any(fmt == "chrome-trace" for fmt, _ in outputs.exports.files) and request.group_unknown
    namer = namer_for_recording(str(recording.perf_data)) if timed else None
    return FoldOptions.with_all(tid=True, frame_hook=FrameObserver(namer))


def recorded_line(recording: Recording, path: Path) -> str:
    """'recorded 4,210 samples in 5.0 s (1.2 MB); the command exited with status 1' (`path`: perf.data as
    perf wrote it, before a hook's `perf inject`)."""
    from .scratch import command_ended

    counted = f" {recording.samples:,} samples" if recording.samples is not None else ""
    size = path.stat().st_size / 1e6 if path.exists() else 0.0
    ended = f"; {command_ended(recording.exit_status)}" if recording.exit_status else ""
    return f"recorded{counted} in {recording.seconds:.1f} s ({size:.1f} MB){ended}"
