"""Allocation probes for `record --memory`: uprobes added under a group of our own just before `perf
record` and always deleted after it (any way the recording ends). Sampled (`--memory-sample SIZE`, the
default for a command), on the marker of the sampling allocator preloaded into the command (sampler.c,
built by sampler.py): only sampled allocations trap. Every call (`--memory-sample all`, `--pid`), on the C
library's allocator functions themselves.

    with memory_probes(MemoryRequest("alloc", 512 * 1024), pid=None) as probes:   # perf probe -a ...
        spec = probes.apply(spec)      # -e GROUP:alloc_sampled_PID (or GROUP:malloc_PID ...), LD_PRELOAD
        recording = record(spec, ...)
    # here the group is gone: `perf probe -d GROUP:*`, SIGINT/SIGTERM/SIGHUP held off while it runs

Each probe sits on the function's own address, read from the library's .dynsym: `perf probe -x libc
calloc` also probes `calloc@plt` inside libc (glibc 2.36: 0x26030), and a call through that PLT would
count twice. The arguments are the x86-64 System V registers (%di, %si, %dx, %cx) at the first
instruction. `--memory live` adds the return values (uretprobes: `malloc%return ret=$retval`), `free`
and `munmap`, without stacks (`call-graph=no`): a free needs only its address.

A group left by a run that was killed (SIGKILL: no cleanup could run) is named after its pid and is
deleted by the next run once that pid is gone.
"""

from __future__ import annotations

import os
import platform
import re
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..io.diagnostics import BadOption, FlamegraphError, NotPermitted, PerfFailed, PerfMissing
from ..io.perf import find_perf
from .defaults import MEMORY_MAX_RATE, MEMORY_MODES
from .privileges import who_am_i
from .sampler import ALLOC_MARKER, FREE_MARKER, LOADED_MARKER, build_sampler, preload_env, why_not_sampled
from .spec import RecordSpec
from .tracefs import mounted_tracefs

GROUP_PREFIX = "flamegraph_mem_"
GROUP = re.compile(rf"^[pr]:({GROUP_PREFIX}(\d+))/", re.MULTILINE)  # uprobe_events: "p:GROUP/EVENT PATH:0x..."
MODES = MEMORY_MODES
RETURN_SUFFIX = "__return"  # perf probe names a return probe EVENT__return


def event_name(group: str, api: str) -> str:
    """GROUP:malloc_PID: perf probe 6.1 refuses an event name that any group has already (another run's)."""
    return f"{group}:{api}_{group.rpartition('_')[2]}"


PROBE_SECONDS = 60.0  # perf probe reads the library's symbols: well under a second on libc


@dataclass(frozen=True)
class Probe:
    """One probed function: its name in the library's .dynsym and the arguments read at its entry."""

    api: str  # the function the program calls (and the frame the graph shows)
    args: str  # perf probe fetchargs
    allocates: bool = True  # False: free, munmap (live only)
    returns: bool = False  # live: a uretprobe gives the address it returned
    symbol: str = ""  # its .dynsym name when not `api` (a C++ function's mangled name)
    library: str = ""  # the library that defines it; "": the C library
    frame: str = ""  # the leaf's name in the graph when not `api`; calls of the C library below it are its own
    marker: bool = False  # a marker function of the sampling allocator (sampler.c), not an allocator


# posix_memalign returns its address through a pointer that is gone at the return: live pairs it not.
PROBES = (
    Probe("malloc", "size=%di:u64", returns=True),
    Probe("calloc", "nmemb=%di:u64 size=%si:u64", returns=True),
    Probe("realloc", "ptr=%di:x64 size=%si:u64", returns=True),
    Probe("posix_memalign", "align=%si:u64 size=%dx:u64"),
    Probe("aligned_alloc", "align=%di:u64 size=%si:u64", returns=True),  # glibc: memalign's address
    Probe("mmap", "len=%si:u64 flags=%cx:x32", returns=True),  # anonymous (MAP_ANONYMOUS) only: at the fold
    Probe("free", "ptr=%di:x64", allocates=False),
    Probe("munmap", "addr=%di:x64 len=%si:u64", allocates=False),
)


@dataclass(frozen=True)
class MemoryRequest:
    """What `--memory` asked for: every allocation (alloc) or what is left at the end (live), `sample`: the
    mean bytes between samples of the in-process sampling allocator (sampler.c), or 0: every call, probed
    in the C library (uprobes: ~1.3 µs per call), and `limit`: the most samples per second per process
    (the sampler raises its mean above `sample` to keep to it; 0: no limit)."""

    mode: str = "alloc"
    sample: int = 0
    limit: int = MEMORY_MAX_RATE

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BadOption(f"--memory {self.mode!r}: choose alloc (every allocation) or live (still allocated)")
        if self.sample < 0:
            raise BadOption(f"--memory-sample {self.sample}: bytes between samples (e.g. 512K), or all")
        if self.limit < 0:
            raise BadOption(f"--memory-max-rate {self.limit}: samples per second (e.g. 1000), or none")

    def rate(self) -> str:
        """The rate, as the graph says it."""
        if not self.sample:
            return "every allocation call"
        limited = f", at most {self.limit:,}/s per process" if self.limit else ""
        return f"sampled every {format_size(self.sample)} on average{limited}"

    def probes(self) -> tuple[Probe, ...]:
        return tuple(p for p in PROBES if p.allocates or self.mode == "live")


SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(I?B)?\s*$", re.IGNORECASE)
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
EVERY_CALL = ("all", "0")


def parse_sample(text: str) -> int:
    """--memory-sample: '512K', '1M', '4096' -> bytes (powers of 1024, as the graph prints them); 'all' -> 0."""
    if text.strip().lower() in EVERY_CALL:
        return 0
    match = SIZE.match(text)
    if match is None or int(match.group(1)) == 0:
        raise BadOption(f"--memory-sample {text!r}: bytes between samples (e.g. 512K, 1M, 4096), or all")
    return int(match.group(1)) * UNITS[match.group(2).upper()]


def parse_max_rate(text: str) -> int:
    """--memory-max-rate: '1000' -> samples per second per process; 'none' -> 0 (no limit)."""
    if text.strip().lower() == "none":
        return 0
    if not text.strip().isdigit() or int(text) == 0:
        raise BadOption(f"--memory-max-rate {text!r}: samples per second per process (e.g. 1000), or none")
    return int(text)


def format_size(value: int) -> str:
    """524288 -> '512 KiB', 1000 -> '1,000 B': the exact figure in the largest unit that divides it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value % size == 0:
            return f"{value // size:,} {unit}"
    return f"{value:,} B"


def plan_request(request: MemoryRequest, command: tuple[str, ...], pid: int | None, env: Mapping[str, str],
                 cwd: str | None) -> tuple[MemoryRequest, str | None]:  # fmt: skip
    """The request as it can be recorded, and a note when sampling falls back to every call (--pid, no C
    compiler, a setuid program); a static program cannot be recorded at all (PerfFailed: exit 5)."""
    if not request.sample:
        return request, None
    why = why_not_sampled(command, pid, env, cwd)
    if why is None:
        return request, None
    if "statically linked" in why:
        raise PerfFailed(f"{why}, and it has no C library to probe either")
    return replace(request, sample=0), (
        f"note: {why}: every allocation call is probed in the C library instead (a trap of ~1.3 µs per call: "
        "a malloc-heavy program runs several times slower)"
    )


@dataclass
class MemoryProbes:
    """Probes in place: their group, the library they are in, and what each event means."""

    request: MemoryRequest
    group: str
    library: str
    added: list[Probe] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # functions the library does not define
    sampler: Path | None = None  # the sampling allocator preloaded into the command (`library` then)

    def wrappers(self) -> dict[str, str]:
        """api -> leaf frame of the probes outside the C library (MXNet's storage): their malloc is theirs."""
        return {p.api: p.frame or p.api for p in self.added if p.library and not p.marker}

    def events(self) -> list[str]:
        """perf record's -e values: allocation entries with stacks; frees and returns without (live)."""
        events = []
        for probe in self.added:
            events.append(event_name(self.group, probe.api) + ("" if probe.allocates else "/call-graph=no/"))
            if probe.returns and self.request.mode == "live":
                events.append(f"{event_name(self.group, probe.api)}{RETURN_SUFFIX}/call-graph=no/")
        return events

    def apply(self, spec: RecordSpec) -> RecordSpec:
        """`spec` recording these probes instead of its event (every hit: no frequency), and with the
        sampling allocator, the command started with it preloaded."""
        first, *rest = self.events()
        extra = [arg for event in rest for arg in ("-e", event)]
        how = spec.options.replace(event=first, freq=None, extra_args=(*spec.options.extra_args, *extra))
        if self.sampler is None:
            return spec.replace(options=how)
        env = preload_env(self.sampler, self.request.sample, self.request.limit, spec.env)
        return spec.replace(options=how, env=env)

    def facts(self) -> dict[str, str]:
        """The capture facts: which functions were probed where, and how often."""
        others = "".join(f"; {p.frame or p.api} in {p.library}" for p in self.added if p.library and not p.marker)
        if self.sampler is not None:
            mean = format_size(self.request.sample)
            facts = {
                "allocators probed": f"{', '.join(SAMPLED_APIS)} sampled in the process by {self.sampler.name} "
                f"(LD_PRELOAD), the uprobe on its marker only{others}",
                "sampling": f"every {mean} allocated on average in each thread (exponential intervals): an "
                f"allocation of n bytes is sampled with probability 1 - exp(-n / {mean}) and weighs n divided by it",
            }  # fmt: skip
            if self.request.limit:
                facts["sampling"] += (
                    f"; at most {self.request.limit:,} samples/s per process: a process allocating faster draws "
                    "its intervals with a larger mean (its bytes per second divided by that), each sample "
                    "weighed with the mean its interval was drawn with"
                )
            if self.request.mode == "live":
                facts["allocators probed"] += " (and free, munmap of the sampled addresses)"
            return facts
        apis = ", ".join(p.api for p in self.added if p.allocates and not p.library)
        facts = {"allocators probed": f"{apis} in {self.library}{others}"}
        if self.request.mode == "live":
            facts["allocators probed"] += " (and free, munmap, the returned addresses)"
        if self.missing:
            facts["not probed"] = ", ".join(self.missing) + f" (not defined in {Path(self.library).name})"
        return facts


SAMPLED_APIS = ("malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
                "valloc", "pvalloc", "anonymous mmap")  # fmt: skip


def sampler_probes(library: str, live: bool) -> list[Probe]:
    """The markers of sampler.c: a sampled allocation (with its stack and the mean it was sampled at), a
    sampled address freed (live), the library loaded in a process (its mean)."""
    probes = [
        Probe("alloc_sampled", "ptr=%di:x64 size=%si:u64 weight=%dx:u64 api=%cx:s32 mean=%r8:u64",
              symbol=ALLOC_MARKER, library=library, marker=True),
        Probe("sampler_loaded", "mean=%di:u64", allocates=False, symbol=LOADED_MARKER, library=library, marker=True),
    ]  # fmt: skip
    if live:
        probes.append(Probe("free_sampled", "ptr=%di:x64", allocates=False, symbol=FREE_MARKER, library=library,
                            marker=True))  # fmt: skip
    return probes


def find_library(pid: int | None, name: str = "libc.so.6") -> str:
    """The C library the target uses: the one mapped in `pid`, else the one this Python loaded (a
    command is not running yet; it loads the system's, as we did)."""
    maps = f"/proc/{pid}/maps" if pid is not None else "/proc/self/maps"
    try:
        text = Path(maps).read_text(errors="replace")
    except OSError as err:
        raise PerfFailed(f"cannot read {maps}: {err.strerror}") from None
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and os.path.basename(fields[5]) == name:
            path = fields[5]
            return path if pid is None or os.path.exists(path) else f"/proc/{pid}/root{path}"  # another namespace
    raise PerfFailed(f"no {name} in {maps}: the program does not use the C library's allocator (static?)")


def function_addresses(library: str, names: Sequence[str], hashed: bool = True) -> dict[str, int]:
    """name -> address of each function the library defines (.dynsym, any symbol version). Looked up in
    the GNU hash table when there is one (unless not `hashed`): walking libmxnet.so's 65,000 symbols in
    pyelftools took 20 s, the lookups 0.1 s."""
    from elftools.common.exceptions import ELFError  # imported on first use: start-up stays fast
    from elftools.elf.elffile import ELFFile
    from elftools.elf.hash import GNUHashSection
    from elftools.elf.sections import Symbol, SymbolTableSection

    def function(symbol: Symbol | None) -> bool:
        if symbol is None:
            return False
        return symbol["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and symbol["st_shndx"] != "SHN_UNDEF"

    wanted, found = set(names), {}  # type: tuple[set[str], dict[str, int]]
    try:
        with open(library, "rb") as f:
            elf = ELFFile(f)
            table = elf.get_section_by_name(".gnu.hash")
            if hashed and isinstance(table, GNUHashSection):
                hits = {name: table.get_symbol(name) for name in names}
                return {name: s["st_value"] for name, s in hits.items() if s is not None and function(s)}
            symbols = elf.get_section_by_name(".dynsym")
            for symbol in symbols.iter_symbols() if isinstance(symbols, SymbolTableSection) else ():
                name = symbol.name.partition("@")[0]
                if name in wanted and function(symbol):
                    found.setdefault(name, symbol["st_value"])
    except (OSError, ELFError) as err:
        raise PerfFailed(f"{library}: cannot read its symbols: {err}") from None
    return found


def uprobe_events_file() -> str:
    """tracefs's uprobe_events, where probes are added; why not, in one line (exit 5 or 6)."""
    mounted = mounted_tracefs()
    for directory in mounted:
        path = os.path.join(directory, "uprobe_events")
        if not os.access(directory, os.X_OK):
            raise NotPermitted(f"adding allocation probes needs root ({directory} is not ours to enter; {who_am_i()})")
        if os.path.exists(path):
            if not os.access(path, os.W_OK):
                raise NotPermitted(f"adding allocation probes needs root (writing {path}; {who_am_i()}): run as root")
            return path
    if not mounted:
        if os.geteuid() != 0:
            raise NotPermitted("adding allocation probes needs root (tracefs is not even readable here): run as root")
        raise PerfFailed("tracefs is not mounted: `mount -t tracefs nodev /sys/kernel/tracing`, then retry")
    raise PerfMissing(f"this kernel has no uprobe events ({mounted[0]}/uprobe_events is missing: CONFIG_UPROBE_EVENTS)")


def probe_specs(group: str, probes: Sequence[Probe], addresses: dict[str, int], live: bool) -> list[str]:
    """perf probe -a arguments: 'GROUP:malloc=0x98930 size=%di:u64', and 'GROUP:malloc=0x98930%return ...'."""
    specs = []
    for probe in probes:
        address = addresses[probe.symbol or probe.api]
        specs.append(f"{event_name(group, probe.api)}=0x{address:x} {probe.args}")
        if probe.returns and live:
            specs.append(f"{event_name(group, probe.api)}=0x{address:x}%return ret=$retval:x64")
    return specs


def _perf_probe(perf: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [perf, "probe", *args], capture_output=True, text=True, timeout=PROBE_SECONDS, errors="replace"
        )
    except subprocess.TimeoutExpired:
        raise PerfFailed(f"perf probe {args[0]} did not finish in {PROBE_SECONDS:.0f} s") from None
    except OSError as err:
        raise PerfMissing(f"cannot run {perf}: {err.strerror}") from None


def probe_failure(stderr: str) -> FlamegraphError:
    """perf probe's complaint -> one line: perf without `probe` (built without libelf), no permission, other."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and line.strip() != "Error:"]
    lines = [line for line in lines if not line.startswith("Hint:")] or lines
    said = " ".join(lines)
    if "not a perf-command" in said or "not built" in said or "NO_LIBELF" in said:
        return PerfMissing("this perf cannot add uprobes (`perf probe` is missing: perf built without libelf)")
    if "Permission denied" in said or "not permitted" in said.lower():
        return NotPermitted(f"adding allocation probes needs root (perf probe: {lines[0]}; {who_am_i()})")
    return PerfFailed(f"perf probe failed: {lines[0] if lines else 'no reason given'}")


def delete_group(perf: str, group: str) -> bool:
    """`perf probe -d GROUP:*`; True if the group is gone. Signals that stop us are held until it is done:
    a Ctrl-C here must not leave the probes behind (the child inherits the mask: it finishes too)."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        subprocess.run([perf, "probe", "-q", "-d", f"{group}:*"], capture_output=True, timeout=PROBE_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return group not in groups_defined()


def groups_defined(events_file: str | None = None) -> dict[str, int]:
    """Our groups in uprobe_events -> the pid that made each."""
    path = events_file
    if path is None:
        found = [os.path.join(d, "uprobe_events") for d in mounted_tracefs()]
        path = next((p for p in found if os.path.exists(p)), None)
    try:
        text = Path(path).read_text() if path else ""
    except OSError:
        return {}
    return {match.group(1): int(match.group(2)) for match in GROUP.finditer(text)}


def remove_stale(perf: str, note: Callable[[str], None]) -> None:
    """Delete the groups of runs that died without cleaning up (their pid is gone)."""
    for group, pid in groups_defined().items():
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists() and delete_group(perf, group):
            note(f"note: removed the allocation probes a killed run left ({group})")


@contextmanager
def memory_probes(
    request: MemoryRequest, pid: int | None, note: Callable[[str], None] = print, more: Sequence[Probe] = ()
) -> Iterator[MemoryProbes]:
    """Adds the probes (the C library's, and `more` in other libraries: each must be there), yields them,
    and deletes them whatever happens (errors, Ctrl-C, perf dying)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise PerfFailed(f"--memory reads x86-64 registers; this machine is {platform.machine()}")
    perf = find_perf()
    uprobe_events_file()
    sampler = None
    if request.sample:
        if pid is not None:
            raise BadOption("--memory-sample with --pid: a running process cannot be given the sampling allocator")
        sampler = build_sampler(request.mode == "live")
        library = str(sampler)
        wanted = tuple(sampler_probes(library, request.mode == "live"))
    else:
        library = find_library(pid)
        wanted = request.probes()
    addresses = function_addresses(library, [p.symbol or p.api for p in wanted])
    group = f"{GROUP_PREFIX}{os.getpid()}"
    probes = MemoryProbes(request, group, library, sampler=sampler)
    probes.added = [p for p in wanted if (p.symbol or p.api) in addresses]
    probes.missing = [p.api for p in wanted if (p.symbol or p.api) not in addresses]
    if not any(p.allocates for p in probes.added):
        raise PerfFailed(f"{library} defines none of the allocation functions ({', '.join(probes.missing)})")
    remove_stale(perf, note)
    elsewhere = {p.library: [q for q in more if q.library == p.library] for p in more}
    found = {lib: function_addresses(lib, [p.symbol or p.api for p in wanted]) for lib, wanted in elsewhere.items()}
    for probe in more:
        if (probe.symbol or probe.api) not in found[probe.library]:
            raise PerfFailed(f"{probe.library} does not define {probe.frame or probe.api}: it cannot be probed")
    try:
        live = request.mode == "live"
        places = [(library, addresses, probes.added), *((lib, found[lib], ps) for lib, ps in elsewhere.items())]
        for lib, defined, these in places:
            specs = probe_specs(group, these, defined, live)
            added = _perf_probe(perf, ["-x", lib, *(arg for spec in specs for arg in ("-a", spec))])
            if added.returncode != 0:
                raise probe_failure(added.stderr)
        probes.added = [*probes.added, *more]
        yield probes
    finally:
        if group in groups_defined() and not delete_group(perf, group):
            note(f"warning: the allocation probes {group} could not be deleted: run `perf probe -d '{group}:*'`")
