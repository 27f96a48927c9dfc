"""Find where oneDNN put each JIT kernel: match its `DNNL_JIT_DUMP=1` dump against executable memory.

oneDNN writes each kernel's code to `dnnl_dump_cpu_<name>.<counter>.bin` in the working directory.
The same bytes sit in the process's anonymous executable memory; finding them gives the address.
Works in-process (pid "self", at exit) and from another process with ptrace rights (root).
Only the standard library is used: this module runs inside the profiled interpreter.

/proc/<pid>/maps lines it keeps (executable, anonymous) and skips:
    7fec2e042000-7fec2e091000 rwxp 00000000 00:00 0
    7fad34e56000-7fad34e96000 rwxp 00000000 00:00 0          [anon:xbyak]
    55d0c1a4b000-55d0c1a6c000 r-xp 00000000 00:00 0          [heap]
    7f3e9a628000-7f3e9a7bd000 r-xp 00026000 08:01 1835   /usr/lib/x86_64-linux-gnu/libc.so.6   (skipped)
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ...io.private import replace_file

DUMP_FILE = re.compile(r"^dnnl_dump_(?:cpu_)?(.+)\.(\d+)\.bin$")
PERF_MAP_DIR = "/tmp"  # perf reads JIT symbol maps only from /tmp/perf-<pid>.map
PAGE = 4096
PREFIX = 16  # bytes compared at page starts before a full comparison


@dataclass(frozen=True)
class Dump:
    """One `DNNL_JIT_DUMP` file: the kernel's code, its name and oneDNN's creation counter."""

    index: int
    name: str
    code: bytes
    path: str = ""
    created: int = 0  # CLOCK_MONOTONIC ns when oneDNN wrote the file (right after making the code executable)


@dataclass(frozen=True)
class Kernel:
    address: int
    size: int
    name: str
    index: int  # oneDNN's counter: the dump file's number
    path: str = ""  # the dump file
    created: int = 0  # CLOCK_MONOTONIC ns, 0 if unknown


@dataclass
class ScanResult:
    kernels: list[Kernel] = field(default_factory=list)  # sorted by address
    missing: list[Dump] = field(default_factory=list)  # dumps not found in memory
    regions: int = 0
    scanned: int = 0  # bytes of executable anonymous memory read
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{len(self.kernels)} JIT kernels located, {len(self.missing)} dumps not in memory "
            f"({self.regions} anonymous executable regions, {self.scanned / 2**20:.1f} MiB, "
            f"{self.seconds * 1000:.0f} ms)"
        )


def parse_dump_name(file_name: str) -> tuple[str, int] | None:
    """'dnnl_dump_cpu_jit_uni_kernel.27.bin' -> ('jit_uni_kernel', 27)."""
    match = DUMP_FILE.match(file_name)
    return (match.group(1), int(match.group(2))) if match else None


def dump_files(directory: str, since: float | None = None) -> list[tuple[int, str, str]]:
    """(counter, name, path) of the dump files in `directory`, oldest counter first.

    `since` (epoch seconds) skips files older than the process, e.g. left by an earlier run.
    """
    found = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for file_name in names:
        parsed = parse_dump_name(file_name)
        if parsed is None:
            continue
        path = os.path.join(directory, file_name)
        try:  # oneDNN writes regular files: a link, a FIFO or a device someone else put there is no dump
            status = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(status.st_mode) or (since is not None and status.st_mtime < since):
            continue
        found.append((parsed[1], parsed[0], path))
    return sorted(found)


def monotonic_offset() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, in ns: file times -> perf's clock (-k CLOCK_MONOTONIC)."""
    return time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def read_dumps(directory: str, since: float | None = None) -> list[Dump]:
    dumps = []
    offset = monotonic_offset()
    for index, name, path in dump_files(directory, since):
        try:  # never a link (nor a FIFO swapped in since the listing: it would block)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            status = os.fstat(f.fileno())
            if stat.S_ISREG(status.st_mode):
                dumps.append(Dump(index, name, f.read(), path, status.st_mtime_ns - offset))
    return dumps


def parse_maps(lines: Iterable[str]) -> list[tuple[int, int]]:
    """Executable anonymous regions (start, end) of a /proc/<pid>/maps text."""
    regions = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 5 or "x" not in parts[1]:
            continue
        path = parts[5].strip() if len(parts) > 5 else ""
        if path and path != "[heap]" and not path.startswith("[anon"):
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        regions.append((start, end))
    return regions


def merge_regions(regions: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join adjacent regions, so that a kernel spanning two VMAs is still one byte string."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(regions):
        if merged and merged[-1][1] == start:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def read_memory(pid: int | str, regions: Iterable[tuple[int, int]]) -> dict[int, bytes]:
    """The bytes of each region, read through /proc/<pid>/mem (unreadable regions are skipped)."""
    memory = {}
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for start, end in merge_regions(regions):
            try:
                mem.seek(start)
                memory[start] = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
    return memory


class Claims:
    """Address ranges already given to a kernel (a smaller kernel must not match inside one)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def free(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start)
        if i and self.ends[i - 1] > start:
            return False
        return i == len(self.starts) or self.starts[i] >= end

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)


def page_starts(memory: Mapping[int, bytes], prefixes: set[bytes]) -> dict[bytes, list[int]]:
    """Page-aligned addresses whose first bytes begin some dump: where Xbyak puts kernels."""
    index: dict[bytes, list[int]] = {}
    for base, buf in memory.items():
        for offset in range(-base % PAGE, len(buf), PAGE):
            head = buf[offset : offset + PREFIX]
            if head in prefixes:
                index.setdefault(head, []).append(base + offset)
    return index


def occurrences(code: bytes, memory: Mapping[int, bytes], aligned: list[int]) -> Iterator[int]:
    """Addresses holding `code`: page-aligned ones first (the usual case), then, lazily, any others."""
    for address in sorted(aligned):
        for base, buf in memory.items():
            offset = address - base
            if 0 <= offset < len(buf) and buf[offset : offset + len(code)] == code:
                yield address
    for base, buf in sorted(memory.items()):
        pos = buf.find(code)
        while pos >= 0:
            if (base + pos) % PAGE:
                yield base + pos
            pos = buf.find(code, pos + 1)


def match_kernels(dumps: Iterable[Dump], memory: Mapping[int, bytes]) -> tuple[list[Kernel], list[Dump]]:
    """Give each dump an address holding its bytes; identical dumps claim distinct occurrences.

    Larger kernels claim first, so a small kernel's bytes found inside a larger one are not used.
    """
    by_code: dict[bytes, list[Dump]] = {}
    for dump in sorted(dumps, key=lambda d: d.index):
        if dump.code:
            by_code.setdefault(dump.code, []).append(dump)
    aligned = page_starts(memory, {code[:PREFIX] for code in by_code})
    claims = Claims()
    kernels: list[Kernel] = []
    missing: list[Dump] = []
    for code, group in sorted(by_code.items(), key=lambda item: (-len(item[0]), item[1][0].index)):
        found = occurrences(code, memory, aligned.get(code[:PREFIX], []))
        free = (a for a in found if claims.free(a, a + len(code)))
        # Which of identical kernels sits where cannot be told from the bytes: each gets the earliest
        # creation time of the group, never later than its own (perf must know it before it runs).
        created = min(dump.created for dump in group)
        for dump in group:
            address = next(free, None)
            if address is None:
                missing.append(dump)
                continue
            claims.add(address, address + len(code))
            kernels.append(Kernel(address, len(code), dump.name, dump.index, dump.path, created))
    return sorted(kernels, key=lambda k: k.address), sorted(missing, key=lambda d: d.index)


def process_start(pid: int | str) -> float:
    """When the process started (epoch seconds), from /proc: dumps older than this are stale."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    ticks = int(fields[19])  # field 22 (starttime), counted after "pid (comm)"
    with open("/proc/stat") as f:
        boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def scan(pid: int | str = "self", dump_dirs: Sequence[str] | None = None) -> ScanResult:
    """Locate the kernels of a live process: its dumps (in its cwd by default) in its memory."""
    started = time.perf_counter()
    directories = list(dump_dirs) if dump_dirs is not None else [os.readlink(f"/proc/{pid}/cwd")]
    # btime has a one-second granularity: allow that much before dismissing a dump as stale.
    since = process_start(pid) - 1.0
    dumps = [dump for directory in dict.fromkeys(directories) for dump in read_dumps(directory, since)]
    with open(f"/proc/{pid}/maps") as f:
        regions = parse_maps(f)
    memory = read_memory(pid, regions)
    kernels, missing = match_kernels(dumps, memory)
    return ScanResult(
        kernels,
        missing,
        regions=len(regions),
        scanned=sum(len(b) for b in memory.values()),
        seconds=time.perf_counter() - started,
    )


def perf_map_path(pid: int) -> str:
    return os.path.join(PERF_MAP_DIR, f"perf-{pid}.map")


def format_perf_map(kernels: Iterable[Kernel]) -> str:
    """perf's symbol map: 'START SIZE name' in hex, one kernel a line."""
    return "".join(f"{k.address:x} {k.size:x} {k.name}\n" for k in sorted(kernels, key=lambda k: k.address))


def write_perf_map(kernels: Iterable[Kernel], pid: int, path: str | None = None) -> str:
    """Write (atomically) the map perf reads for the JIT code of `pid`."""
    # A fresh exclusive name renamed over the map: a link planted in /tmp is replaced, never followed.
    return replace_file(path or perf_map_path(pid), format_perf_map(kernels).encode("utf-8", "surrogateescape"))


def started_at(pid: int | str) -> float | None:
    """When the process started, in seconds since the epoch (/proc/PID/stat's starttime + boot time)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def save_perf_map(kernels: Iterable[Kernel], pid: int, keep_dir: str) -> str:
    """/tmp/perf-<pid>.map for the kernels of `pid`. A map the process has written itself since it
    started (python -X perf, a JVM agent) is not ours: our lines are appended and it is left alone
    after the run. Otherwise ours replaces whatever is there (an earlier process's with the same pid),
    and its copy `keep_dir`/perf-<pid>.map says it is ours (`remove_perf_maps`) and keeps the names."""
    path = perf_map_path(pid)
    text = format_perf_map(kernels)
    if _append_to_the_process_map(path, pid, text.encode("utf-8", "surrogateescape")):
        return path
    write_perf_map(kernels, pid, path)
    write_perf_map(kernels, pid, os.path.join(keep_dir, os.path.basename(path)))
    return path


def _append_to_the_process_map(path: str, pid: int, data: bytes) -> bool:
    """Appends `data` to the map `pid` has written itself since it started, as it writes it (a line at a
    time). Only a regular file owned by the process's user, opened without following a link (/tmp is
    everyone's: a link planted there by another user is never written through). False: no such map."""
    started = started_at(pid)
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        fresh = started is not None and info.st_mtime >= started - 1  # (btime has 1 s resolution)
        if not (stat.S_ISREG(info.st_mode) and info.st_uid == owner and fresh):
            return False
        os.write(fd, data)
        return True
    finally:
        os.close(fd)


def remove_perf_maps(keep_dir: str) -> list[str]:
    """After the run (the folds and exports read them): remove the /tmp maps we wrote, i.e. those still
    byte for byte the copy kept in `keep_dir`. A map someone else wrote or changed since is left."""
    removed = []
    for name in sorted(os.listdir(keep_dir)) if os.path.isdir(keep_dir) else []:
        if not re.fullmatch(r"perf-\d+\.map", name):
            continue
        live = os.path.join(PERF_MAP_DIR, name)
        try:
            if not stat.S_ISREG(os.lstat(live).st_mode):
                continue  # a link or anything else planted under our name: not ours
            with open(os.path.join(keep_dir, name), "rb") as kept, open(live, "rb") as current:
                same = kept.read() == current.read()
            if same:
                os.unlink(live)
                removed.append(live)
        except OSError:
            continue
    return removed


def remove_process_map(pid: int, owner: int, since: float) -> bool:
    """Remove /tmp/perf-<pid>.map that `pid` wrote itself during our run (Python's perf support, which we
    turned on): only a regular file (lstat: a link is never followed) owned by the process's user `owner`
    and written since `since` (an older one is another process's with the same pid), in a sticky /tmp,
    where nobody but that user (or root) can swap the name between the check and the unlink. True if removed."""
    path = perf_map_path(pid)
    try:
        info, parent = os.lstat(path), os.stat(PERF_MAP_DIR)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != owner or info.st_mtime < since - 1:
            return False  # (mtime's resolution: a clock tick; the second of slack costs nothing)
        if not parent.st_mode & stat.S_ISVTX and parent.st_mode & 0o022:
            return False  # a /tmp everybody may rename in: what we checked need not be what we unlink
        os.unlink(path)
    except OSError:
        return False
    return True
