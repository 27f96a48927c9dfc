"""JIT naming and unwinding as a `flamegraph record` hook (`--jit`).

prepare: DNNL_JIT_DUMP=1, and a Python command runs through the in-process hook
         (`python [opts] .../flamegraph/jit/hook.py --jit-dir DIR -- SCRIPT|-m MOD|-c CODE ARGS`).
         With --pid nothing can be changed: the process must have been started with DNNL_JIT_DUMP=1.
finish:  --pid: locate the kernels from outside (root: /proc/PID/mem) and write the perf map;
         then, for every process that left a jitdump marker, write its records with generated CFI
         (`session.complete`) and `perf inject --jit` them into perf.data (replaced in place).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..perf import find_perf
from ..private import NotPrivate, check_dumps_cwd, fresh_name, private_dir
from ..record.spec import Recording, RecordSpec
from . import jitmap, session


def _module_file(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    return Path(spec.origin)


HOOK = _module_file("flamegraph.jit.hook")  # named as a module, so it is found wherever the layout puts it
JIT_CALL_GRAPH = "dwarf,65528"  # the gemm kernels' frames are 12-16 KB: smaller copies cut their stacks
PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
OPTION_WITH_VALUE = ("-X", "-W")


def wrap_command(command: tuple[str, ...], jit_dir: Path) -> tuple[str, ...] | None:
    """`python [opts] PROGRAM ARGS` -> the same run through the hook; None for anything else."""
    return hook_command(command, ("--jit-dir", str(jit_dir)))


def hook_command(command: tuple[str, ...], options: tuple[str, ...]) -> tuple[str, ...] | None:
    """`python [opts] PROGRAM ARGS` -> the same run through the hook with `options`; a command
    already run through the hook gets the options added (so --jit and --mxnet share one hook)."""
    if not command or not PYTHON.match(os.path.basename(command[0])):
        return None
    i = 1
    while i < len(command) and command[i].startswith("-") and command[i] not in ("-", "-m", "-c"):
        i += 2 if command[i] in OPTION_WITH_VALUE else 1
    program = command[i:]
    if not program or program[0] == "-" or (program[0] in ("-m", "-c") and len(program) < 2):
        return None  # the interactive interpreter or a program on stdin: nothing to hook
    if program[0] == str(HOOK) and "--" in program:
        end = program.index("--")
        return (*command[:i], *program[:end], *options, *program[end:])
    return (*command[:i], str(HOOK), *options, "--", *program)


def user_command(command: tuple[str, ...]) -> tuple[str, ...]:
    """The command as the user gave it: `python [opts] HOOK OPTIONS -- PROGRAM` -> `python [opts] PROGRAM`."""
    if str(HOOK) not in command:
        return command
    at = command.index(str(HOOK))
    end = command.index("--", at) if "--" in command[at:] else len(command) - 1
    return (*command[:at], *command[end + 1 :])


STALE = re.compile(r"^(jit-\d+\.(dump|kernels)|jitted-\d+-\d+\.so|dnnl-\d+|perf-\d+\.map)$")


def clear_previous(directory: Path) -> None:
    """Leave no files of an earlier recording into the same directory: they would be completed again."""
    for entry in directory.iterdir():
        if STALE.match(entry.name):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def marker_of(pid: int) -> str | None:
    """The jitdump marker a process mapped at start (started through the hook), if any."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if path.endswith(f"/jit-{pid}.dump"):
                    return path
    except OSError:
        return None
    return None


def environment_has_dumps(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return b"DNNL_JIT_DUMP=1" in f.read().split(b"\0")
    except OSError:
        return True  # cannot tell: let the scan decide


@dataclass
class JitSummary:
    """What --jit did, as facts; `metadata()` is the text the SVG header shows."""

    command: str | None = None  # the user's command (the recorded one runs through the hook)
    kernels: int = 0  # kernels named
    with_cfi: int | None = None  # of them with unwind info; None: named from outside (perf map only)
    naming_ms: list[int] = field(default_factory=list)  # each process's own scan at exit
    unwind_seconds: float | None = None  # None: nothing was completed
    inject_seconds: float = 0.0

    @property
    def unwound(self) -> bool:
        """The JIT kernels were given unwind info: stacks through them can be walked."""
        return bool(self.with_cfi)

    def metadata(self) -> dict[str, str]:
        meta = {"command": self.command} if self.command is not None else {}
        if self.with_cfi is not None:
            meta["JIT kernels"] = f"{self.kernels} named, {self.with_cfi} with unwind info"
        elif self.kernels:
            meta["JIT kernels"] = f"{self.kernels} named from outside (perf map)"
        if self.unwind_seconds is not None:
            naming = f"naming {'+'.join(map(str, self.naming_ms))} ms in the process, " if self.naming_ms else ""
            meta["JIT work after the run"] = (
                f"{naming}unwind info {self.unwind_seconds:.2f} s, perf inject {self.inject_seconds:.2f} s"
            )
        return meta


@dataclass
class JitHook:
    """The `RecordHook` of `flamegraph record --jit`; `note` prints one line for the user."""

    directory: Path
    note: Callable[[str], None] = print
    hooked: bool = False  # prepare wrapped the command
    summary: JitSummary = field(default_factory=JitSummary)
    map_dirs: set[str] = field(default_factory=set)  # where the copies of the perf maps we wrote are

    def prepare(self, spec: RecordSpec) -> RecordSpec:
        self.directory = private_dir(self.directory)  # oneDNN, the hook and perf inject write there by name
        if spec.pid is not None:  # (its directory may hold the live process's marker: nothing is cleared)
            if not environment_has_dumps(spec.pid):
                self.note(
                    f"flamegraph: pid {spec.pid} was not started with DNNL_JIT_DUMP=1: its JIT kernels stay "
                    "unnamed (start it with DNNL_JIT_DUMP=1, or through `python -m flamegraph.jit.hook`)"
                )
            return spec
        clear_previous(self.directory)
        self.map_dirs.add(str(self.directory))  # the hook keeps its map's copy there
        wrapped = wrap_command(spec.command, self.directory)
        if wrapped is None:
            self.note("flamegraph: --jit works for Python commands (python SCRIPT, -m MODULE, -c CODE) or --pid")
            return spec
        check_dumps_cwd(spec.cwd or os.getcwd())
        self.hooked = True
        self.summary.command = shlex.join(user_command(spec.command))  # the user's, not the wrapped one
        return spec.replace(command=wrapped, env={**spec.env, "DNNL_JIT_DUMP": "1"})

    def finish(self, recording: Recording) -> Recording:
        if recording.spec.pid is not None:
            self.name_running(recording.spec.pid)
        started = time.perf_counter()
        completed = [c for c in session.complete(str(self.directory)) if c.kernels]
        unwind_seconds = time.perf_counter() - started
        failure = inject(recording.perf_data, self.directory) if completed else None
        inject_seconds = time.perf_counter() - started - unwind_seconds
        if failure:
            self.note(f"flamegraph: {failure}; JIT frames keep their perf-map names only")
        for c in completed:
            if c.located:
                self.note(f"flamegraph: pid {c.pid}: at exit, {c.located}")
            self.note(f"flamegraph: {c.summary()}" + ("" if failure else "; perf inject --jit done"))
            for (name, why), times in Counter(c.no_cfi).items():  # one line per kind, not per copy
                copies = f" ({times} kernels)" if times > 1 else ""
                self.note(f"flamegraph:   no unwind info for {name}{copies}: {why}")
        if completed:
            self.summary.kernels = sum(c.kernels for c in completed)
            self.summary.with_cfi = sum(c.with_cfi for c in completed)
            self.summary.naming_ms = [c.naming_ms for c in completed if c.naming_ms is not None]
            self.summary.unwind_seconds, self.summary.inject_seconds = unwind_seconds, inject_seconds
        recording.metadata.update(self.summary.metadata())
        return recording

    @property
    def unwound(self) -> bool:
        return self.summary.unwound

    def cleanup(self) -> None:
        """Once the run has read them (folds, exports): the /tmp/perf-PID.map files we wrote are removed
        (their copies stay in the JIT directory); a map we did not write is never touched."""
        for directory in sorted(self.map_dirs):
            jitmap.remove_perf_maps(directory)

    def name_running(self, pid: int) -> None:
        """--pid: find the kernels from outside while the process lives; perf map + kernels file."""
        try:
            result = jitmap.scan(pid)
        except OSError as err:
            self.note(
                f"flamegraph: cannot read the memory of pid {pid} to name its JIT kernels ({err.strerror}): run as root"
            )
            return
        if not result.kernels:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        self.map_dirs.add(str(self.directory))
        path = jitmap.save_perf_map(result.kernels, pid, str(self.directory))
        self.note(f"flamegraph: {result.summary()} -> {path}")
        self.summary.kernels = len(result.kernels)
        marker = marker_of(pid)
        if marker is not None:  # started through the hook: unwind info can be added too
            try:  # the process's directory, named by whoever started it: written in only if ours alone
                directory = private_dir(Path(marker).parent)
            except NotPrivate as refused:
                self.note(f"flamegraph: no unwind info for the JIT kernels of pid {pid}: {refused}")
                return
            session.write_kernels(str(directory), pid, result.kernels)
            self.directory = directory


def inject(perf_data: Path, directory: Path) -> str | None:
    """`perf inject --jit`, replacing perf.data (it then refers to DIR/jitted-<pid>-<n>.so); the error, if any."""
    out = fresh_name(directory, "injected-")  # perf opens it by name: in our directory, under a new name
    proc = subprocess.run(
        [find_perf(), "inject", "--jit", "-i", str(perf_data), "-o", str(out)], capture_output=True, text=True
    )
    if proc.returncode != 0 or not out.is_file():
        out.unlink(missing_ok=True)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        return f"perf inject --jit failed: {lines[-1] if lines else f'exit {proc.returncode}'}"
    os.replace(out, perf_data)
    return None
