"""The JIT directory of one recording: what the in-process hook leaves there, and completing its jitdump.

Layout of the directory (one per recording; several processes may share it):
    jit-<pid>.dump        jitdump marker + header, written at process start; records added by `complete`
    jit-<pid>.kernels     a kernel a line: address size counter created(ns) name dump-file (tab-separated)
    dnnl-<pid>/           the process's DNNL_JIT_DUMP files, moved out of its working directory
    py-<pid>.trampoline   the bytes of CPython's perf trampoline (hook.py --python-dir; Python 3.12+)
    jitted-<pid>-<n>.so   written by `perf inject --jit`
A kernels file reads (the comment for people, the scan's time as a field):
    # 37 JIT kernels located, 0 dumps not in memory (8 anonymous executable regions, 8.7 MiB, 9 ms)
    #scan-ms\t9
    7efc88e45000\t780\t36\t1466730211034\tjit_softmax_t\t/run/jit/dnnl-4242/dnnl_dump_cpu_jit_softmax_t.36.bin
`complete` runs after the process has ended (in the recorder), or before each chunk of a streamed
recording is folded (chunks.py: the kernels of a running process are then `Located` from outside): it
generates CFI for each kernel (capstone, ~0.6 s for the MLP's 3.5 MB of kernels) and for the Python
trampolines of the process's /tmp/perf-<pid>.map (trampolines.py), and writes the jitdump records;
`name_python` then gives the jitted .so of each run of trampolines its functions' names, once perf
inject has written it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...io.diagnostics import OutputFailed
from ...io.private import private_dir, replace_file
from . import jitdump, jitmap, symtab, trampolines
from .cfi import ANALYSER_VERSION, CfiResult, analyse_all  # capstone itself is imported on first use
from .jitmap import Dump, Kernel
from .unwind import build_unwind

KERNELS_FILE = re.compile(r"^jit-(\d+)\.kernels$")
TRAMPOLINE_FILE = re.compile(r"^py-(\d+)\.trampoline$")
# CPython 3.12/3.13's x86-64 trampoline (Python/asm_trampoline.S): the one trampolines.stack_rule describes.
X86_64_TRAMPOLINE = bytes.fromhex("4883ec08ffd14883c408c3")
SCAN_MS = "#scan-ms"


def kernels_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"jit-{pid}.kernels")


def keep_dumps(directory: str, pid: int, kernels: list[Kernel], missing: Iterable[Dump]) -> list[Kernel]:
    """Move the process's dump files into `directory`/dnnl-<pid>/ (the working directory stays clean)."""
    target = str(private_dir(os.path.join(directory, f"dnnl-{pid}")))
    moved: dict[str, str] = {}
    for path in [k.path for k in kernels] + [d.path for d in missing]:
        if path and path not in moved:
            moved[path] = shutil.move(path, os.path.join(target, os.path.basename(path)))
    return [Kernel(k.address, k.size, k.name, k.index, moved.get(k.path, k.path), k.created) for k in kernels]


def write_kernels(
    directory: str, pid: int, kernels: Iterable[Kernel], comment: str = "", scan_ms: int | None = None
) -> str:
    lines = [f"# {comment}\n"] if comment else []
    if scan_ms is not None:
        lines.append(f"{SCAN_MS}\t{scan_ms}\n")
    lines += [f"{k.address:x}\t{k.size:x}\t{k.index}\t{k.created}\t{k.name}\t{k.path}\n" for k in kernels]
    return replace_file(kernels_path(directory, pid), "".join(lines).encode("utf-8", "surrogateescape"))


def read_kernels(path: str) -> list[Kernel]:
    kernels = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            address, size, index, created, name, dump = line.rstrip("\n").split("\t", 5)
            kernels.append(Kernel(int(address, 16), int(size, 16), name, int(index), dump, int(created)))
    return kernels


def cache_dir() -> str:
    """Where CFI results are kept between runs (most kernels are byte-identical from run to run):
    $FLAMEGRAPH_CACHE, else $XDG_CACHE_HOME/flamegraph, else ~/.cache/flamegraph; then cfi-v<N>."""
    return os.path.join(cache_base(), f"cfi-v{ANALYSER_VERSION}")


def cache_base() -> str:
    """$FLAMEGRAPH_CACHE, else $XDG_CACHE_HOME/flamegraph, else ~/.cache/flamegraph."""
    return os.environ.get("FLAMEGRAPH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "flamegraph"
    )


def analyse_cached(codes: list[bytes], directory: str | None = None) -> dict[bytes, CfiResult]:
    """CFI of each distinct code: from the cache (keyed by SHA-256 of the bytes), else analysed."""
    directory = directory or cache_dir()
    try:  # a cache another user may write to is neither read (planted results) nor written (planted links)
        directory = str(private_dir(directory))
    except OutputFailed:
        directory = None  # a read-only home, or not ours alone: no cache, same results
    found: dict[bytes, CfiResult] = {}
    missing = []
    for code in dict.fromkeys(codes):
        try:
            if directory is None:
                raise OSError("no cache")
            with open(os.path.join(directory, hashlib.sha256(code).hexdigest())) as f:
                status, program = f.read().split("\n")[:2]
            found[code] = CfiResult(bytes.fromhex(program) if status == "ok" else None, status, 0)
        except (OSError, ValueError):
            missing.append(code)
    for code, result in zip(missing, analyse_all(missing), strict=True):
        found[code] = result
        if directory is not None:
            try:
                text = f"{result.status}\n{(result.program or b'').hex()}\n"
                replace_file(os.path.join(directory, hashlib.sha256(code).hexdigest()), text.encode())
            except OSError:
                pass  # a full disk: no cache, same results
    return found


def read_kernels_header(path: str) -> tuple[str, int | None]:
    """The kernels file's comment and the scan's time in ms (None if it has none)."""
    comment, scan_ms = "", None
    with open(path) as f:
        for line in f:
            if line.startswith(f"{SCAN_MS}\t"):
                scan_ms = int(line.split("\t", 1)[1])
            elif line.startswith("#"):
                comment = comment or line[1:].strip()
            else:
                break
    return comment, scan_ms


def read_code(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


@dataclass
class Completed:
    """What `complete` did for one process."""

    pid: int
    kernels: int = 0
    with_cfi: int = 0
    no_cfi: list[tuple[str, str]] = field(default_factory=list)  # (kernel, why)
    unreadable: int = 0  # dump files gone or changed: kernel left out
    seconds: float = 0.0
    dump_file: str = ""
    located: str = ""  # how and when the kernels were found ("at exit, 37 JIT kernels located, ...")
    naming_ms: int | None = None  # the hook's scan at exit
    python_runs: list[tuple[int, trampolines.Run]] = field(default_factory=list)  # (code index, run)
    python_functions: int = 0  # Python functions given unwind info (trampolines)
    python_left: int = 0  # trampolines left out: no room for the tables in a full arena
    loaded: list[tuple[int, int]] = field(default_factory=list)  # [start, end) of each code load

    def summary(self) -> str:
        parts = []
        if self.kernels or not self.python_functions:
            parts.append(f"{self.kernels} JIT kernels, {self.with_cfi} with unwind info")
        if self.python_functions:
            left = f" ({self.python_left} left out: full arenas)" if self.python_left else ""
            parts.append(f"{self.python_functions} Python functions with unwind info{left}")
        text = f"pid {self.pid}: {', '.join(parts)} ({self.seconds:.2f} s)"
        if self.unreadable:
            text += f", {self.unreadable} dump files unreadable"
        return text


def python_pids(directory: str) -> list[int]:
    """The processes that left the bytes of their Python trampoline (hook.py --python-dir)."""
    return sorted(int(m.group(1)) for n in os.listdir(directory) if (m := TRAMPOLINE_FILE.match(n)))


@dataclass(frozen=True)
class Located:
    """A process's kernels located so far, with their code (read while the dump files were there)."""

    kernels: tuple[tuple[Kernel, bytes], ...]
    how: str = ""  # how and when they were found (said with the summary)
    naming_ms: int | None = None  # the hook's own scan at exit, once the process has ended


def complete(
    directory: str,
    arenas: Mapping[int, list[trampolines.Arena]] | None = None,
    located: Mapping[int, Located] | None = None,
) -> list[Completed]:
    """Write the jitdump records (code + generated unwind info) of every process in `directory`:
    its oneDNN kernels (jit-<pid>.kernels, or `located` for it: a process still running) and its Python
    trampolines (py-<pid>.trampoline), those placed and stamped by `arenas` (each process's executable
    anonymous mappings, from perf.data)."""
    done = []
    located = located or {}
    names = sorted(os.listdir(directory))
    pids = sorted({int(m.group(1)) for n in names if (m := KERNELS_FILE.match(n) or TRAMPOLINE_FILE.match(n))})
    for pid in sorted({*pids, *located}):
        dump_file = jitdump.dump_path(directory, pid)
        if not os.path.isfile(dump_file):
            continue
        started = time.perf_counter()
        result = Completed(pid, dump_file=dump_file)
        loads = _kernel_loads(directory, result, located.get(pid))
        loads += _python_loads(directory, result, len(loads), (arenas or {}).get(pid, []))
        if not loads:
            continue
        jitdump.write_records(dump_file, loads)
        result.loaded = [(load.address, load.address + jitdump.mapped_size(load)) for load in loads]
        result.seconds = time.perf_counter() - started
        done.append(result)
    return done


def _kernel_loads(directory: str, result: Completed, located: Located | None = None) -> list[jitdump.CodeLoad]:
    kernels: list[Kernel] = []
    codes: list[bytes] = []
    if located is not None:
        result.located, result.naming_ms = located.how, located.naming_ms
        kernels, codes = [k for k, _ in located.kernels], [code for _, code in located.kernels]
    else:
        kernels_file = kernels_path(directory, result.pid)
        if not os.path.isfile(kernels_file):
            return []
        comment, result.naming_ms = read_kernels_header(kernels_file)
        result.located = f"at exit, {comment}" if comment else ""
        for kernel in read_kernels(kernels_file):
            code = read_code(kernel.path)
            if len(code) != kernel.size:
                result.unreadable += 1
                continue
            kernels.append(kernel)
            codes.append(code)
    cfi = analyse_cached(codes)
    loads = []
    for kernel, code in zip(kernels, codes, strict=True):
        program = cfi[code].program
        unwind = build_unwind(len(code), program) if program is not None else None
        if unwind is None:
            result.no_cfi.append((kernel.name, cfi[code].status))
        loads.append(jitdump.CodeLoad(kernel.address, kernel.name, code, unwind, kernel.created))
    result.kernels = len(loads)
    result.with_cfi = sum(load.unwind is not None for load in loads)
    return loads


def _python_loads(
    directory: str, result: Completed, first_index: int, arenas: list[trampolines.Arena]
) -> list[jitdump.CodeLoad]:
    code = read_code(jitdump.trampoline_path(directory, result.pid))
    if code != X86_64_TRAMPOLINE:  # another machine's (or a future CPython's) trampoline: no rule for it
        return []
    found = trampolines.read_perf_map(jitmap.perf_map_path(result.pid), len(code))
    runs = [trampolines.fitted(run, trampolines.arena_of(run.trampolines[0].address, arenas))
            for run in trampolines.runs(found, len(code))]  # fmt: skip
    runs = [run for run in runs if run.trampolines]
    result.python_runs = [(first_index + i, run) for i, run in enumerate(runs)]
    result.python_functions = sum(len(run.trampolines) for run in runs)
    result.python_left = len(found) - result.python_functions
    return trampolines.code_loads(runs, code, arenas)


def loaded(completed: Iterable[Completed]) -> dict[int, list[tuple[int, int]]]:
    """Each process's code loads, [start, end): the memory perf inject maps to its jitted files."""
    return {result.pid: result.loaded for result in completed}


def name_python(directory: str, completed: Iterable[Completed]) -> int:
    """After perf inject: each run's jitted-<pid>-<index>.so gets a symbol per Python function.
    Returns how many files could not be rewritten (their frames keep the run's one name)."""
    failed = 0
    for result in completed:
        for index, run in result.python_runs:
            try:
                symtab.rewrite_symbols(os.path.join(directory, f"jitted-{result.pid}-{index}.so"), run.functions())
            except (OSError, ValueError):
                failed += 1
    return failed
