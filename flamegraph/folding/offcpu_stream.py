"""Off-CPU recorded with a bounded spool (`offcpu --max-spool`): the waits paired while perf records.

The chunks' `perf script` text is read as one stream (flamegraph.record.stream.iter_chunk_lines) by one
pairing, so a wait whose switch-out is in one chunk and its switch-in in the next is one wait; waits
still open when perf stops end at its stop, as in a whole recording.

    fold, recording, counts, unread = record_and_pair(spec, options, spool, status, resolve=None)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..io.diagnostics import Diagnostics
from ..io.perf import ScriptKilled, kill_running_scripts
from ..naming.symbols import FunctionNamer
from ..record import Recording, RecordSpec, Status
from ..record.offcpu import record_offcpu
from ..record.proc import Resolver
from ..record.spool import Chunk, ChunkCounts, Spool
from ..record.stream import drain, iter_chunk_lines
from .offcpu import SCRIPT_OPTIONS, OffCpuFold, fold_offcpu_sources
from .perf_sched import OffCpuOptions

STREAM_LABEL = "perf.data (spooled)"


@dataclass
class Unread:
    """sched_switch records of chunks whose perf script was killed (by a signal we did not send), unread."""

    records: int = 0
    chunks: int = 0
    why: list[str] = field(default_factory=list)  # 'perf script killed by SIGKILL', once each

    def fact(self, recorded: int) -> str:
        chunks = f"{self.chunks} chunk{'s' if self.chunks != 1 else ''}"
        return f"{self.records:,} of {recorded:,} sched_switch records in {chunks} ({', '.join(self.why)})"


class _Ending:
    """When perf stopped, handed from the recording (main thread) to the pairing once known."""

    def __init__(self) -> None:
        self._known = threading.Event()
        self.ns: int | None = None
        self.seconds = 0.0

    def set(self, recording: Recording | None) -> None:
        if recording is not None:
            self.ns, self.seconds = recording.stopped_ns, recording.seconds
        self._known.set()

    def __call__(self) -> int | None:
        self._known.wait()
        return self.ns


def record_and_pair(
    spec: RecordSpec,
    options: OffCpuOptions,
    spool: Spool,
    status: Status,
    namer: FunctionNamer | None = None,
    resolve: Resolver | None = None,
) -> tuple[OffCpuFold, Recording, ChunkCounts, Unread]:
    """Record `spec` into `spool` and pair its waits meanwhile; the fold, the recording, the chunks' counts
    and what of them was not read (a chunk's perf script killed: said at once with `status`)."""
    ending = _Ending()
    counts: list[ChunkCounts] = []
    result: list[OffCpuFold] = []
    errors: list[BaseException] = []
    diagnostics = Diagnostics()
    unread = Unread()
    stopping = threading.Event()  # our own kill of its perf script: the pairing is abandoned

    def killed(chunk: Chunk, chunk_counts: ChunkCounts, printed: int, error: ScriptKilled) -> None:
        if stopping.is_set():
            raise error
        missing = max(chunk_counts.samples - printed, 0)
        unread.records, unread.chunks = unread.records + missing, unread.chunks + 1
        if (why := f"perf script {error.how}") not in unread.why:
            unread.why.append(why)
        its = f"its {missing:,}" if not printed else f"{missing:,} of its {chunk_counts.samples:,}"
        status.note(f"warning: chunk {chunk.number}: {why}: {its} sched_switch records not paired")

    if resolve is not None:  # a recording where nothing switched has no timestamps: perf's run time then
        inner: Resolver = resolve
        resolve = lambda silent, window: inner(silent, window or int(ending.seconds * 1e9))  # noqa: E731

    def pair() -> None:
        try:
            lines = iter_chunk_lines(spool, SCRIPT_OPTIONS, namer, counts.append, killed)
            sources = [(STREAM_LABEL, lines)]
            result.append(fold_offcpu_sources(sources, STREAM_LABEL, options, diagnostics, resolve, ending))
        except BaseException as error:  # said by the main thread
            errors.append(error)
            drain(spool)

    thread = threading.Thread(target=pair, name="pairing", daemon=True)
    thread.start()
    recording: Recording | None = None
    try:
        recording = record_offcpu(spec, spool.data, status, spool=spool)
    finally:
        if recording is None:
            spool.ended()  # (idempotent) whatever stopped the recording, the pairing ends, its perf script killed
            stopping.set()
            kill_running_scripts()
        ending.set(recording)
        try:
            thread.join()
        except BaseException:  # a signal while the last chunks are paired: their perf script ends with us
            stopping.set()
            kill_running_scripts()
            thread.join(5.0)
            raise
    if errors:
        raise errors[0]
    assert recording is not None  # (record_offcpu returned, or raised above)
    return result[0], recording, sum(counts, ChunkCounts()), unread
