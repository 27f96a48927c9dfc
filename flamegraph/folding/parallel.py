"""`--jobs N`: fold one large text file in N processes, split on record boundaries.

The output and the diagnostics are those of one process: chunks start right after a blank line
(so no record is cut), the event filter is fixed from the file's head before splitting, each
worker's problems are shifted by the lines of the chunks before it and merged in file order, and
a frame hook sees every distinct frame a worker saw (replayed here, so its observations are whole).

Workers are forked (no interpreter start, nothing to import) and each sends back its stacks,
pickled through a pipe. This process and the first worker share the front of the file cut into
pieces: this process takes them from the front, the worker from the back, until they meet. So the
two finish together whatever each had to do besides (the worker's start, the pickling, the work
the caller gives this process `meanwhile`, e.g. importing what draws the result) and however the
cost of the text varies along the file; the other workers (more than two jobs) fold one chunk each.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import NamedTuple, Protocol

from ..io.diagnostics import Diagnostics, Problem
from ..io.folded import decode, encode
from .first_event import first_event
from .options import FoldOptions, FrameHook
from .perf import PerfCollapser, Stacks
from .perf_blocks import fold_blocks, iter_blocks

# Below this, a worker costs about what it saves. Measured (session 6, paired runs, load 2-6): split in
# two, a 4.5 MB system-wide text folds in 0.77x the time (+7 % CPU), a 4.5 MB cut of a frame-pointer
# recording in 0.89x; a 3.1 MB text of few distinct frames in 1.02x (+20 % CPU).
MIN_CHUNK = 2 << 20
# Pieces of the shared front: at most this many (one piece of imbalance at the end: the smaller the
# better), none smaller than MIN_CHUNK // 8 (each costs a claim, a fresh header cache and a merge).
PIECES = 32
PR_SET_PDEATHSIG = 1  # linux/prctl.h
HookKey = tuple[bytes, bytes, bytes]


class SeenFrames:
    """A frame hook that remembers what it was asked, so a worker's questions can be asked again here."""

    def __init__(self, hook: FrameHook) -> None:
        self.hook = hook
        self.seen: dict[HookKey, bytes | None] = {}

    def __call__(self, pc: bytes, symbol: bytes, dso: bytes) -> bytes | None:
        key = (pc, symbol, dso)
        if key in self.seen:
            return self.seen[key]
        name = self.seen[key] = self.hook(pc, symbol, dso)
        return name


class ChunkResult(NamedTuple):
    stacks: dict[tuple[bytes | None, bytes], Stacks]
    skipped_by_event: Counter[bytes]
    diagnostics: Diagnostics
    lines: int
    frames_seen: list[HookKey]


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_jobs(size: int) -> int:
    """What pays: one process per MIN_CHUNK of input from two chunks (4 MB) on, at most one per core."""
    return max(1, min(cpu_count(), size // MIN_CHUNK)) if size >= 2 * MIN_CHUNK else 1


def split_points(path: str, parts: int) -> list[int]:
    """Byte offsets [0, ..., size]; each inner one is just after a blank line (a record boundary)."""
    size = os.path.getsize(path)
    parts = max(1, min(parts, size // MIN_CHUNK))
    points = [0]
    window = 1 << 20
    with open(path, "rb") as f:
        for k in range(1, parts):
            target = max(size * k // parts, points[-1])
            f.seek(target)
            found = f.read(window).find(b"\n\n")
            if found >= 0:
                point = target + found + 2
            else:  # none after the target: the last one before it
                start = max(points[-1], target - window)
                f.seek(start)
                found = f.read(target - start + 1).rfind(b"\n\n")
                point = start + found + 2 if found >= 0 else 0
            if points[-1] < point < size:
                points.append(point)
    points.append(size)
    return points


def piece_points(path: str, end: int, count: int) -> list[int]:
    """[0, ..., end]: about `count` pieces of the first `end` bytes, each boundary just after a blank line."""
    points = [0]
    window = 64 << 10
    with open(path, "rb") as f:
        for k in range(1, count):
            target = max(end * k // count, points[-1])
            while target < end:  # the first blank line from target on (a record may be long)
                f.seek(target)
                head = f.read(min(window, end - target) + 1)  # +1: a blank line across the window's end
                found = head.find(b"\n\n")
                if found >= 0:
                    target += found + 2
                    break
                if len(head) <= window:
                    target = end
                    break
                target += window
            if points[-1] < target < end:
                points.append(target)
    points.append(end)
    return points


class Claims(Protocol):
    """Who takes which piece of the shared front: each once, from the front (this process) or the back."""

    def take(self, from_back: bool) -> int | None: ...

    def close(self) -> None: ...


class SharedClaims:
    """Pieces 0..count-1 taken from the front (this process) and from the back (one worker), each
    once. The state (next front piece, end of the back) lives in a memory file under a POSIX lock,
    which the kernel releases if its holder dies (a killed worker cannot stop this process)."""

    def __init__(self, count: int) -> None:
        self.fd = os.memfd_create("flamegraph-claims", os.MFD_CLOEXEC)
        os.pwrite(self.fd, _pair(0, count), 0)

    def take(self, from_back: bool) -> int | None:
        os.lockf(self.fd, os.F_LOCK, 0)
        try:
            state = os.pread(self.fd, 8, 0)
            front, back = int.from_bytes(state[:4], "little"), int.from_bytes(state[4:], "little")
            if front >= back:
                return None
            if from_back:
                back -= 1
                taken = back
            else:
                taken = front
                front += 1
            os.pwrite(self.fd, _pair(front, back), 0)
            return taken
        finally:
            os.lockf(self.fd, os.F_ULOCK, 0)

    def close(self) -> None:
        os.close(self.fd)


class FixedClaims:
    """Where no memory file can be shared: the front piece here, the other one there."""

    def __init__(self, count: int) -> None:
        self.left = {False: [0] if count else [], True: [1] if count > 1 else []}

    def take(self, from_back: bool) -> int | None:
        side = self.left[from_back]
        return side.pop() if side else None

    def close(self) -> None:
        pass


def _share_front(path: str, end: int) -> tuple[list[int], Claims]:
    """The pieces of the first `end` bytes and who takes which: from both ends where a memory file can
    be shared, else (not Linux, or no file descriptor left) the first piece here, the second there."""
    if hasattr(os, "memfd_create"):
        pieces = piece_points(path, end, max(1, min(PIECES, end // max(1, MIN_CHUNK // 8))))
        try:
            return pieces, SharedClaims(len(pieces) - 1)
        except OSError:
            pass
    pieces = piece_points(path, end, 2)
    return pieces, FixedClaims(len(pieces) - 1)


def _pair(front: int, back: int) -> bytes:
    return front.to_bytes(4, "little") + back.to_bytes(4, "little")


def _fold_chunk(path: str, start: int, end: int, options: FoldOptions) -> ChunkResult:
    diagnostics = Diagnostics(echo=False)
    hook = options.frame_hook
    before = set(hook.seen) if isinstance(hook, SeenFrames) else set()
    collapser = PerfCollapser(options, diagnostics)
    with open(path, "rb") as stream:
        stream.seek(start)
        lines = fold_blocks(collapser, iter_blocks(stream, end - start), path)
    seen = [key for key in hook.seen if key not in before] if isinstance(hook, SeenFrames) else []
    return ChunkResult(collapser.stacks, collapser.skipped_by_event, diagnostics, lines, seen)


def _fold_back(path: str, pieces: list[int], claims: Claims, options: FoldOptions) -> ChunkResult:
    """The worker sharing the front: pieces from the back, each into a collapser of its own (sharing
    the frame names) into which what was folded so far (later in the file) is then merged, so the
    result is that of one fold of them, and two collapsers at most are alive."""
    hook = options.frame_hook
    before = set(hook.seen) if isinstance(hook, SeenFrames) else set()
    folded: PerfCollapser | None = None  # the pieces folded so far, merged: after this one in the file
    lines = 0
    with open(path, "rb") as stream:
        while (index := claims.take(from_back=True)) is not None:
            collapser = PerfCollapser(options, Diagnostics(echo=False))
            if folded is not None:
                collapser.frames = folded.frames
            stream.seek(pieces[index])
            read = fold_blocks(collapser, iter_blocks(stream, pieces[index + 1] - pieces[index]), path)
            if folded is not None:
                later = ChunkResult(folded.stacks, folded.skipped_by_event, folded.diagnostics, lines, [])
                _merge(collapser, later, read)
            folded, lines = collapser, read + lines
    seen = [key for key in hook.seen if key not in before] if isinstance(hook, SeenFrames) else []
    if folded is None:
        return ChunkResult({}, Counter(), Diagnostics(echo=False), 0, seen)
    return ChunkResult(folded.stacks, folded.skipped_by_event, folded.diagnostics, lines, seen)


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies (however it dies: SIGKILL too)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: a worker outlives a killed parent only until its chunk is folded
    if os.getppid() != parent:
        os._exit(1)  # the parent died before we asked


def _fork(work: Callable[[], ChunkResult]) -> tuple[int, int]:
    """Run `work` in a child process; (pid, read end of the pipe its pickled result comes through)."""
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's clean-ups
        code = 0
        try:
            os.close(read)
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)  # the parent handles signals and stops us
            _die_with(parent)
            import pickle  # here, after the fork: the parent imports it while the workers fold

            try:
                payload = pickle.dumps((True, work()), pickle.HIGHEST_PROTOCOL)
            except Exception as err:  # noqa: BLE001 - handed to the parent, which raises it
                payload = pickle.dumps((False, err), pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001 - nothing may escape a forked child
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> ChunkResult:
    import pickle

    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(f"fold worker {pid} died ({status=:#x})")
    ok, value = pickle.loads(data)
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def _stop(children: list[tuple[int, int]]) -> None:
    for pid, read in children:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        try:
            os.close(read)
        except OSError:
            pass


def fold_parallel(path: str, into: PerfCollapser, jobs: int, meanwhile: Callable[[], object] | None = None) -> int:
    """Fold `path` into `into` with up to `jobs` processes; returns the lines read. `meanwhile` is
    called here once the workers are folding (the first worker then takes more of the file)."""
    options = into.options
    if not options.per_event and into.event_filter is None:
        found = first_event([path], options._replace(event_filter=None))
        into.event_filter = encode(found) if found is not None else None
    if into.event_filter is not None and not options.per_event:
        options = options._replace(event_filter=decode(into.event_filter))
    hook = into.frames.options.frame_hook
    if hook is not None and not options.compat and not isinstance(hook, SeenFrames):
        hook = SeenFrames(hook)
        into.frames.options = into.frames.options._replace(frame_hook=hook)
    options = options._replace(frame_hook=hook)
    points = split_points(path, jobs)
    shared = points[2] if len(points) > 2 else points[-1]  # the front: this process and the first worker
    pieces, claims = _share_front(path, shared)
    children: list[tuple[int, int]] = []
    try:
        if len(pieces) > 2:
            children.append(_fork(partial(_fold_back, path, pieces, claims, options)))
        for start, end in zip(points[2:], points[3:], strict=False):
            children.append(_fork(partial(_fold_chunk, path, start, end, options)))
        if meanwhile is not None:
            meanwhile()
        lines = 0
        with open(path, "rb") as stream:
            while (index := claims.take(from_back=False)) is not None:
                stream.seek(pieces[index])
                size = pieces[index + 1] - pieces[index]
                lines += fold_blocks(into, iter_blocks(stream, size), path, first_line=lines + 1)
        results = []
        while children:
            results.append(_collect(*children[0]))
            children.pop(0)
    finally:
        _stop(children)
        claims.close()
    for result in results:
        _merge(into, result, lines)
        lines += result.lines
    return lines


def _merge(into: PerfCollapser, result: ChunkResult, base: int) -> None:
    shifted = result.diagnostics
    shifted.problems = [Problem(p.path, p.line + base, p.kind, p.text) for p in shifted.problems]
    into.diagnostics.merge(shifted)
    into.merge(result.stacks, result.skipped_by_event)
    hook = into.frames.options.frame_hook
    if isinstance(hook, SeenFrames):
        for key in result.frames_seen:
            hook(*key)
