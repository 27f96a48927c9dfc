"""JIT naming and unwinding as a `flamegraph record` hook: oneDNN's kernels (`--jit`) and the
Python functions of a Python 3.12+ command (`--python`, on by default for one).

prepare: PYTHONPERFSUPPORT=1 and our sitecustomize first on PYTHONPATH (Python: the command runs as given,
         each of its Python processes starts the support at start-up, `pysite`); with --jit (or -S/-E/-I,
         which read no site or no environment) the command runs through the in-process hook (`python [opts]
         .../flamegraph/frameworks/flamegraph_launcher.py --jit-dir DIR --python-dir DIR -- SCRIPT|-m MOD|-c
         CODE ARGS`; a `#!` script through the interpreter it names), DNNL_JIT_DUMP=1 for --jit.
         With --pid nothing can be changed: the process must have been started with DNNL_JIT_DUMP=1
         (and -X perf for its Python functions: said in one line).
finish:  --pid: locate the kernels from outside (root: /proc/PID/mem) and write the perf map;
         then, for every process that left a jitdump marker, write its records with generated CFI
         (`session.complete`), `perf inject --jit` them into perf.data (replaced in place) and name
         the Python functions in the jitted files (`session.name_python`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import stat
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...io import children
from ...io.perf import find_perf
from ...io.private import NotPrivate, check_dumps_cwd, fresh_name, private_dir
from ...record.command import python_target
from ...record.spec import Recording, RecordSpec
from . import anon, jitdump, jitmap, pysite, session, trampolines


def _module_file(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    return Path(spec.origin)


# named as a module, so it is found wherever the layout puts it
HOOK = _module_file("flamegraph.frameworks.flamegraph_launcher")
# The gemm kernels' frames are 12-16 KB: smaller copies cut their stacks. MXNet's naive engine on 3.12 (Python
# frames above the kernels) needs 48 KB for the MLP and more for deeper programs (docs/record.md, make stack-copy).
JIT_CALL_GRAPH = "dwarf,65528"
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
    python_functions: int = 0  # Python functions given unwind info (perf trampolines)
    chunks: int = 0  # a streamed recording: completed chunk by chunk (the times are their sums)

    @property
    def unwound(self) -> bool:
        """The JIT kernels were given unwind info: stacks through them can be walked."""
        return bool(self.with_cfi)

    def metadata(self) -> dict[str, str]:
        meta = {"command": self.command} if self.command is not None else {}
        if self.python_functions:
            meta["Python functions"] = f"{self.python_functions} with unwind info (perf trampolines)"
        if self.with_cfi is not None and (self.kernels or not self.python_functions):
            meta["JIT kernels"] = f"{self.kernels} named, {self.with_cfi} with unwind info"
        elif self.kernels:
            meta["JIT kernels"] = f"{self.kernels} named from outside (perf map)"
        if self.unwind_seconds is not None:
            naming = f"naming {'+'.join(map(str, self.naming_ms))} ms in the process, " if self.naming_ms else ""
            work = f"unwind info {self.unwind_seconds:.2f} s, perf inject {self.inject_seconds:.2f} s"
            if self.chunks:
                meta["JIT work as recorded"] = f"{naming}{work} over {self.chunks} chunks (locating included)"
            else:
                meta["JIT work after the run"] = f"{naming}{work}"
        return meta


PERF_SUPPORT = "PYTHONPERFSUPPORT"  # = -X perf (3.12+): the trampolines and /tmp/perf-<pid>.map


@dataclass
class JitHook:
    """The `RecordHook` of `flamegraph record --jit` and of Python frames; `note` prints one line."""

    directory: Path
    note: Callable[[str], None] = print
    dnnl: bool = True  # oneDNN's JIT kernels (--jit)
    python: bool | None = False  # Python frames: None = when the command runs Python 3.12+ (--python)
    hooked: bool = False  # prepare wrapped the command
    python_on: bool = False  # prepare turned the interpreter's perf support on
    summary: JitSummary = field(default_factory=JitSummary)
    map_dirs: set[str] = field(default_factory=set)  # where the copies of the perf maps we wrote are
    per_chunk: bool = False  # a streamed recording: chunks.ChunkJit completes each chunk, not `finish`
    keep_python_maps: bool = True  # the raw recording is kept (--perf-data): perf report reads the Python maps
    in_use: bool = False  # `directory` was made ours (a Python or --jit command, or --pid with --jit)
    python_maps_ours: bool = False  # the Python maps exist because we turned perf support on, not the user
    started: float = 0.0  # time.time() at prepare: a map older than that is not this run's
    unhooked: list[int] = field(default_factory=list)  # Python processes of the command our hook did not reach
    site: Path | None = None  # the sitecustomize's directory (pysite), removed by cleanup

    def prepare(self, spec: RecordSpec) -> RecordSpec:
        self.started = time.time()
        if spec.pid is not None:  # (its directory may hold the live process's marker: nothing is cleared)
            if self.dnnl:
                self.use_directory()  # the kernels found from outside: name_running
                if not environment_has_dumps(spec.pid):
                    self.note(
                        f"flamegraph: pid {spec.pid} was not started with DNNL_JIT_DUMP=1: its JIT kernels stay "
                        "unnamed (start it with DNNL_JIT_DUMP=1, or through "
                        "`python -m flamegraph.frameworks.flamegraph_launcher`)"
                    )
            if self.python is not False and (note := running_python_note(spec.pid)) is not None:
                self.note(note)
            return spec
        command, env, launch = spec.command, dict(spec.env), False
        if self.python is not False:
            command, launch, env = self.python_command(spec, env)
        wrapped = None
        if self.dnnl or launch:  # the launcher, which then starts the Python support in its own interpreter
            python_dir = ("--python-dir", str(self.directory)) if self.python_on else ()
            wrapped = hook_command(command, (*(("--jit-dir", str(self.directory)) * self.dnnl), *python_dir))
            if wrapped is None and self.dnnl:
                self.note("flamegraph: --jit ignored: it works for Python commands (python SCRIPT, -m MODULE, "
                          "-c CODE) or --pid")  # fmt: skip
            elif self.dnnl:
                env["DNNL_JIT_DUMP"] = "1"
        if wrapped is None and not self.python_on:
            return spec  # no directory: nothing would write there (a C program's PERF_DATA.jit/ is not made)
        self.use_directory()  # oneDNN, the hook and perf inject write there by name
        clear_previous(self.directory)
        if self.python_on:  # every Python process of the command, its own first, starts our support at start-up
            env, self.site = pysite.install(self.directory, HOOK, env)
        self.map_dirs.add(str(self.directory))  # the hook keeps its map's copy there
        if wrapped is not None and self.dnnl:
            check_dumps_cwd(spec.cwd or os.getcwd())
        self.hooked = True
        self.summary.command = shlex.join(spec.command)  # the user's, not the wrapped one
        return spec.replace(command=wrapped or command, env=env)

    def use_directory(self) -> None:
        """The directory made ours (created, or checked: else NotPrivate), only when something writes there."""
        self.directory = private_dir(self.directory)
        self.in_use = True

    def python_command(
        self, spec: RecordSpec, env: dict[str, str]
    ) -> tuple[tuple[str, ...], bool, dict[str, str]]:
        """(the command to run, whether our launcher must start the Python support, its environment), with one
        line saying what was done. The command runs as given (a `#!` script too): the sitecustomize of `pysite`
        starts the support inside each of its Python processes, its own first. Only an interpreter that reads
        no site or no environment (-S, -E, -I) goes through the launcher, given -X perf where it ignores
        PYTHONPERFSUPPORT; -X perf_jit becomes -X perf."""
        everything = {**os.environ, **env}
        target = python_target(spec.command, everything, spec.cwd)
        if target is None:
            if self.python:
                self.note("flamegraph: --python: the command does not run a Python interpreter; no Python frames")
            return spec.command, False, env
        if target.version < (3, 12):
            if self.python:
                self.note(f"flamegraph: --python: {target.interpreter} is Python {target.release}; Python frames "
                          "need 3.12+")  # fmt: skip
            return spec.command, False, env
        letters, x_options, at = interpreter_options(target.command)
        script = target.command[at] if at < len(target.command) and target.command[at] not in PROGRAM_FLAGS else None
        if script is not None and not utf8_path(os.path.join(spec.cwd or os.getcwd(), script)):
            shown = os.fsencode(script).decode("utf-8", "backslashreplace")
            self.note(f"flamegraph: {shown} is not a UTF-8 path, which CPython's perf map cannot write (the program "
                      "would fail with perf support on): no Python frames")  # fmt: skip
            return spec.command, False, env
        command, how = target.command, f"{PERF_SUPPORT}=1"  # (a plain `#!` script: run by its interpreter)
        if "perf_jit" in x_options or everything.get(PERF_JIT, "").strip() not in ("", "0"):
            self.note("flamegraph: -X perf_jit replaced by -X perf: CPython's own jitdump would leave its functions "
                      "unnamed here (and a /tmp/jit-PID.dump behind); ours names and unwinds them")  # fmt: skip
            command = tuple("perf" if a == "perf_jit" else "-Xperf" if a == "-Xperf_jit" else a for a in command)
            env[PERF_JIT] = "0"  # (it would win over PYTHONPERFSUPPORT=1)
        launch = bool(letters & {"S", "E", "I"})  # no site: our sitecustomize unread; no environment: nor the variable
        if letters & {"E", "I"}:
            command, how = (command[0], "-X", "perf", *command[1:]), "-X perf"
        if launch and hook_command(command, ("--python-dir", "-")) is None:
            self.note(f"flamegraph: {target.interpreter} reads its program from stdin or runs interactively, and "
                      "no site or environment (-S, -E, -I): no Python frames")  # fmt: skip
            return spec.command, False, env
        self.python_on = True
        env[PERF_SUPPORT] = "1"
        self.python_maps_ours = not asked_for_perf_support(target.command, everything)
        self.note(f"flamegraph: Python {target.release}: perf support on ({how}), its functions are "
                  "frames (--no-python: off)")  # fmt: skip
        if command == target.command and not launch and not self.dnnl:
            command = spec.command  # nothing to change: the command exactly as given
        return command, launch, env

    def finish(self, recording: Recording) -> Recording:
        if self.per_chunk or not self.in_use:  # per chunk: chunks.py completes each before it is folded
            return recording
        if recording.spec.pid is not None and self.dnnl:  # oneDNN kernels only: Python frames need -X perf
            self.name_running(recording.spec.pid)
        started = time.perf_counter()
        pythons = session.python_pids(str(self.directory))
        processes = trampolines.read_processes(find_perf(), str(recording.perf_data)) if pythons else None
        arenas = processes.arenas if processes is not None else None
        completed = [c for c in session.complete(str(self.directory), arenas) if c.kernels or c.python_functions]
        unwind_seconds = time.perf_counter() - started
        failure = inject(recording.perf_data, self.directory, loaded=session.loaded(completed)) if completed else None
        unnamed = session.name_python(str(self.directory), completed) if completed and not failure else 0
        inject_seconds = time.perf_counter() - started - unwind_seconds
        if failure:
            self.note(f"flamegraph: {failure}; JIT frames keep their perf-map names only")
        if unnamed:
            self.note(f"flamegraph: {unnamed} runs of Python functions could not be named in their jitted files")
        self.report(completed, failure is None, unwind_seconds, inject_seconds, processes)
        if processes is not None:
            self.say_unhooked(processes)
        recording.metadata.update(self.summary.metadata())
        return recording

    def say_unhooked(self, processes: trampolines.Processes) -> None:
        """One line for the Python processes of the command our hook did not reach (kept for `cleanup`)."""
        if not self.in_use or not self.python_on or not processes.forked:
            return
        hooked = set(session.python_pids(str(self.directory)))
        self.unhooked = unhooked_pythons(processes, hooked, self.started)
        if self.unhooked:
            self.note(unhooked_line(self.unhooked))

    def report(
        self,
        completed: list[session.Completed],
        injected: bool,
        unwind: float,
        inject: float,
        processes: trampolines.Processes | None = None,
    ) -> None:
        """What was completed, said per process (one line per kind of kernel left without unwind info; the
        Python processes the command started, one line for them all), and kept in the summary."""
        done = "; perf inject --jit done" if injected else ""
        pids = {c.pid for c in completed}
        forked = processes.forked if processes is not None else {}
        children = [c for c in completed if forked.get(c.pid) in pids and not c.kernels and c.python_functions]
        for c in completed:
            if c in children:
                continue
            if c.located:
                self.note(f"flamegraph: pid {c.pid}: {c.located}")
            self.note(f"flamegraph: {c.summary()}{done}")
            for (name, why), times in Counter(c.no_cfi).items():  # one line per kind, not per copy
                copies = f" ({times} kernels)" if times > 1 else ""
                self.note(f"flamegraph:   no unwind info for {name}{copies}: {why}")
        if children:  # (after the command's own: one line for them all)
            functions = sum(c.python_functions for c in children)
            self.note(f"flamegraph: {plural(len(children), 'Python process')} it started ({pid_list(children)}): "
                      f"{functions} Python functions with unwind info ({sum(c.seconds for c in children):.2f} s)"
                      f"{done}")  # fmt: skip
        if completed:
            self.summary.kernels = sum(c.kernels for c in completed)
            self.summary.with_cfi = sum(c.with_cfi for c in completed)
            self.summary.naming_ms = [c.naming_ms for c in completed if c.naming_ms is not None]
            self.summary.python_functions = sum(c.python_functions for c in completed)
            self.summary.unwind_seconds, self.summary.inject_seconds = unwind, inject

    @property
    def unwound(self) -> bool:
        return self.summary.unwound

    def cleanup(self) -> None:
        """Once the run has read them (folds, exports): the /tmp/perf-PID.map files we wrote are removed
        (their copies stay in the JIT directory), and so are those Python wrote because we turned its perf
        support on, unless the raw recording is kept (`perf report` reads them). A map we did not cause
        (the user's own PYTHONPERFSUPPORT or -X perf, another process's) is never touched."""
        for directory in sorted(self.map_dirs):
            jitmap.remove_perf_maps(directory)
        if self.site is not None:  # (under our cache: nobody else can create it again for a stale PYTHONPATH)
            shutil.rmtree(self.site, ignore_errors=True)
            self.site = None
        if self.python_maps_ours and not self.keep_python_maps and self.in_use:
            owners = set()
            for pid in session.python_pids(str(self.directory)):
                try:  # the launcher wrote the trampoline as the process's user: the map's owner
                    owner = os.lstat(jitdump.trampoline_path(str(self.directory), pid)).st_uid
                except OSError:
                    continue
                owners.add(owner)
                jitmap.remove_process_map(pid, owner, self.started)
            if len(owners) == 1:  # the command's processes our hook did not reach: theirs are ours too
                for pid in self.unhooked:
                    jitmap.remove_process_map(pid, next(iter(owners)), self.started)

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


PERF_JIT = "PYTHON_PERF_JIT_SUPPORT"  # = -X perf_jit (3.13+): CPython's own jitdump
PROGRAM_FLAGS = ("-", "-m", "-c")


def interpreter_options(command: tuple[str, ...]) -> tuple[set[str], list[str], int]:
    """`python [options] PROGRAM...` -> (its one-letter flags, -X options, the index where its program begins)."""
    letters: set[str] = set()
    x_options: list[str] = []
    i = 1
    while i < len(command) and command[i].startswith("-") and command[i] not in PROGRAM_FLAGS:
        arg = command[i]
        if arg in OPTION_WITH_VALUE:
            if arg == "-X" and i + 1 < len(command):
                x_options.append(command[i + 1])
            i += 2
            continue
        if arg.startswith("-X"):
            x_options.append(arg[2:])
        elif not arg.startswith(("--", "-W")):
            letters.update(arg[1:])  # -IS, -uE
        i += 1
    return letters, x_options, i


def utf8_path(path: str) -> bool:
    """CPython's perf map writes each function's file name as strict UTF-8: a path that is not fails it."""
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def unhooked_pythons(processes: trampolines.Processes, hooked: set[int], since: float) -> list[int]:
    """The processes the command started that ran Python with perf support (a /tmp/perf-PID.map of Python
    functions written during the run) but without our hook (no trampoline bytes: `python -S`, an environment
    without our PYTHONPATH, a failed at-fork hook): their functions are named, not unwound."""
    found = []
    for pid in sorted(processes.forked.keys() - hooked):
        path = jitmap.perf_map_path(pid)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_mtime < since - 1:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                head = f.read(1 << 16)
        except OSError:
            continue
        if b" py::" in head:
            found.append(pid)
    return found


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("es" if n != 1 and noun.endswith("s") else "s" if n != 1 else "")


def pid_list(items: list[int] | list[session.Completed]) -> str:
    pids = [item if isinstance(item, int) else item.pid for item in items]
    listed = ", ".join(map(str, pids[:8])) + (", ..." if len(pids) > 8 else "")
    return f"pid{'s' if len(pids) != 1 else ''} {listed}"


def unhooked_line(pids: list[int]) -> str:
    return (
        f"flamegraph: {plural(len(pids), 'Python process')} of the command ran without our start-up hook "
        f"({pid_list(pids)}: python -S, or an environment without our PYTHONPATH): their Python functions are "
        "named, not unwound, so their stacks stop at their first Python frame"
    )


def asked_for_perf_support(command: tuple[str, ...], env: Mapping[str, str]) -> bool:
    """The user turned Python's perf support on (`PYTHONPERFSUPPORT` non-zero, `-X perf`): its maps are theirs."""
    if env.get(PERF_SUPPORT, "").strip() not in ("", "0"):
        return True
    previous = ""
    for arg in command[1:]:
        if arg in ("-c", "-m") or (not arg.startswith("-") and previous not in OPTION_WITH_VALUE):
            return False  # the program begins: what follows is its own
        if arg == "-Xperf" or (previous == "-X" and arg == "perf"):
            return True
        previous = arg
    return False


def running_python_note(pid: int) -> str | None:
    """--pid of a Python 3.12+ process: its perf support can only be turned on from inside; one line."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    target = python_target((exe,), {}, None)
    if target is None or target.version < (3, 12):
        return None
    return (
        f"flamegraph: pid {pid} is Python {target.release}: perf cannot turn its perf support on from outside; "
        f"for its Python functions start it with `python -X perf` (or {PERF_SUPPORT}=1) and record it with "
        "`flamegraph record -- python ...`"
    )


def inject(
    perf_data: Path, directory: Path, scratch: Path | None = None, loaded: anon.Ranges | None = None
) -> str | None:
    """`perf inject --jit`, replacing perf.data (it then refers to DIR/jitted-<pid>-<n>.so); the error, if any.
    Its output is written in `scratch` (default: DIR), a private directory, before it replaces perf.data.
    The anonymous executable mappings that hold none of the `loaded` code stay in it (anon.py)."""
    out = fresh_name(scratch or directory, "injected-")  # perf opens it by name: in our directory, under a new name
    # perf inject copies every jitted .so into its build-id cache (~/.debug), and perf script prefers
    # that copy: the Python functions named in the files afterwards (session.name_python) would not be
    # seen, and ~/.debug would grow by a file per kernel per run. A cache of our own, inside DIR.
    # (perf script never reads it: it is removed once inject is done.)
    cache = private_dir(directory / ".debug")
    kept = anon.keep(str(perf_data), loaded or {})
    injected = False
    try:
        proc = children.run(
            [find_perf(), "--buildid-dir", str(cache), "inject", "--jit", "-i", str(perf_data), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        injected = proc.returncode == 0 and out.is_file()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if kept:  # renamed back where perf script will read them; a failed (or interrupted) inject's input too
            anon.restore(str(out if injected else perf_data))
    if injected:
        os.replace(out, perf_data)
        return None
    out.unlink(missing_ok=True)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return f"perf inject --jit failed: {lines[-1] if lines else f'exit {proc.returncode}'}"
