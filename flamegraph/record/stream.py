"""Folding a spooled recording while perf records: each finished chunk scripted, folded and deleted.

One thread takes the spool's chunks in order, folds each (`perf script` of that chunk, the one fold path)
into the current interval's collapser, and deletes it (a `perf script` killed by a signal we did not send
cuts its chunk short: the samples it did not print are counted, said in one line, and folding goes on); an
interval's end hands its profile to
`on_interval` (the CLI writes STEM-NNN.svg/.folded) and adds it to the whole run. `fold_chunk` replaces
the plain fold of a chunk (--mxnet's reads the context switches from the same text). Every chunk's text
goes through one `ThreadNames` (chunk_threads): a thread started in an earlier chunk keeps its name in
the later ones, where perf names it `:TID`. Memory is the distinct stacks of the whole run and of the
interval being folded, whatever the number of samples.

    fold = StreamedFold(spool, make_collapser, script_args, on_interval=write_interval, prepare=complete_jit)
    fold.start()
    recording = record(spec, spool.data, spool=spool)   # perf runs; chunks are folded meanwhile
    whole = fold.finish()                              # the last chunks folded; the whole run's profile

    for line in iter_chunk_lines(spool, script_args, namer, counted):   # the chunks' text as one stream
        ...                                                              # (off-CPU pairing across chunks)
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..folding.perf import PerfCollapser
from ..folding.perf_blocks import MAX_CARRY, fold_blocks, iter_blocks
from ..folding.stage import BlockFilter, fold_input
from ..io.inputs import open_stream
from ..io.perf import ScriptKilled, find_perf
from ..model import FoldedProfile
from ..naming.buildid import RecordedBuildIds
from ..naming.symbols import FunctionNamer
from .chunk_names import ChunkNames
from .chunk_threads import ThreadNames
from .exec_forks import mark_exec_forks
from .fold_priority import FoldPriority
from .scope import recorded_events
from .spool import Chunk, ChunkCounts, Spool, read_chunk


@dataclass(frozen=True)
class Interval:
    """One interval's folded profile and its window in perf's clock (CLOCK_MONOTONIC ns)."""

    number: int
    profile: FoldedProfile
    start_ns: int
    end_ns: int
    samples: int  # samples in its chunks (folded or not: dropped chunks are counted in the spool)
    unfolded: int = 0  # of those, samples a killed perf script did not print (see `StreamedFold.unfolded`)
    unfolded_why: str = ""  # how: 'perf script killed by SIGKILL'


DEMANGLE_AFTER = 8  # chunks folded with perf's demangling before chunk_names' cheaper path takes over


class StreamedFold:
    """The folder thread of a spooled recording (see the module's doc)."""

    def __init__(
        self,
        spool: Spool,
        make_collapser: Callable[[], PerfCollapser],
        script_args: Sequence[str],
        namer: FunctionNamer | None = None,
        on_interval: Callable[[Interval], None] | None = None,
        fold_chunk: Callable[[PerfCollapser, str, Sequence[str], BlockFilter], None] | None = None,
        prepare: Callable[[Path], None] | None = None,
        note: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.spool = spool
        self._note = note
        self._prepare = prepare  # what a chunk needs before it is folded (frameworks.jit.chunks: perf inject)
        self._make = make_collapser
        self._script_args = list(script_args)
        self._namer = namer
        self._on_interval = on_interval
        self.names = ChunkNames.find() if fold_chunk is None else None  # perf's demangling skipped (chunk_names)
        self._fold_chunk = fold_chunk or self._fold_plain
        self.threads = ThreadNames()  # the names of threads perf no longer names in later chunks
        self.whole = FoldedProfile()
        self.counts = ChunkCounts()  # of the chunks folded
        self.chunks = 0
        self.intervals = 0
        self.unfolded = 0  # samples of chunks whose perf script was killed (by a signal we did not send)
        self.unfolded_chunks = 0
        self.unfolded_why: list[str] = []  # 'perf script killed by SIGKILL', once each
        self.events: list[str] | None = None  # the events as the first chunk records them (perf's user-only fallback)
        self._collapser = make_collapser()
        self.priority = FoldPriority(spool)  # its perf scripts idle while the spool has room
        self._interval_samples = 0
        self._interval_unfolded = 0
        self._interval_why: list[str] = []
        self._interval_chunks = 0
        self._interval_start = 0
        self._error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fold", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> FoldedProfile:
        """Waits for the last chunk (the spool must have `ended`); re-raises what stopped the folding."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.whole

    def stop(self, timeout: float = 5.0) -> None:
        """After the main thread was stopped (a signal) while this one folds: its perf script is killed,
        the chunks still coming are deleted unread, and the thread is waited for (briefly)."""
        from ..io.perf import kill_running_scripts

        self._stopping.set()
        deadline = time.monotonic() + timeout
        while self._thread.is_alive() and time.monotonic() < deadline:
            kill_running_scripts()  # again: one started between its check of `_stopping` and our kill
            self._thread.join(0.1)

    def _run(self) -> None:
        with self.priority.watching():
            self._fold_chunks()

    def _fold_chunks(self) -> None:
        try:
            while (chunk := self.spool.next_chunk()) is not None:
                if self._stopping.is_set():
                    self.spool.done(chunk)
                    drain(self.spool)
                    return
                self._fold(chunk)
            if self._interval_chunks:  # the watcher saw perf's last chunk before it knew it was the last
                self._close(self.spool.ended_ns)
        except BaseException as error:  # handed to finish(): the main thread says it
            self._error = error
            drain(self.spool)

    def _fold(self, chunk: Chunk) -> None:
        if not self._interval_start:
            self._interval_start = self.spool.started_ns
        if chunk.dropped:  # counted by the spool; its interval still ends here
            self.spool.done(chunk)
            if chunk.closes:
                self._close(chunk.ended_ns)
            return
        try:
            mark_exec_forks(str(chunk.path))  # before perf inject reads it: an exec'd child's maps are its own
            if self._prepare is not None:
                self._prepare(chunk.path)
            counts = _read_and_merge(chunk, self._namer)
        except BaseException:
            self.spool.done(chunk)
            raise
        if self.events is None:
            self.events = recorded_events(find_perf(), chunk.path)
        records = self._collapser.diagnostics.records
        try:
            self._fold_chunk(self._collapser, str(chunk.path), self._script_args, self.threads.blocks)
        except ScriptKilled as killed:
            if self._stopping.is_set():
                raise  # our own kill (a second Ctrl-C): the run is abandoned
            self._collapser.drop_record()  # cut short: not folded (the fast path never reads past the last whole one)
            self._count_unfolded(chunk, counts.samples, self._collapser.diagnostics.records - records, killed.how)
        finally:
            self.spool.done(chunk)
        self.counts = self.counts + counts
        self.chunks += 1
        self._interval_samples += counts.samples
        self._interval_chunks += 1
        if chunk.closes:
            self._close(chunk.ended_ns)

    def _count_unfolded(self, chunk: Chunk, samples: int, printed: int, how: str) -> None:
        """A chunk's perf script was killed after printing `printed` of its `samples` samples (those are folded)."""
        missing = max(samples - printed, 0)
        why = f"perf script {how}"
        self.unfolded += missing
        self.unfolded_chunks += 1
        self._interval_unfolded += missing
        for seen in (self.unfolded_why, self._interval_why):
            if why not in seen:
                seen.append(why)
        its = f"its {missing:,} samples" if not printed else f"{missing:,} of its {samples:,} samples"
        self._note(f"warning: chunk {chunk.number}: {why}: {its} not folded")

    def _fold_plain(self, collapser: PerfCollapser, path: str, args: Sequence[str], named: BlockFilter) -> None:
        # Reading the libraries' alias groups costs a one-off 1-2 s of CPU that ~7 chunks pay back: a short
        # recording keeps perf's own demangling, a long job skips it from chunk DEMANGLE_AFTER on.
        long_job = self.names is not None and self.chunks >= DEMANGLE_AFTER
        text = self.names.script(path, args) if self.names is not None and long_job else None
        if text is None:
            fold_input(collapser, path, script_args=args, rewrite=named)
            return
        fold_blocks(collapser, named(iter_blocks(io.BytesIO(text))), path)

    def _close(self, end_ns: int) -> None:
        profile = self._collapser.profile()
        for stack, weight in profile.counts.items():
            self.whole.add(stack, weight)
        self.whole.event = self.whole.event or profile.event
        self.intervals += 1
        why = ", ".join(self._interval_why)
        interval = Interval(self.intervals, profile, self._interval_start, end_ns, self._interval_samples,
                            self._interval_unfolded, why)  # fmt: skip
        self._collapser = self._make()
        self._interval_start, self._interval_samples, self._interval_chunks = end_ns, 0, 0
        self._interval_unfolded, self._interval_why = 0, []
        if self._on_interval is not None:
            self._on_interval(interval)


def iter_chunk_lines(
    spool: Spool,
    script_args: Sequence[str],
    namer: FunctionNamer | None = None,
    counted: Callable[[ChunkCounts], None] | None = None,
    killed: Callable[[Chunk, ChunkCounts, int, ScriptKilled], None] | None = None,
) -> Iterator[bytes]:
    """The `perf script` lines of every chunk in order, as one stream (a reader that keeps state from
    record to record, as the off-CPU pairing does, reads a spooled recording as one file); each chunk is
    deleted once read, or when the reader stops. Returns once perf has ended and the last chunk is read.
    A chunk's text is handed on a whole record at a time. Its perf script killed by a signal ends that text
    at its last whole record (the one cut short is not read): told to `killed` with the samples printed
    before it (which may raise: our own kill), the stream goes on with the next chunk; without `killed` it
    raises. Threads are named as in one file (chunk_threads)."""
    named = ThreadNames().blocks
    while (chunk := spool.next_chunk()) is not None:
        if chunk.dropped:
            spool.done(chunk)
            continue
        printed = [0]
        try:
            counts = _read_and_merge(chunk, namer)
            if counted is not None:
                counted(counts)
            with open_stream(str(chunk.path), script_args=script_args) as stream:
                yield from whole_records(named(iter_blocks(stream)), printed)
        except ScriptKilled as error:
            if killed is None:
                raise
            killed(chunk, counts, printed[0], error)
        finally:
            spool.done(chunk)


# Lines that begin a record: neither a frame (tab-indented) nor blank. perf's side-band records are one line
# each ('... 680.060856: PERF_RECORD_SWITCH IN', --show-switch-events and --show-task-events): the rest are
# the sample headers. (Counted in C: a multi-line regex per line start cost 3-5x iter_lines.)
RECORD_START = re.compile(rb"\n[^\t\n]")
SIDE_BAND = b": PERF_RECORD_"


def samples_in(text: bytes) -> int:
    """The sample headers in perf script text of whole lines (-F without srcline or srccode: those indent
    with blanks, or begin with '|')."""
    starts = len(RECORD_START.findall(text)) + (text[:1] not in b"\t\n")
    return starts - text.count(SIDE_BAND)


def whole_records(blocks: Iterable[bytes], printed: list[int]) -> Iterator[bytes]:
    """The lines of perf script text given as raw blocks, a whole record at a time: the text after the last
    blank line waits for more (or the end). Text cut short (its perf script killed: ScriptKilled) ends at
    its last whole line before the sample cut short: perf's one-line side-band records after the last whole
    sample are handed on. `printed[0]` counts the sample headers among the lines handed on."""
    carry = b""
    try:
        for block in blocks:
            data = carry + block if carry else block
            cut = data.rfind(b"\n\n")
            if cut < 0 and len(data) > MAX_CARRY:  # no blank line for long (records without frames): whole lines
                cut = data.rfind(b"\n") - 1
            if cut < 0:
                carry = data
                continue
            whole, carry = data[: cut + 1], data[cut + 2 :]
            printed[0] += samples_in(whole)
            yield from whole.split(b"\n")  # (the last is the blank line that ended the record)
    except ScriptKilled:
        lines = carry[: carry.rfind(b"\n") + 1].split(b"\n")[:-1]  # its whole lines
        begun = [i for i, line in enumerate(lines) if line[:1] not in b"\t" and SIDE_BAND not in line]
        yield from lines[: begun[-1] if begun else len(lines)]
        raise
    if carry:
        printed[0] += samples_in(carry)
        lines = carry.split(b"\n")
        if not lines[-1]:
            lines.pop()
        yield from lines


def drain(spool: Spool) -> None:
    """After a reader failed: the chunks still coming are deleted unread, so that the spool empties."""
    while (chunk := spool.next_chunk()) is not None:
        spool.done(chunk)


def _read_and_merge(chunk: Chunk, namer: FunctionNamer | None) -> ChunkCounts:
    """The chunk's counts; the build-ids of the files it maps join the namer's before its frames are named."""
    counts, build_ids = read_chunk(chunk.path)
    if namer is not None and namer.recorded is not None:
        namer.recorded = namer.recorded.merge(RecordedBuildIds(build_ids))
    return counts
