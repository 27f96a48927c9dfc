"""The directories and files the tool picks itself, made so that no other local user can steer a write.

Outputs the user names (`-o`, `--folded`, `--perf-data`) follow the writer's rules (flamegraph/io/writer.py:
links followed, parents created). What we name ourselves does not: PERF_DATA.mxnet/ and PERF_DATA.jit/
(the in-process hook, MXNet's profiler, oneDNN and `perf inject` write there), the scratch directory of a
recording, the CFI cache. A user who planted that directory beforehand (mode 777, links named after
every PID) would otherwise have a root run write through the links. So:

- a directory is ours when we create it (0755), or when it already is a real directory (not a symlink)
  owned by us that nobody else may write to (no write bit for others, nor for a group other than our
  own), in a parent nobody else may rename it out of (the same rule, or the sticky bit, as /tmp has);
  anything else is `NotPrivate`: one line, exit 4;
- a file is created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`) relative to the directory's verified
  descriptor, or written under a fresh exclusive name and renamed over its name (which replaces a link,
  never follows it).
Standard library only: the in-process hook runs this in the profiled interpreter.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .diagnostics import OutputFailed

DIRECTORY_MODE = 0o755  # others may read what we recorded (perf.data refers to PERF_DATA.jit/), never write
FILE_MODE = 0o644
EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
OPEN_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class NotPrivate(OutputFailed):
    """A directory we would write in is not ours alone (exit 4, as any output that cannot be written)."""


def others_may_write(status: os.stat_result) -> bool:
    """Someone but us may create, rename or remove entries (a group of our own counts as us)."""
    return bool(status.st_mode & stat.S_IWOTH) or (
        bool(status.st_mode & stat.S_IWGRP) and status.st_gid != os.getegid()
    )


def why_not_ours(status: os.stat_result) -> str | None:
    """What makes a directory (lstat) unfit to hold our files, None if it is ours alone."""
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a directory"
    if status.st_uid != os.geteuid():
        return f"belongs to uid {status.st_uid}, not to us (uid {os.geteuid()})"
    if others_may_write(status):
        return f"may be written by others (mode {stat.S_IMODE(status.st_mode):04o})"
    return None


def check_parent(path: Path) -> None:
    """Nobody else may rename `path` away and put theirs in its place: its parent is sticky, or only
    its owner (and our own group) may write to it."""
    parent = path.parent
    try:
        status = os.stat(parent)
    except OSError as err:
        raise NotPrivate(f"{parent}: cannot use it: {err.strerror}") from None
    if others_may_write(status) and not status.st_mode & stat.S_ISVTX:
        raise NotPrivate(
            f"{path}: not private: its directory {parent} may be written by others "
            f"(mode {stat.S_IMODE(status.st_mode):04o}, no sticky bit); choose a directory of yours"
        )


def private_dir(path: Path | str) -> Path:
    """`path` as a directory of ours: created (parents too), or an existing one checked; else NotPrivate."""
    path = Path(os.path.abspath(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise NotPrivate(f"{path.parent}: cannot create the directory: {err.strerror}") from None
    check_parent(path)
    try:
        os.mkdir(path, DIRECTORY_MODE)
    except FileExistsError:
        pass
    except OSError as err:
        raise NotPrivate(f"{path}: cannot create the directory: {err.strerror}") from None
    with open_private(path):
        pass
    return path


@contextmanager
def open_private(path: Path | str) -> Iterator[int]:
    """A descriptor of the directory `path`, checked to be ours (the descriptor, not the name: a
    directory swapped after the check is not the one written in)."""
    try:
        fd = os.open(path, OPEN_DIRECTORY)
    except OSError as err:
        try:
            reason = why_not_ours(os.lstat(path)) or err.strerror
        except OSError:
            reason = err.strerror
        raise NotPrivate(f"{path}: not a private directory: {reason}; remove it or choose another place") from None
    try:
        reason = why_not_ours(os.fstat(fd))
        if reason is not None:
            raise NotPrivate(f"{path}: not a private directory: it {reason}; remove it or choose another place")
        yield fd
    finally:
        os.close(fd)


def create_file(directory: Path | str, name: str, mode: int = FILE_MODE) -> int:
    """A new, empty file `name` in our directory, opened for writing; an entry of that name (ours: a
    stale file of an earlier run) is removed first, and nothing is followed."""
    with open_private(directory) as dir_fd:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        fd = os.open(name, EXCLUSIVE, mode, dir_fd=dir_fd)
    os.fchmod(fd, mode)  # the umask may have taken bits off
    return fd


def replace_file(path: Path | str, data: bytes, mode: int = FILE_MODE) -> str:
    """`path` holds `data`, all at once: written to a fresh exclusive name beside it and renamed over it.
    Safe in any directory, /tmp included: the rename replaces a planted link or file, never follows it."""
    path = str(path)
    directory = os.path.dirname(path) or "."
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return path


def fresh_name(directory: Path | str, prefix: str) -> Path:
    """A name nobody uses yet in our directory, for a file another program (perf) creates there."""
    with open_private(directory) as dir_fd:
        for _ in range(100):
            name = f"{prefix}{secrets.token_hex(6)}"
            try:
                os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                return Path(directory) / name
    raise NotPrivate(f"{directory}: no free name for {prefix}*")


def scratch_dir(prefix: str, parent: Path | None = None) -> Path:
    """A new private directory under `parent` or $TMPDIR (mkdtemp: 0700, a name nobody had), in a parent
    nobody else may rename it out of."""
    base = Path(os.path.abspath(parent if parent is not None else tempfile.gettempdir()))
    check_parent(base / prefix)
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    except OSError as err:
        raise NotPrivate(f"{base}: cannot create a scratch directory: {err.strerror}") from None


def check_dumps_cwd(cwd: str) -> None:
    """oneDNN writes its JIT dumps (`DNNL_JIT_DUMP=1`: `dnnl_dump_*.bin`, opened by name, links followed)
    into the working directory: NotPrivate unless nobody else may write there (it is ours, or root's)."""
    why = _why_not_for_dumps(cwd)
    if why is not None:
        raise NotPrivate(
            f"{cwd}: oneDNN would write its JIT dumps (DNNL_JIT_DUMP=1, dnnl_dump_*.bin) into this working "
            f"directory, and {why}: run from a directory of yours"
        )


def _why_not_for_dumps(cwd: str) -> str | None:
    try:
        status = os.stat(cwd)
    except OSError as err:
        return f"it cannot be checked ({err.strerror})"
    if status.st_uid not in (os.geteuid(), 0):
        return f"it belongs to uid {status.st_uid}"
    if others_may_write(status):
        return f"others may write to it (mode {stat.S_IMODE(status.st_mode):04o})"
    return None
