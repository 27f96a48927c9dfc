"""The sampling allocator of `record --memory` (sampler.c): built with the system's C compiler into our
cache, preloaded into the command, probed on its marker functions only.

    why = why_not_sampled(spec)                 # None, or why this target is probed at every call instead
    library = build_sampler(live=False)         # ~/.cache/flamegraph/sampler/libflamegraph-sampler-alloc-HASH.so
    env = preload_env(library, 524288, 1000, spec.env)  # LD_PRELOAD (ours first), FLAMEGRAPH_MEMORY_SAMPLE, _RATE

The library is a collector part, as perf is: the folder stays pure Python and reads only the records of
the markers (flamegraph_alloc_sampled: ptr, size, weight, api, mean; flamegraph_free_sampled: ptr). It is
built once per source, variant and compiler (the name holds their hash) into a directory of ours
(io/private.py: a root run trusts nothing on disk), written under a fresh name and renamed into place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..io.diagnostics import FlamegraphError, OutputFailed, PerfFailed
from ..io.private import fresh_name, private_dir
from .command import resolve_program

SOURCE = Path(__file__).with_name("sampler.c")
# The `api` argument of flamegraph_alloc_sampled -> the function the program called (sampler.c's enum api).
APIS = ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
        "reallocarray", "mmap")  # fmt: skip
ALLOC_MARKER = "flamegraph_alloc_sampled"
FREE_MARKER = "flamegraph_free_sampled"
LOADED_MARKER = "flamegraph_sampler_loaded"
SAMPLE_ENV = "FLAMEGRAPH_MEMORY_SAMPLE"
RATE_ENV = "FLAMEGRAPH_MEMORY_RATE"
# -fno-omit-frame-pointer: the marker's caller keeps a frame, so a frame-pointer stack reaches the program.
CFLAGS = ("-O2", "-fPIC", "-shared", "-fno-omit-frame-pointer", "-fvisibility=hidden", "-Wall")
LIBS = ("-ldl", "-lm", "-lpthread")
BUILD_SECONDS = 60.0


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def cache_root() -> Path:
    """$FLAMEGRAPH_CACHE, else $XDG_CACHE_HOME/flamegraph, else ~/.cache/flamegraph (as the CFI cache)."""
    base = os.environ.get("FLAMEGRAPH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "flamegraph"
    )
    return Path(base)


def build_sampler(live: bool, cache: Path | None = None) -> Path:
    """The preloadable library (`live`: with free and munmap interposed), built unless already cached."""
    cc = compiler()
    if cc is None:
        raise PerfFailed("--memory-sample needs a C compiler (cc) to build its sampling allocator")
    variant = "live" if live else "alloc"
    flags = (*CFLAGS, *(("-DFLAMEGRAPH_LIVE",) if live else ()))
    source = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([source, " ".join(flags).encode(), os.path.realpath(cc).encode()]))
    try:
        directory = private_dir((cache or cache_root()) / "sampler")
    except OutputFailed as err:
        raise PerfFailed(f"cannot build the sampling allocator: {err}") from None
    target = directory / f"libflamegraph-sampler-{variant}-{key.hexdigest()[:16]}.so"
    try:
        if stat.S_ISREG(os.lstat(target).st_mode):
            return target
    except FileNotFoundError:
        pass
    built = fresh_name(directory, target.name + ".")
    try:
        done = subprocess.run([cc, *flags, "-o", str(built), str(SOURCE), *LIBS], capture_output=True, text=True,
                              timeout=BUILD_SECONDS, errors="replace")  # fmt: skip
        if done.returncode != 0:
            said = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip())
            raise PerfFailed(f"cannot build the sampling allocator with {cc}: {said or f'exit {done.returncode}'}")
        os.replace(built, target)
    except subprocess.TimeoutExpired:
        raise PerfFailed(f"{cc} did not build the sampling allocator in {BUILD_SECONDS:.0f} s") from None
    except OSError as err:
        raise PerfFailed(f"cannot build the sampling allocator: {err}") from None
    finally:
        built.unlink(missing_ok=True)
    return target


def preload_env(library: Path, mean: int, limit: int, env: Mapping[str, str]) -> dict[str, str]:
    """`env` with our library first in LD_PRELOAD (a user's own preloaded allocator stays, after ours: ours
    forwards to it), the mean bytes between samples and the most samples per second per process (0: no
    limit)."""
    theirs = env.get("LD_PRELOAD", os.environ.get("LD_PRELOAD", "")).strip()
    preload = f"{library}:{theirs}" if theirs else str(library)
    return {**env, "LD_PRELOAD": preload, SAMPLE_ENV: str(mean), RATE_ENV: str(limit)}


def why_not_sampled(command: tuple[str, ...], pid: int | None, env: Mapping[str, str], cwd: str | None) -> str | None:
    """Why the sampler cannot be preloaded into this target (it is then probed at every call), or None."""
    if pid is not None:
        return "a running process (--pid) cannot be given the sampling allocator"
    if compiler() is None:
        return "no C compiler (cc) to build the sampling allocator"
    try:
        program = resolve_program(command[0], {**os.environ, **env}, cwd)
        info = os.stat(program)
        with open(program, "rb") as f:
            head = f.read(4)
    except (OSError, FlamegraphError):  # not found, not readable: recording says so in its own words
        return None
    if info.st_mode & stat.S_ISUID and info.st_uid != os.geteuid() or (
        info.st_mode & stat.S_ISGID and info.st_gid != os.getegid()
    ):
        return f"{program} is setuid/setgid: the loader ignores LD_PRELOAD for it"
    if head == b"\x7fELF" and not dynamically_linked(program):
        return f"{program} is statically linked: LD_PRELOAD cannot reach its allocator"
    return None


def dynamically_linked(program: str) -> bool:
    """The ELF program names a dynamic loader (PT_INTERP): only then is LD_PRELOAD honoured."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(program, "rb") as f:
            return any(segment["p_type"] == "PT_INTERP" for segment in ELFFile(f).iter_segments())
    except (OSError, ELFError):
        return True
