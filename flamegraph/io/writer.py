"""The one safe writer: every output file goes through `atomic_output`, so nothing the user had is destroyed.

- `-` (or no path) is stdout;
- a regular file, or a new one, is written to a temporary file beside it and renamed over it only
  when complete; an existing file keeps its mode (and, as root, its owner and group);
- a symlink is followed and its target written that way; the link itself is never replaced;
  /dev/stdout and /dev/fd/N write to that open file as it is (a `>>` log is appended to, not replaced);
- a character device or a FIFO (/dev/null, /dev/full, a named pipe) is written through, never replaced;
- a directory, block device or socket is refused with one line.
A name the tool derives itself (`derived`: an interval's STEM-001.svg, the trend page, FILE.json beside
--folded) is another matter: in a shared directory someone else may have put a link there first, so it
is never followed: whatever entry has that name (a link, a FIFO, a file) is replaced, never written through.
A failed write (a full disk, no permission) is `OutputFailed`: one line, exit 4, the old file intact.
A reader that leaves early (`| head`) is left to the CLI, which exits quietly.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..model import FoldedProfile
from .diagnostics import BadOption, OutputFailed
from .folded import write_folded
from .sidecar import Context, is_ours, render_sidecar, sidecar_path

STDOUT = "<stdout>"
MAX_LINKS = 40  # as the kernel's ELOOP limit


@contextmanager
def atomic_output(path: Path | None, derived: bool = False) -> Iterator[BinaryIO]:
    """A binary stream for `path`; what is written reaches `path` only if the block ends normally.
    `derived`: a name we picked, whose entry is replaced whatever it is (a link is not followed)."""
    if derived and path is not None and str(path) != "-":
        with _replace_entry(path) as out:
            yield out
        return
    if path is None or str(path) == "-":
        if sys.stdout is None:  # started with stdout closed (`>&-`)
            raise OutputFailed(f"{STDOUT}: cannot write: it is closed")
        with _write_errors(STDOUT):
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        return
    status = _stat(path)
    if status is not None and not stat.S_ISREG(status.st_mode):
        with _write_through(path, status.st_mode) as out:
            yield out
        return
    target = _link_target(path)
    if isinstance(target, int):  # /dev/stdout, /dev/fd/N: our own open file, its offset and O_APPEND kept
        with _write_errors(str(path)), os.fdopen(os.dup(target), "wb") as out:
            yield out
        return
    if target is None:  # another process's file through /proc: written through like a shell's `>`
        with _write_through(path, stat.S_IFREG) as out:
            yield out
        return
    with _replace(path, target, status) as out:
        yield out


def write_atomically(path: Path | None, write: Callable[[BinaryIO], None], derived: bool = False) -> None:
    with atomic_output(path, derived) as out:
        write(out)


@contextmanager
def _replace_entry(path: Path) -> Iterator[BinaryIO]:
    """The entry `path` itself replaced by a new file (a regular file's mode and owner kept); a link, FIFO
    or device there is replaced, not followed or opened; a directory is refused."""
    try:
        status: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        status = None
    except OSError as err:
        raise OutputFailed(f"{path}: cannot write: {err.strerror}") from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OutputFailed(f"{path}: is a directory, not a file to write to")
    # A regular file of ours keeps its mode; one someone else put there is replaced by a new file of ours (its
    # owner and mode copied, a root run would hand that user the output)
    ours = status is not None and stat.S_ISREG(status.st_mode) and status.st_uid == os.geteuid()
    with _replace(path, Path(os.path.abspath(path)), status if ours else None) as out:
        yield out


def _stat(path: Path) -> os.stat_result | None:
    """The file `path` names (symlinks followed), None if there is none yet."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise OutputFailed(f"{path}: cannot write: {err.strerror}") from None


def _link_target(path: Path) -> Path | int | None:
    """Where `path` leads after every symlink (itself if it is none); a link through /proc is no path:
    our own file descriptor N for /proc/self/fd/N (what /dev/stdout and /dev/fd/N lead to), else None."""
    current = Path(os.path.abspath(path))
    for _ in range(MAX_LINKS):
        if not current.is_symlink():
            return current
        parent = os.path.realpath(current.parent)
        if parent == f"/proc/{os.getpid()}/fd" and current.name.isdigit():
            return int(current.name)
        if parent == "/proc" or parent.startswith("/proc/"):
            return None
        current = Path(os.path.normpath(os.path.join(parent, os.readlink(current))))
    raise OutputFailed(f"{path}: cannot write: too many levels of symbolic links")


REFUSED = {stat.S_IFDIR: "a directory", stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


@contextmanager
def _write_through(path: Path, mode: int) -> Iterator[BinaryIO]:
    """Devices and FIFOs are written in place (as a shell's `>` does); disks and directories are refused."""
    refused = REFUSED.get(stat.S_IFMT(mode))
    if refused is not None:
        raise OutputFailed(f"{path}: is {refused}, not a file to write to")
    with _write_errors(str(path)):
        with open(path, "wb") as out:
            yield out


@contextmanager
def _replace(path: Path, target: Path, status: os.stat_result | None) -> Iterator[BinaryIO]:
    """Write a temporary file beside `target`, give it `target`'s mode and owner, rename it over `target`."""
    if status is not None and not os.access(target, os.W_OK):
        raise OutputFailed(f"{path}: cannot write: {_why_not_writable(target)}")
    import tempfile  # here, as below: its imports (shutil, random) are a tenth of `fold`'s start-up to stdout

    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputFailed(f"{path}: cannot write: cannot create the directory {directory}: {err.strerror}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as err:
        raise OutputFailed(f"{path}: cannot write: {_no_file_beside(directory, err)}") from None
    try:
        with _write_errors(str(path)):
            with os.fdopen(fd, "wb") as out:
                yield out
            _copy_owner_and_mode(tmp, status)
            os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _no_file_beside(directory: Path, err: OSError) -> str:
    """Why no new file could be made in `directory` (the file is written beside its old self, then renamed
    over it): said as that, so that a file which exists (/proc/self/status, where nothing can be created)
    is not called missing."""
    return f"cannot create a file in {directory} (an output is written there, then renamed into place): {err.strerror}"


def _why_not_writable(path: Path) -> str:
    """Why access(W_OK) said no: a read-only mount (EROFS: even root cannot), else the file's permissions."""
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return "read-only file system" if read_only else "permission denied"


def _copy_owner_and_mode(tmp: str, status: os.stat_result | None) -> None:
    if status is None:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a new output is meant to be shared
        return
    if (status.st_uid, status.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(tmp, status.st_uid, status.st_gid)  # before chmod: chown clears set-id bits
        except PermissionError:
            pass  # not root: the file becomes ours, as any editor's save would make it
    os.chmod(tmp, stat.S_IMODE(status.st_mode))


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


@contextmanager
def _write_errors(name: str) -> Iterator[None]:
    """OSError while writing -> OutputFailed; a closed pipe (BrokenPipeError) stays for the CLI."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as err:
        if name == STDOUT:
            _discard_stdout()
        raise OutputFailed(f"{name}: cannot write: {err.strerror or err}") from None


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(path: Path | None) -> None:
    """Fail before recording, not after it: `path` (an output, or perf.data) can be created or replaced.
    Probed by creating a file next to it (as the atomic writer will), or a directory in the nearest
    existing parent when its directory does not exist yet; the probe is removed at once."""
    if path is None or str(path) == "-":
        return
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise OutputFailed(f"{path}: cannot write: {err.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputFailed(f"{path}: cannot write: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        if not os.access(path, os.W_OK):
            raise OutputFailed(f"{path}: cannot write: {_why_not_writable(path)}")
        return  # a device or a FIFO: written through, nothing is created next to it
    directory = Path(os.path.abspath(path)).parent
    missing = not os.path.isdir(directory)
    while not os.path.isdir(directory):
        if os.path.lexists(directory) or directory == directory.parent:
            raise OutputFailed(f"{path}: cannot write: {directory} is not a directory")
        directory = directory.parent
    import tempfile

    try:
        if missing:
            os.rmdir(tempfile.mkdtemp(prefix=".flamegraph-probe-", dir=directory))
        else:
            fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
            os.close(fd)
            os.unlink(probe)
    except OSError as err:
        raise OutputFailed(f"{path}: cannot write: {_no_file_beside(directory, err)}") from None


# The smallest graph we draw (one frame) is ~56 KB: the viewer's script and styles. A file system with less
# room than this cannot take any SVG; tests/test_outputs.py checks the bound stays below the real size.
SMALLEST_GRAPH = 50_000


def check_room(path: Path | None, need: int = 1) -> None:
    """Fail before recording when `path`'s file system has no room for it: fewer than `need` bytes free
    (1: none at all; SMALLEST_GRAPH for an SVG). Creating an empty probe file (check_writable) takes no
    block, so a full disk passes that check. Room is counted as the writer gets it (root may use the
    blocks reserved for it); a file system that states no size (/proc, some FUSE) is not judged."""
    if path is None or str(path) == "-":
        return
    directory = Path(os.path.abspath(path))
    try:
        if not stat.S_ISREG(os.stat(directory).st_mode):
            return  # a device or a FIFO: written through, nothing stored
    except OSError:
        pass  # not there yet: its nearest existing directory tells
    while not os.path.isdir(directory) and directory != directory.parent:
        directory = directory.parent
    try:
        fs = os.statvfs(directory)
    except OSError:
        return
    if fs.f_blocks == 0:
        return
    free = (fs.f_bfree if os.geteuid() == 0 else fs.f_bavail) * fs.f_frsize
    if free < need:
        if free == 0:
            what = "no space left on its file system"
        else:
            what = f"{free:,} bytes free on its file system, less than the smallest graph (~{need // 1000} KB)"
        raise OutputFailed(f"{path}: cannot write: {what} (checked before recording)")


def refuse_overwriting_input(inputs: Sequence[str], outputs: Sequence[tuple[str, Path | None]]) -> None:
    """An output (`(flag, path)`) that is the same file as an input (`-`: what stdin reads) would replace
    the file being read: `render X.folded -o X.folded` would leave an SVG named X.folded. The same
    inode counts (a symlink, a hard link, another spelling of the path); one line, exit 2. Devices and
    FIFOs (/dev/stdout, a terminal) are written through, never replaced: not refused."""
    read = {key for path in inputs if (key := _regular_file(None if path == "-" else path)) is not None}
    for flag, output in outputs:
        if output is None or str(output) == "-":
            continue
        if _regular_file(str(output)) in read:
            raise BadOption(f"{flag} {output}: is also an input of this run (the same file): writing it would "
                            "replace what is read; write to another file")  # fmt: skip


def _regular_file(path: str | None) -> tuple[int, int] | None:
    """(device, inode) of a regular file (`path`, links followed; None: stdin), else None."""
    try:
        status = os.stat(path) if path is not None else os.fstat(sys.stdin.fileno())
    except (OSError, AttributeError, ValueError):  # missing, or no stdin (`<&-`): nothing to replace
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def _put(out: BinaryIO, data: bytes) -> None:
    out.write(data)


def write_sidecar(folded: Path | None, context: Context, note: Callable[[str], None]) -> Path | None:
    """FOLDED.json beside a folded file written to a regular path (not stdout, a pipe or a device);
    a FOLDED.json that is not one of ours is left alone, and a note says so."""
    if folded is None or str(folded) == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(folded).st_mode) or not isinstance(_link_target(folded), Path):
            return None  # /dev/stdout, /proc/self/fd/N...: an open file, not a place for a second one
    except (OSError, OutputFailed):
        return None
    path = sidecar_path(folded)
    if not is_ours(path):
        note(f"note: {path} is not a capture-facts file of ours: left alone (the capture facts are not saved)")
        return None
    data = render_sidecar(context)
    write_atomically(path, lambda out: _put(out, data), derived=True)
    return path


def write_results(
    profile: FoldedProfile,
    folded: Path | None,
    svg: Path | None,
    render: Callable[[], bytes],
    note: Callable[[str], None],
    context: Context | None = None,
    png: Path | None = None,
    derived: bool = False,
) -> None:
    """--folded (with its capture facts beside it), the SVG and its --png preview of a recording, each
    written atomically and announced; `derived`: names we picked (an interval's), never followed."""
    if folded is not None:
        write_atomically(folded, lambda out: write_folded(profile, out), derived)
        write_sidecar(folded, context or Context.of(profile), note)
        note(f"wrote {folded} ({len(profile.counts):,} stacks)")
    if svg is not None:
        image = render()
        if png is not None:
            from ..render import render_png

            preview = render_png(image)
            write_atomically(png, lambda out: _put(out, preview), derived)
            note(f"wrote {png}")
        write_atomically(svg, lambda out: _put(out, image), derived)
        note(f"wrote {svg}")
